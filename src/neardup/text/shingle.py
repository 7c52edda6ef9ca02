"""Shingling in compiled code: normalised UTF-8 in, sorted unique 64-bit shingle hashes out.

Word shingles: tokens are maximal runs of non-space characters of the normalised text (after
normalisation, whitespace is single spaces); a shingle is ``k`` consecutive tokens, and
consecutive shingles start ``offset`` tokens apart. Character shingles: ``k`` consecutive code
points, ``offset`` apart. A non-empty document with fewer than ``k`` tokens (or characters) gets
one shingle: all of it. An empty document gets none.

Hashes: a token's UTF-8 bytes are packed big-endian into 64-bit words (8 bytes each, the last one
partial), the words are folded FNV-style (``h = (h ^ w) * FNV_PRIME``) and the result,
with the byte length mixed in, finalised with MurmurHash3's fmix64: one multiplication per 8
bytes, and injective before finalisation for tokens of up to 8 bytes. A word shingle folds its
token hashes in order; a character shingle hashes its code points with FNV-1a and fmix64. Output is :class:`Shingles`, a CSR layout with each document's hashes sorted
and unique. The per-document functions here are shared with the fused shingle-and-sketch kernel
of :mod:`neardup.sketch`, so both produce the same hashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._hash import FNV_OFFSET, FNV_PRIME, GOLDEN, U64, fmix64
from .._jit import njit, prange
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
def _hash_run(units, a, b):
    """FNV-1a over ``units[a:b]`` (bytes or code points), its length mixed in, then fmix64."""
    h = FNV_OFFSET
    for i in range(a, b):
        h = (h ^ U64(units[i])) * FNV_PRIME
    return fmix64(h ^ U64(b - a))


_S8 = U64(8)


@njit(cache=True, inline="always")
def _token_hash(h, w, length):
    """Finalise a token's state: fold the last (partial) word, mix in the length."""
    return fmix64(((h ^ w) * FNV_PRIME) ^ U64(length))


@njit(cache=True)
def _decode_utf8(data, a, b, out):
    """Decode the UTF-8 bytes ``data[a:b]`` into code points in ``out``; return their count."""
    n = 0
    i = a
    while i < b:
        c = np.uint32(data[i])
        if c < 0x80:
            out[n] = c
            i += 1
        elif c < 0xE0:
            out[n] = ((c & np.uint32(0x1F)) << np.uint32(6)) | (data[i + 1] & np.uint32(0x3F))
            i += 2
        elif c < 0xF0:
            out[n] = (((c & np.uint32(0x0F)) << np.uint32(12))
                      | ((data[i + 1] & np.uint32(0x3F)) << np.uint32(6))
                      | (data[i + 2] & np.uint32(0x3F)))
            i += 3
        else:
            out[n] = (((c & np.uint32(0x07)) << np.uint32(18))
                      | ((data[i + 1] & np.uint32(0x3F)) << np.uint32(12))
                      | ((data[i + 2] & np.uint32(0x3F)) << np.uint32(6))
                      | (data[i + 3] & np.uint32(0x3F)))
            i += 4
        n += 1
    return n


@njit(cache=True)
def count_units(data, a, b, kind):
    """Tokens (``kind`` WORD) or code points (CHAR) of the normalised text ``data[a:b]``."""
    # Code points are the bytes that are not UTF-8 continuation bytes; normalised text separates
    # its tokens by exactly one space and has none at either end, so tokens are spaces + 1.
    # Branch-free loops over the slice (not over indices) vectorise: 5x faster measured.
    n = 0
    if kind == CHAR:
        for c in data[a:b]:
            n += np.int64((c & 0xC0) != 0x80)
        return n
    if b <= a:
        return 0
    for c in data[a:b]:
        n += np.int64(c == 32)
    return n + 1


@njit(cache=True, inline="always")
def n_shingles(units, k, offset):
    if units == 0:
        return 0
    if units < k:
        return 1
    return (units - k) // offset + 1


@njit(cache=True)
def doc_shingles(data, a, b, kind, k, offset, units, out):
    """Write the (unsorted) shingle hashes of ``data[a:b]``, which has ``units`` tokens or code
    points, into ``out``; return their count."""
    m = n_shingles(units, k, offset)
    if m == 0:
        return 0
    if kind == CHAR:
        cps = np.empty(units, np.uint32)
        _decode_utf8(data, a, b, cps)
        if units < k:
            out[0] = _hash_run(cps, 0, units)
            return 1
        for j in range(m):
            s = j * offset
            out[j] = _hash_run(cps, s, s + k)
        return m
    tok = np.empty(units, np.uint64)
    t = 0
    # After normalisation tokens are separated by exactly one space, with none at either end.
    h = FNV_OFFSET
    w = U64(0)
    nb = 0
    length = 0
    for i in range(a, b):
        c = data[i]
        if c == SPACE:
            tok[t] = _token_hash(h, w, length)
            t += 1
            h = FNV_OFFSET
            w = U64(0)
            nb = 0
            length = 0
        else:
            w = (w << _S8) | U64(c)
            nb += 1
            length += 1
            if nb == 8:
                h = (h ^ w) * FNV_PRIME
                w = U64(0)
                nb = 0
    if b > a:
        tok[t] = _token_hash(h, w, length)
    width = k if units >= k else units
    for j in range(m):
        s = j * offset
        h = GOLDEN
        for q in range(s, s + width):
            h = (h ^ tok[q]) * FNV_PRIME
        out[j] = fmix64(h ^ U64(width))
    return m


@njit(cache=True, parallel=True, nogil=True)
def _shingle_kernel(data, offsets, docs, kind, k, offset):
    n = len(docs)
    counts = np.zeros(n, np.int64)
    units = np.zeros(n, np.int64)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        units[i] = count_units(data, a, b, kind)
        counts[i] = n_shingles(units[i], k, offset)
    raw_off = np.zeros(n + 1, np.int64)
    raw_off[1:] = np.cumsum(counts)
    raw = np.empty(raw_off[n], np.uint64)
    uniq = np.zeros(n, np.int64)
    for i in prange(n):
        a, b = offsets[docs[i]], offsets[docs[i] + 1]
        p, q = raw_off[i], raw_off[i + 1]
        seg = raw[p:q]
        doc_shingles(data, a, b, kind, k, offset, units[i], seg)
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


def kind_code(cfg: ShingleConfig) -> int:
    return WORD if cfg.kind == "word" else CHAR


def shingle_batch(batch: NormalizedBatch, cfg: ShingleConfig | None = None,
                  docs: np.ndarray | None = None) -> Shingles:
    """Shingle the documents ``docs`` (row numbers, default all) of a normalised batch."""
    cfg = cfg or ShingleConfig()
    if docs is None:
        docs = np.arange(len(batch), dtype=np.int64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    hashes, offsets = _shingle_kernel(batch.data, batch.offsets, docs, kind_code(cfg), cfg.k,
                                      cfg.offset)
    return Shingles(hashes, offsets)


def shingle(texts: Sequence[str], cfg: ShingleConfig | str | None = None,
            normalize_cfg: NormalizeConfig | None = None) -> Shingles:
    """Normalise and shingle ``texts``: the library entry point for this stage.

    ``cfg`` may be a :class:`ShingleConfig` or a spec such as ``"word:5"`` or ``"char:7:2"``.
    """
    if not isinstance(cfg, ShingleConfig):
        cfg = ShingleConfig.parse(cfg) if cfg is not None else ShingleConfig()
    return shingle_batch(normalize(texts, normalize_cfg), cfg)
