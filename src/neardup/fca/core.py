"""Near-duplicate clusters by Formal Concept Analysis: maximal sets of documents whose min-hash
images share at least K hashes.

Each document is shingled (``length`` units taken every ``offset`` units) and hashed; its
*image* is the ``image_size`` smallest hashes (a bottom-N MinHash sketch: for two documents the
share of common values estimates their Jaccard similarity). The inverted table maps each hash to
the documents whose image holds it. In FCA terms the hashes are the objects and the documents the
attributes; a cluster of *k-similar* documents is a set of documents whose images share at least
``min_common`` hashes, and the maximal such sets are the maximal frequent itemsets of the
inverted table. They are mined by neardup's own compiled kernel
(:func:`~neardup.fca.itemsets.maximal_itemsets`): a depth-first maximal itemset miner in the
manner of GenMax and MAFIA (items ranked by support, LCM's occurrence delivery over the
transactions, parent equivalence pruning, MAFIA's lookahead on the whole candidate tail, and
maximality checked against the maximal sets found so far). It returns the same sets as FPmax
(pyfim's FP-growth with target ``m``, which neardup used before and its tests still compare
with) and needs no compiler at install time.

Only hashes held by two documents or more can support a cluster of two, so the rest of the
inverted table is dropped before mining, and identical transactions are passed once with their
multiplicity: on near-duplicate corpora this shrinks the input by orders of magnitude.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._records import record
from ..config import NormalizeConfig, ShingleConfig
from ..errors import ConfigError
from ..text.normalize import normalize
from ..text.shingle import Shingles, shingle_batch
from ..validate import check_int
from .itemsets import maximal_itemsets


@dataclass
class FCACluster:
    """Documents (rows) whose images share ``common`` hashes; ``common >= min_common``."""

    members: tuple[int, ...]
    common: int


@record
class FCAResult:
    """Clusters of k-similar documents for one ``min_common`` and what it took."""

    min_common: int
    clusters: list[FCACluster]
    seconds: float
    stats: dict[str, Any] = field(default_factory=dict)

    def pairs(self) -> set[tuple[int, int]]:
        """Every pair of rows that share a cluster (``a < b``)."""
        out: set[tuple[int, int]] = set()
        for c in self.clusters:
            m = sorted(c.members)
            out.update((m[i], m[j]) for i in range(len(m)) for j in range(i + 1, len(m)))
        return out


def document_images(
    texts: Sequence[str],
    length: int = 5,
    offset: int = 1,
    image_size: int = 256,
    kind: str = "word",
    normalize_cfg: NormalizeConfig | None = None,
) -> Shingles:
    """Each document's ``image_size`` smallest shingle hashes, sorted: CSR ``Shingles``."""
    for name, v in (("length", length), ("offset", offset), ("image_size", image_size)):
        check_int(name, v, 1)
    cfg = ShingleConfig(kind=kind, k=length, offset=offset)
    sh = shingle_batch(normalize(texts, normalize_cfg or NormalizeConfig()), cfg)
    sizes = np.diff(sh.offsets)
    take = np.minimum(sizes, image_size)
    off = np.zeros(len(take) + 1, np.int64)
    np.cumsum(take, out=off[1:])
    # positions of the first take[i] hashes of each document (already sorted ascending)
    starts = np.repeat(sh.offsets[:-1] - off[:-1], take)
    idx = np.arange(off[-1], dtype=np.int64) + starts
    return Shingles(hashes=sh.hashes[idx], offsets=off)


