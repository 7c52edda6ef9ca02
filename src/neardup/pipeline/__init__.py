"""The pipeline: every step from ingest to the summary, one function each, which the local
engine, every step of the Dask engine and the online index call. The engines only orchestrate
(where the data is, which thread or task runs a step, what is kept between steps).

=================  =====================================================================
step               functions
=================  =====================================================================
ingest             :func:`ingest_chunk` (= :func:`fingerprint_chunk` + :func:`sketch_chunk`);
                   :func:`sketch_texts` (what the online index stores of a text)
candidates         :func:`find_candidates` (:func:`find_candidates_by_band`: keys read back
                   a band at a time), :func:`run_candidates`
verification       :func:`verify_pairs` with a measure (:class:`ShingleSets`,
                   :class:`ShingleBags`, :class:`ShingleRanges` read back in batches,
                   :class:`Signatures`)
clusters           :func:`cluster_texts`, :func:`decide_in_order`,
                   :func:`documents_of_texts`
pair expansion     :func:`expand_pairs` (:func:`within_pairs`, :func:`cross_pairs`)
summary            :class:`RunSummary`, reported to a :class:`Progress`
=================  =====================================================================

The algorithms themselves are the kernels' (:mod:`neardup.lsh`, :mod:`neardup.verify`,
:mod:`neardup.cluster`, :mod:`neardup.expand`); the engines and the index reach them only
through here.
"""

from __future__ import annotations

from .candidates import CandidateStats, find_candidates, find_candidates_by_band, run_candidates
from .clusters import (
    cluster_texts,
    decide_in_order,
    documents_of_texts,
    kept_rows,
    member_similarities,
    preference_rank,
)
from .ingest import (
    Fingerprinted,
    Sketched,
    TextSketches,
    fingerprint_chunk,
    gather_sets,
    ingest_chunk,
    sketch_chunk,
    sketch_texts,
)
from .pairs import PairCounts, cross_pairs, expand_pairs, ranges, within_pairs
from .summary import NoProgress, Progress, RunSummary
from .verification import (
    Measure,
    ShingleBags,
    ShingleRanges,
    ShingleSets,
    Signatures,
    sort_sets,
    verify_pairs,
)

__all__ = [
    "Fingerprinted",
    "Sketched",
    "fingerprint_chunk",
    "sketch_chunk",
    "ingest_chunk",
    "TextSketches",
    "sketch_texts",
    "gather_sets",
    "CandidateStats",
    "find_candidates",
    "find_candidates_by_band",
    "run_candidates",
    "Measure",
    "ShingleSets",
    "ShingleBags",
    "ShingleRanges",
    "Signatures",
    "sort_sets",
    "verify_pairs",
    "preference_rank",
    "cluster_texts",
    "member_similarities",
    "decide_in_order",
    "kept_rows",
    "documents_of_texts",
    "PairCounts",
    "expand_pairs",
    "within_pairs",
    "cross_pairs",
    "ranges",
    "RunSummary",
    "Progress",
    "NoProgress",
]
