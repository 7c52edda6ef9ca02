"""Shingling in compiled code: normalised UTF-8 in, sorted unique 64-bit shingle hashes out.

Word shingles: tokens are maximal runs of non-space characters of the normalised text (after
normalisation, whitespace is single spaces), except that each character of a script written
without spaces (Chinese, Japanese, Thai, ...: :mod:`neardup.text.scripts`) is a token of its
own; a shingle is ``k`` consecutive tokens, and
consecutive shingles start ``offset`` tokens apart. Character shingles: ``k`` consecutive code
points, ``offset`` apart. A non-empty document with fewer than ``k`` tokens (or characters) gets
one shingle: all of it. An empty document gets none.

Hashes: a token's UTF-8 bytes are packed big-endian into 64-bit words (8 bytes each, the last one
partial), the words are folded FNV-style (``h = (h ^ w) * FNV_PRIME``) and the result,
with the byte length mixed in, finalised with MurmurHash3's fmix64: one multiplication per 8
bytes, and injective before finalisation for tokens of up to 8 bytes. A word shingle folds its
token hashes in order; a character shingle hashes its code points with FNV-1a and fmix64.
Output is :class:`Shingles`, a CSR layout with each document's hashes sorted and unique. The
compiled per-document functions (:mod:`neardup._kernels.shingle`) serve both this module and the
fused shingle-and-sketch of :mod:`neardup.sketch`, so both produce the same hashes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from .._kernels import shingle as _k  # type: ignore[attr-defined]  # compiled: no stubs
from .._records import record
from .._threads import parallel
from ..config import NormalizeConfig, ShingleConfig
from .normalize import NormalizedBatch, normalize
from .scripts import words_apart

WORD, CHAR = 0, 1
#: the first bytes of the UTF-8 characters of 3 and 4 bytes (U+0800 and beyond), among which
#: those of the unspaced scripts: a fast test that a text needs a closer look
_WIDE_LEAD = re.compile(rb"[\xe0-\xf4]")


@record(frozen=True)
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

    def __getitem__(self, i: int | np.integer) -> np.ndarray:
        return self.hashes[self.offsets[i] : self.offsets[i + 1]]

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def kind_code(cfg: ShingleConfig) -> int:
    return WORD if cfg.kind == "word" else CHAR


def word_batch(batch: NormalizedBatch, cfg: ShingleConfig) -> NormalizedBatch:
    """The batch that word shingles are made from: each character of a script written without
    spaces (Chinese, Japanese, Thai, ...) a word of its own (see :mod:`neardup.text.scripts`);
    ``batch`` itself for character shingles or where no text holds such a character."""
    if cfg.kind != "word":
        return batch
    nbytes = np.diff(batch.offsets)
    # these scripts take 3 or 4 bytes a character: only texts with such bytes are looked at
    wide = np.flatnonzero(nbytes - batch.lengths >= 2)
    if len(wide) * 8 > len(nbytes):  # many: one pass over all the bytes finds those to read
        hits = np.flatnonzero(batch.data >= 0xE0)
        wide = np.intersect1d(wide, np.searchsorted(batch.offsets, hits, side="right") - 1)
    else:  # a few: each of them
        raw = batch.data.data  # a memoryview of the bytes
        offsets = batch.offsets.tolist()
        picked = [
            i
            for i in wide.tolist()
            if _WIDE_LEAD.search(raw[offsets[i] : offsets[i + 1]]) is not None
        ]
        wide = np.asarray(picked, np.int64)
    changed: dict[int, bytes] = {}
    for i in np.asarray(wide, np.int64).tolist():
        text = batch.text(i)
        apart = words_apart(text)
        if apart is not text:
            changed[i] = apart.encode("utf-8", "surrogatepass")
    if not changed:
        return batch
    rows = np.fromiter(changed, np.int64, len(changed))
    sizes = nbytes.copy()
    sizes[rows] = np.fromiter(map(len, changed.values()), np.int64, len(changed))
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    start = 0
    for i, new in changed.items():  # the texts before each changed one, in one copy
        data[offsets[start] : offsets[i]] = batch.data[batch.offsets[start] : batch.offsets[i]]
        data[offsets[i] : offsets[i + 1]] = np.frombuffer(new, np.uint8)
        start = i + 1
    data[offsets[start] :] = batch.data[batch.offsets[start] :]
    lengths = batch.lengths.copy()
    words = None if batch.words is None else batch.words.copy()
    for i, new in changed.items():
        text = new.decode("utf-8", "surrogatepass")
        lengths[i] = len(text)
        if words is not None:
            words[i] = text.count(" ") + 1 if text else 0
    return NormalizedBatch(data, offsets, lengths, words)


def shingle_batch(
    batch: NormalizedBatch, cfg: ShingleConfig | None = None, docs: np.ndarray | None = None
) -> Shingles:
    """Shingle the documents ``docs`` (row numbers, default all) of a normalised batch."""
    cfg = cfg or ShingleConfig()
    batch = word_batch(batch, cfg)
    if docs is None:
        docs = np.arange(len(batch), dtype=np.int64)
    docs = np.ascontiguousarray(docs, dtype=np.int64)
    units, counts = shingle_counts(batch, docs, cfg)
    raw_off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(counts, out=raw_off[1:])
    raw = np.empty(int(raw_off[-1]), np.uint64)
    uniq = np.empty(len(docs), np.int64)
    args = (
        batch.data,
        batch.offsets,
        docs,
        kind_code(cfg),
        cfg.k,
        cfg.offset,
        units,
        raw_off,
        raw,
        uniq,
    )
    parallel(lambda lo, hi: _k.shingle_sorted(*args, lo, hi), len(docs), counts, min_weight=4096)
    out_off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum(uniq, out=out_off[1:])
    out = np.empty(int(out_off[-1]), np.uint64)
    parallel(
        lambda lo, hi: _k.compact(raw, raw_off, out_off, out, lo, hi),
        len(docs),
        uniq,
        min_weight=1 << 16,
    )
    return Shingles(out, out_off)


def shingle_counts(
    batch: NormalizedBatch, docs: np.ndarray, cfg: ShingleConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Units (tokens or code points) and shingles of each listed document of a normalised
    batch: ``int64[len(docs)]`` each."""
    n = len(docs)
    kind = kind_code(cfg)
    known = batch.lengths if kind == CHAR else batch.words
    if known is not None:  # counted when the texts were normalised
        units = np.ascontiguousarray(known[docs], np.int64)
        counts = np.where(units >= cfg.k, (units - cfg.k) // cfg.offset + 1, np.minimum(units, 1))
        return units, counts
    units = np.empty(n, np.int64)
    counts = np.empty(n, np.int64)
    weights = (batch.offsets[docs + 1] - batch.offsets[docs]) if n > 256 else None
    parallel(
        lambda lo, hi: _k.shingle_counts(
            batch.data, batch.offsets, docs, kind, cfg.k, cfg.offset, units, counts, lo, hi
        ),
        n,
        weights,
        min_weight=1 << 18,
    )
    return units, counts


def shingle(
    texts: Sequence[str],
    cfg: ShingleConfig | str | None = None,
    normalize_cfg: NormalizeConfig | None = None,
) -> Shingles:
    """Normalise and shingle ``texts``: the library entry point for this stage.

    ``cfg`` may be a :class:`ShingleConfig` or a spec such as ``"word:5"`` or ``"char:7:2"``.
    """
    if not isinstance(cfg, ShingleConfig):
        cfg = ShingleConfig.parse(cfg) if cfg is not None else ShingleConfig()
    return shingle_batch(normalize(texts, normalize_cfg), cfg)
