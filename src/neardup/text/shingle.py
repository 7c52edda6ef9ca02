"""Shingling in compiled code: code points in, sorted unique 64-bit shingle hashes out.

Word shingles: tokens are maximal runs of non-space code points of the normalised text (after
normalisation, whitespace is single spaces); a shingle is ``k`` consecutive tokens, and
consecutive shingles start ``offset`` tokens apart. Character shingles: ``k`` consecutive code
points, ``offset`` apart. A non-empty document with fewer than ``k`` tokens (or characters) gets
one shingle: all of it. An empty document gets none.

Hashes: each token is hashed with FNV-1a over its code points and finalised with MurmurHash3's
fmix64; a word shingle folds its token hashes in order; a character shingle hashes its code
points the same way. Output is :class:`Shingles`, a CSR layout with each document's hashes sorted
and unique.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .._hash import FNV_OFFSET, FNV_PRIME, GOLDEN, U64, fmix64
from ..config import NormalizeConfig, ShingleConfig
from .normalize import NormalizedBatch, normalize

SPACE = np.uint32(32)
WORD, CHAR = 0, 1


@dataclass(frozen=True)
class Shingles:
    """Shingle hash sets of ``n`` documents in CSR layout.

    ``hashes``: ``uint64[total]`` (or ``uint32`` once compacted for verification), sorted and
    unique within each document; ``offsets``: ``int64[n+1]``; document ``i`` owns
    ``hashes[offsets[i]:offsets[i+1]]``.
    """

    hashes: np.ndarray
    offsets: np.ndarray

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> np.ndarray:
        return self.hashes[self.offsets[i]:self.offsets[i + 1]]

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


@njit(cache=True, inline="always")
def _hash_run(cps, a, b):
    h = FNV_OFFSET
    for i in range(a, b):
        h = (h ^ U64(cps[i])) * FNV_PRIME
    return fmix64(h ^ U64(b - a))


@njit(cache=True)
def _count_tokens(cps, a, b):
    n = 0
    inword = False
    for i in range(a, b):
        if cps[i] == SPACE:
            inword = False
        elif not inword:
            inword = True
            n += 1
    return n


@njit(cache=True, inline="always")
def _n_shingles(units, k, offset):
    if units == 0:
        return 0
    if units < k:
        return 1
    return (units - k) // offset + 1


@njit(cache=True)
def _doc_shingles(cps, a, b, kind, k, offset, out, pos):
    """Write the (unsorted) shingle hashes of ``cps[a:b]`` into ``out[pos:]``; return the count."""
    if kind == CHAR:
        n = b - a
        m = _n_shingles(n, k, offset)
        if m == 1 and n < k:
            out[pos] = _hash_run(cps, a, b)
            return 1
        for j in range(m):
            s = a + j * offset
            out[pos + j] = _hash_run(cps, s, s + k)
        return m
    ntok = _count_tokens(cps, a, b)
    m = _n_shingles(ntok, k, offset)
    if m == 0:
        return 0
    tok = np.empty(ntok, np.uint64)
    t = 0
    start = -1
    for i in range(a, b + 1):
        if i == b or cps[i] == SPACE:
            if start >= 0:
                tok[t] = _hash_run(cps, start, i)
                t += 1
                start = -1
        elif start < 0:
            start = i
    width = k if ntok >= k else ntok
    for j in range(m):
        s = j * offset
        h = GOLDEN
        for q in range(s, s + width):
            h = (h ^ tok[q]) * FNV_PRIME
        out[pos + j] = fmix64(h ^ U64(width))
    return m


@njit(cache=True, parallel=True, nogil=True)
def _shingle_kernel(cps, offsets, docs, kind, k, offset):
    n = len(docs)
    counts = np.zeros(n, np.int64)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        units = b - a if kind == CHAR else _count_tokens(cps, a, b)
        counts[i] = _n_shingles(units, k, offset)
    raw_off = np.zeros(n + 1, np.int64)
    raw_off[1:] = np.cumsum(counts)
    raw = np.empty(raw_off[n], np.uint64)
    uniq = np.zeros(n, np.int64)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        p, q = raw_off[i], raw_off[i + 1]
        _doc_shingles(cps, a, b, kind, k, offset, raw, p)
        seg = raw[p:q]
        seg.sort()
        u = 0
        for j in range(q - p):
            if j == 0 or seg[j] != seg[u - 1]:
                seg[u] = seg[j]
                u += 1
        uniq[i] = u
    out_off = np.zeros(n + 1, np.int64)
    out_off[1:] = np.cumsum(uniq)
    out = np.empty(out_off[n], np.uint64)
    for i in prange(n):
        p = raw_off[i]
        o = out_off[i]
        for j in range(uniq[i]):
            out[o + j] = raw[p + j]
    return out, out_off


def shingle_codepoints(batch: NormalizedBatch, cfg: ShingleConfig | None = None,
                       docs: np.ndarray | None = None) -> Shingles:
    """Shingle the documents ``docs`` (row numbers, default all) of a normalised batch."""
    cfg = cfg or ShingleConfig()
    if docs is None:
        docs = np.arange(len(batch), dtype=np.int64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    kind = WORD if cfg.kind == "word" else CHAR
    hashes, offsets = _shingle_kernel(batch.codepoints, batch.offsets, docs, kind, cfg.k, cfg.offset)
    return Shingles(hashes, offsets)


def shingle(texts: Sequence[str], cfg: ShingleConfig | str | None = None,
            normalize_cfg: NormalizeConfig | None = None) -> Shingles:
    """Normalise and shingle ``texts``: the library entry point for this stage.

    ``cfg`` may be a :class:`ShingleConfig` or a spec such as ``"word:5"`` or ``"char:7:2"``.
    """
    if not isinstance(cfg, ShingleConfig):
        cfg = ShingleConfig.parse(cfg) if cfg is not None else ShingleConfig()
    return shingle_codepoints(normalize(texts, normalize_cfg), cfg)
