"""MinHash signatures: ``uint32[n, num_perm]``, one row per document.

Two schemes, both with collision probability equal to the Jaccard similarity:

- ``"oph"`` (default): one-permutation hashing with optimal densification (Shrivastava, ICML
  2017). Each shingle is hashed once; the hash picks one of ``num_perm`` bins and the bin keeps
  its minimum. Empty bins borrow the value of a non-empty bin found by a bin-specific probe
  sequence shared by all documents. O(n + k log k) per document instead of O(n k).
- ``"classic"``: k independent universal hashes ``(a*x + b) mod (2**61 - 1)`` (the
  textbook scheme, datasketch's too), the minimum of each over the document's shingles. O(n k).

The stored value is the low 32 bits of the winning hash: two different minima collide with
probability 2**-32. An empty document's signature is all ``EMPTY`` (0xFFFFFFFF); neardup keeps
empty documents out of LSH.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._arrays import check_segments
from ._kernels import shingle as _k  # type: ignore[attr-defined]  # compiled: no stubs
from ._threads import parallel
from .config import ShingleConfig, SketchConfig
from .text.normalize import NormalizedBatch
from .text.shingle import Shingles, kind_code, shingle_batch, shingle_counts, word_batch

EMPTY = np.uint32(0xFFFFFFFF)
MERSENNE61 = (1 << 61) - 1


# The words of the default seed (SketchConfig.seed = 1), as _seed_words computes them (a test
# checks it): a run with the default seed then does not import numpy.random (15 ms of start-up).
_KNOWN_SEED_WORDS = {1: (0x41835EF9BC91727F, 0x79A8CB5DE0A95433)}


def _seed_words(seed: int) -> tuple[int, int]:
    """Two odd 64-bit words derived from ``seed``: the OPH bin and probe hash seeds."""
    known = _KNOWN_SEED_WORDS.get(seed)
    if known is not None:
        return known
    return _draw_seed_words(seed)


def _draw_seed_words(seed: int) -> tuple[int, int]:
    rng = np.random.Generator(np.random.PCG64(seed))
    w = rng.integers(0, 2**63, size=2, dtype=np.int64)
    return int(w[0]) | 1, int(w[1]) | 1


def classic_params(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(a, b)`` coefficients of the classic scheme: ``uint64[num_perm]`` each, in [1, p)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    b = rng.integers(1, MERSENNE61, size=num_perm, dtype=np.uint64)
    return a, b


def sketch(shingles: Shingles, cfg: SketchConfig | None = None) -> np.ndarray:
    """MinHash signatures of each document's shingle set: ``uint32[n, num_perm]``.

    Same ``cfg`` gives the same signature for the same shingle set, whatever the batch.
    """
    cfg = cfg or SketchConfig()
    hashes = np.ascontiguousarray(shingles.hashes, dtype=np.uint64)
    offsets = np.ascontiguousarray(shingles.offsets, dtype=np.int64)
    check_segments(len(hashes), offsets[:-1], offsets[1:], "shingle sets")
    n = len(offsets) - 1
    out = np.empty((n, cfg.num_perm), np.uint32)
    sizes = np.diff(offsets)
    if cfg.scheme == "classic":
        a, b = classic_params(cfg.num_perm, cfg.seed)
        parallel(
            lambda lo, hi: _k.classic_sketch(hashes, offsets, a, b, out, lo, hi),
            n,
            sizes * cfg.num_perm + 1,
            min_weight=1 << 18,
        )
    else:
        s_bin, s_probe = _seed_words(cfg.seed)
        parallel(
            lambda lo, hi: _k.oph_sketch(hashes, offsets, s_bin, s_probe, out, lo, hi),
            n,
            sizes + cfg.num_perm,
            min_weight=1 << 18,
        )
    return out


def estimate_jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> np.ndarray | float:
    """Fraction of equal signature values: the MinHash estimate of Jaccard similarity.

    Works on two rows (``uint32[k]``) or two row-aligned matrices (``uint32[m, k]``).
    """
    eq = np.asarray(sig_a) == np.asarray(sig_b)
    return eq.mean(axis=-1)


def shingle_sketch(
    batch: NormalizedBatch,
    shingle_cfg: ShingleConfig | None = None,
    cfg: SketchConfig | None = None,
    docs: np.ndarray | None = None,
    h32_out: Callable[[int], np.ndarray] | None = None,
    rows_done: Callable[[np.ndarray, int, int], object] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Shingle and sketch the documents ``docs`` (default all) of a normalised batch in one pass.

    Returns ``(signatures, h32, offsets)``: the same signatures as
    ``sketch(shingle_batch(batch, shingle_cfg, docs), cfg)``, and the high 32 bits of each
    document's shingle hashes (unsorted, with repeats) for exact verification. ``h32_out(m)``,
    if given, supplies the ``uint32[m]`` array the fingerprints are written to (the pipeline
    passes the free end of its index, so they are written once, by the parallel kernel).
    ``rows_done(signatures, lo, hi)``, if given, is called by the thread that wrote the rows
    ``[lo, hi)``, right after (the pipeline computes their LSH band keys there, in parallel
    and while the rows are in the processor's cache). With the classic scheme it is called
    once, for all rows.
    """
    shingle_cfg = shingle_cfg or ShingleConfig()
    cfg = cfg or SketchConfig()
    if docs is None:
        docs = np.arange(len(batch), dtype=np.int64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    if cfg.scheme == "classic":
        sh = shingle_batch(batch, shingle_cfg, docs)
        h32 = (sh.hashes >> np.uint64(32)).astype(np.uint32)
        if h32_out is not None:
            out = h32_out(len(h32))
            out[:] = h32
            h32 = out
        sig = sketch(sh, cfg)
        if rows_done is not None:
            rows_done(sig, 0, len(sig))
        return sig, h32, sh.offsets
    s_bin, s_probe = _seed_words(cfg.seed)
    batch = word_batch(batch, shingle_cfg)
    units, counts = shingle_counts(batch, docs, shingle_cfg)
    out_off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(counts, out=out_off[1:])
    total = int(out_off[-1])
    h32 = np.empty(total, np.uint32) if h32_out is None else h32_out(total)
    if h32.dtype != np.uint32 or h32.shape != (total,):
        raise ValueError(f"h32_out({total}) must return a uint32 array of that length")
    sig = np.empty((len(docs), cfg.num_perm), np.uint32)
    args = (
        batch.data,
        batch.offsets,
        docs,
        kind_code(shingle_cfg),
        shingle_cfg.k,
        shingle_cfg.offset,
        s_bin,
        s_probe,
        units,
        out_off,
        h32,
        sig,
    )

    def part(lo: int, hi: int) -> None:
        _k.shingle_oph(*args, lo, hi)
        if rows_done is not None:
            rows_done(sig, lo, hi)

    parallel(part, len(docs), counts + cfg.num_perm, min_weight=1 << 16)
    return sig, h32, out_off