def inverted_table(
    images: Shingles, max_doc_freq: int | None = None
) -> tuple[dict[tuple[int, ...], int], dict[str, int]]:
    """Transactions for the itemset miner: for each hash held by two documents or more (and at most
    ``max_doc_freq``, if given), the sorted tuple of those documents; identical transactions are
    merged into one with their count. Returns the transactions and counts of what was dropped."""
    n = len(images.offsets) - 1
    sizes = np.diff(images.offsets)
    docs = np.repeat(np.arange(n, dtype=np.int64), sizes)
    order = np.argsort(images.hashes)
    h = images.hashes[order]
    d = docs[order]
    if len(h) == 0:
        return {}, {"hashes": 0, "shared_hashes": 0, "capped_hashes": 0, "transactions": 0}
    cut = np.flatnonzero(h[1:] != h[:-1]) + 1
    starts = np.concatenate([[0], cut])
    lengths = np.diff(np.concatenate([starts, [len(h)]]))
    shared = lengths >= 2
    capped = np.zeros_like(shared)
    if max_doc_freq is not None:
        capped = lengths > max_doc_freq
        shared &= ~capped
    # Runs of one length at a time: documents sorted within each run, then identical runs
    # (transactions) made neighbours and counted.
    tracts: dict[tuple[int, ...], int] = {}
    runs = np.flatnonzero(shared)
    runs = runs[np.argsort(lengths[runs], kind="stable")]
    for group in np.split(runs, np.flatnonzero(np.diff(lengths[runs])) + 1):
        if not len(group):
            continue
        rows = d[starts[group][:, None] + np.arange(lengths[group[0]])]
        rows.sort(axis=1)
        rows = rows[np.lexsort(rows.T[::-1])]
        new = np.ones(len(rows), bool)
        new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        at = np.flatnonzero(new)
        counts = np.diff(np.append(at, len(rows)))
        tracts.update(zip(map(tuple, rows[at].tolist()), counts.tolist()))
    return tracts, {
        "hashes": int(len(starts)),
        "shared_hashes": int(shared.sum()),
        "capped_hashes": int(capped.sum()),
        "transactions": len(tracts),
    }


def fca_clusters(
    images: Shingles,
    min_common: int,
    max_doc_freq: int | None = None,
    tracts: dict[tuple[int, ...], int] | None = None,
) -> FCAResult:
    """Maximal sets of two documents or more whose images share at least ``min_common`` hashes,
    each with its number of common hashes (the maximal frequent itemsets of the inverted table,
    by :func:`~neardup.fca.itemsets.maximal_itemsets`)."""
    check_int("min_common", min_common, 1)
    t0 = time.perf_counter()
    stats: dict[str, Any] = {}
    if tracts is None:
        tracts, stats = inverted_table(images, max_doc_freq)
    clusters = [
        FCACluster(members, support) for members, support in maximal_itemsets(tracts, min_common)
    ]
    clusters.sort(key=lambda c: (-c.common, c.members))
    return FCAResult(
        min_common, clusters, time.perf_counter() - t0, {**stats, "clusters": len(clusters)}
    )


def default_min_common(image_size: int, similarity: float = 0.8) -> int:
    """The ``min_common`` at which two documents of Jaccard ``similarity`` (default 0.8, the
    default threshold of ``neardup dedup``) share a cluster with probability about 0.95.

    Two sets of Jaccard J and about the same size have a share 2J / (1 + J) of each in common
    (their Dice coefficient), so of two images of ``image_size`` N hashes about N 2J / (1 + J)
    are common; their count spreads about as a binomial of N draws. K is that mean less 1.645
    standard deviations, rounded down: 52 for N = 64, 107 for 128, 219 for 256, 443 for 512."""
    check_int("image_size", image_size, 1)
    d = 2 * similarity / (1 + similarity)
    k = math.floor(image_size * d - 1.645 * math.sqrt(image_size * d * (1 - d)))
    return max(1, min(image_size, k))


def fca(
    texts: Sequence[str],
    min_common: int | Sequence[int] | None = None,
    *,
    length: int = 5,
    offset: int = 1,
    image_size: int = 256,
    kind: str = "word",
    max_doc_freq: int | None = None,
) -> list[FCAResult]:
    """The FCA method end to end: images, inverted table, maximal itemsets for each
    ``min_common``.
    The images and the table are built once; each result's ``seconds`` is its mining time and
    ``stats["prepare_seconds"]`` the time to build them. ``min_common`` None:
    :func:`default_min_common` of the images' median size (``image_size``, or fewer hashes
    where the documents have fewer shingles: short texts)."""
    ks = (
        []
        if min_common is None
        else [min_common]
        if isinstance(min_common, int)
        else list(min_common)
    )
    if min_common is not None and not ks:
        raise ConfigError("min_common: give at least one value")
    for k in ks:
        check_int(
            "min_common", k, 1, image_size, allowed=f"an integer from 1 to image_size={image_size}"
        )
    t0 = time.perf_counter()
    images = document_images(texts, length, offset, image_size, kind)
    if min_common is None:
        sizes = np.diff(images.offsets)
        ks = [default_min_common(max(1, int(np.median(sizes))) if len(sizes) else image_size)]
    tracts, stats = inverted_table(images, max_doc_freq)
    prep = time.perf_counter() - t0
    out = []
    for k in ks:
        r = fca_clusters(images, k, tracts=tracts)
        r.stats = {**stats, "clusters": len(r.clusters), "prepare_seconds": round(prep, 4)}
        out.append(r)
    return out
