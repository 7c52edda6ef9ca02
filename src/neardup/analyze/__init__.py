"""Parameter analyses: how the shingle, MinHash and LSH parameters trade recall, candidates and
duplicates found.

Each function returns an :class:`Analysis` of plain data (a table, headline numbers, arrays for
the figure); :func:`write_analysis` writes it as CSV, markdown and PNG.

- :func:`scurve`: P(candidate) against Jaccard for several bands x rows (closed form).
- :func:`params`: neardup's choice of bands x rows against datasketch's, per threshold.
- :func:`recall`: LSH candidates against brute-force Jaccard, per similarity bin.
- :func:`bands`: candidate pairs against the number of bands of one signature.
- :func:`grid`: verified pairs and documents with a near-duplicate, per threshold and shingle
  size.
- :func:`distribution`: histogram of the Jaccard similarity of candidates and verified pairs.
"""

from .corpus import (
    Corpus,
    all_pairs_jaccard,
    bands,
    distribution,
    expand_result_pairs,
    grid,
    load_corpus,
    prepare,
    recall,
    sample_corpus,
)
from .curves import (
    datasketch_optimal_param,
    lsh_areas,
    params,
    parse_bands_rows,
    scurve,
    threshold_approx,
)
from .output import to_markdown, write_analysis
from .result import Analysis

__all__ = [
    "Analysis",
    "Corpus",
    "scurve",
    "params",
    "recall",
    "bands",
    "grid",
    "distribution",
    "datasketch_optimal_param",
    "lsh_areas",
    "threshold_approx",
    "parse_bands_rows",
    "load_corpus",
    "sample_corpus",
    "prepare",
    "all_pairs_jaccard",
    "expand_result_pairs",
    "write_analysis",
    "to_markdown",
]
