"""Reuse across a corpus: :func:`find_reuse` finds every pair of texts that shares a passage,
with the passages, all texts at once (the batch behind ``neardup reuse``), and returns a
:class:`ReuseResult`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._kernels.passages import pair_passages_many
from .._records import record
from .._threads import parallel
from ..errors import ConfigError
from ..validate import check_int
from .passages import PassageConfig
from .winnowing import fingerprints_many_flat, order_by_text_then_hash
from .words import _encode, _split, blank_tags, words_many


@record
class ReuseResult:
    """Reused passages across a corpus (:func:`find_reuse`), as columns (numpy arrays).

    ``passage_table``: one row per passage: ``a``, ``b`` (the two documents' rows, ``a < b``),
    ``a_word_start``/``a_word_end``/``b_word_start``/``b_word_end`` (word ranges),
    ``a_start``/``a_end``/``b_start``/``b_end`` (character ranges in the original texts),
    ``words`` (in ``a``) and ``matched`` (words that agree exactly); sorted by pair, then
    position in ``a``. ``pair_table``: one row per pair of documents with at least one
    passage: ``a``, ``b``, ``passages``, ``reused_a``/``reused_b`` (words of each in
    passages, overlaps counted once) and ``share_a``/``share_b`` (those over the document's
    words). ``stats``: counts (documents, fingerprints, candidate pairs, fingerprints left out
    as too common, ...). :attr:`passages` and :attr:`pairs` give the rows as dictionaries."""

    passage_table: dict[str, np.ndarray]
    pair_table: dict[str, np.ndarray]
    stats: dict

    @property
    def passages(self) -> list[dict]:
        """One dictionary per passage: ``a``, ``b``, ``a_words``/``b_words`` and
        ``a_chars``/``b_chars`` (``(start, end)``), ``words``, ``matched``."""
        t = {k: v.tolist() for k, v in self.passage_table.items()}
        return [
            {
                "a": t["a"][i],
                "b": t["b"][i],
                "a_words": (t["a_word_start"][i], t["a_word_end"][i]),
                "b_words": (t["b_word_start"][i], t["b_word_end"][i]),
                "a_chars": (t["a_start"][i], t["a_end"][i]),
                "b_chars": (t["b_start"][i], t["b_end"][i]),
                "words": t["words"][i],
                "matched": t["matched"][i],
            }
            for i in range(len(t["a"]))
        ]

    @property
    def pairs(self) -> list[dict]:
        """One dictionary per pair of documents: the columns of :attr:`pair_table`."""
        t = {k: v.tolist() for k, v in self.pair_table.items()}
        return [{k: t[k][i] for k in t} for i in range(len(t["a"]))]

    def _table(self, table: str) -> dict[str, np.ndarray]:
        if table == "pairs":
            return self.pair_table
        if table == "passages":
            return self.passage_table
        raise ConfigError(f"table={table!r} is invalid: 'pairs' or 'passages'")

    def to_arrow(self, table: str = "pairs") -> Any:
        """The ``pairs`` or ``passages`` table (:attr:`pair_table`, :attr:`passage_table`) as
        a ``pyarrow.Table``."""
        import pyarrow as pa

        return pa.table({k: pa.array(v) for k, v in self._table(table).items()})

    def to_pandas(self, table: str = "pairs") -> Any:
        """The ``pairs`` or ``passages`` table as a ``pandas.DataFrame`` (needs pandas)."""
        from .._extras import require

        require("pandas", "tables", "ReuseResult.to_pandas")
        return self.to_arrow(table).to_pandas()

    def to_polars(self, table: str = "pairs") -> Any:
        """The ``pairs`` or ``passages`` table as a ``polars.DataFrame`` (needs polars)."""
        from .._extras import require

        pl = require("polars", "tables", "ReuseResult.to_polars")
        return pl.from_arrow(self.to_arrow(table))


def _union_lengths(
    group: np.ndarray, starts: np.ndarray, ends: np.ndarray, n_groups: int
) -> np.ndarray:
    """Per group, the length of the union of its ranges ``[starts, ends)`` (``group`` sorted,
    and ``starts`` ascending within a group)."""
    out = np.zeros(n_groups, np.int64)
    if len(group) == 0:
        return out
    span = int(ends.max()) + 1
    s = group * span + starts  # groups apart on one line: a running maximum never crosses
    e = group * span + ends
    prev = np.empty_like(e)
    prev[0] = s[0]
    np.maximum.accumulate(e[:-1], out=prev[1:])
    prev[1:] = np.maximum(prev[1:], group[1:] * span)  # a group's first range starts fresh
    np.add.at(out, group, np.maximum(e - np.maximum(s, prev), 0))
    return out


def _candidate_pairs(
    fh: np.ndarray, fdoc: np.ndarray, n: int, max_doc_freq: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """The pairs of texts (``left < right``) that keep a common fingerprint held by at most
    ``max_doc_freq`` texts, and how many fingerprints were held by more."""
    order = np.lexsort((fdoc, fh))
    h_sorted, d_sorted = fh[order], fdoc[order]
    new = np.ones(len(order), bool)
    new[1:] = (h_sorted[1:] != h_sorted[:-1]) | (d_sorted[1:] != d_sorted[:-1])
    h_u, d_u = h_sorted[new], d_sorted[new]  # (hash, text) once each, texts ascending
    del order, h_sorted, d_sorted, new
    starts = np.flatnonzero(np.r_[True, h_u[1:] != h_u[:-1]]) if len(h_u) else np.zeros(0, np.int64)
    sizes = np.diff(np.r_[starts, len(h_u)])
    common = int((sizes > max_doc_freq).sum())
    ok = (sizes >= 2) & (sizes <= max_doc_freq)
    g_start, g_size = starts[ok], sizes[ok]
    # every member pairs with the members after it in its group
    member = _ranges(g_start, g_size)
    after = np.repeat(g_start + g_size, g_size) - member - 1
    left = np.repeat(d_u[member], after)
    right = d_u[_ranges(member + 1, after)]
    keys = left * np.int64(n) + right
    del left, right
    keys.sort()
    keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys
    return keys // n, keys % n, common


def find_reuse(
    texts: Sequence[str] | Any,
    config: PassageConfig | None = None,
    *,
    max_doc_freq: int = 100,
    text_field: str | None = None,
) -> ReuseResult:
    """Every pair of ``texts`` that shares a passage, with the passages (see the module
    docstring; the guarantee holds for every pair whose shared fingerprints are each kept by
    at most ``max_doc_freq`` texts).

    Each text's words are hashed and winnowed once, for all texts at once; texts that keep a
    common fingerprint are candidate pairs, and the compiled kernel compares each candidate
    pair as :func:`reused_passages` does, on several threads. A fingerprint kept by more than
    ``max_doc_freq`` texts (a phrase everybody uses) proposes no pair and is counted in
    ``stats["common_fingerprints"]``.

    ``texts``: strings, a column of a table (pandas, polars, pyarrow, Hugging Face), or a
    whole table with its texts in the column ``text_field`` (default "text"); documents are
    their row numbers. ``result.to_pandas()`` / ``to_polars()`` / ``to_arrow()``: the pairs
    or the passages as a table."""
    from .._columns import table_columns, text_column

    cfg = config or PassageConfig()
    check_int("max_doc_freq", max_doc_freq, 2)
    texts, _ = table_columns(texts, None, text_field, None, default_id=None)
    if not isinstance(texts, (list, tuple)) or text_field is not None:
        texts, _, _ = text_column(texts)
        if not isinstance(texts, list):
            texts = texts.to_pylist()
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise ConfigError(f"texts[{i}] is {type(t).__name__}, not str")
    n = len(texts)
    if cfg.strip_html:  # same lengths: the offsets found are those of the original texts
        texts = [blank_tags(t) for t in texts]
    words, woff = words_many(texts)
    fh, fdoc, fpos = fingerprints_many_flat(words, woff, cfg.k, cfg.window)
    left, right, common = _candidate_pairs(fh, fdoc, n, max_doc_freq)
    # each text's fingerprints sorted by hash, then position (the kernel merges them)
    order = order_by_text_then_hash(fdoc, fh, n)
    sfh, sfpos = fh[order], fpos[order]
    foff = np.searchsorted(fdoc[order], np.arange(n + 1))
    del order
    n_fp = len(fh)
    del fh, fdoc, fpos
    chunks: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def compare(lo: int, hi: int) -> None:
        chunks[lo] = pair_passages_many(
            words,
            woff,
            sfh,
            sfpos,
            foff,
            left,
            right,
            lo,
            hi,
            cfg.k,
            cfg.max_gap,
            cfg.min_match,
            cfg.max_occurrences,
            cfg.shortest,
        )

    wlen = np.diff(woff)
    parallel(
        compare,
        len(left),
        weights=(wlen[left] + wlen[right]).astype(np.float64) if len(left) else None,
        min_weight=1 << 14,
    )
    parts = [chunks[k][0] for k in sorted(chunks)]
    rows = np.concatenate(parts) if parts else np.zeros((0, 8), np.int64)
    pair, a0, a1, b0, b1, matched = (rows[:, c] for c in range(6))
    order = np.lexsort((b1, b0, a1, a0, pair))
    pair, a0, a1, b0, b1, matched = (x[order] for x in (pair, a0, a1, b0, b1, matched))
    pa, pb = left[pair], right[pair]
    # character ranges, from the words of the texts that hold passages
    a_start, a_end = _char_ranges(texts, pa, a0, a1)
    b_start, b_end = _char_ranges(texts, pb, b0, b1)
    passage_table = {
        "a": pa,
        "b": pb,
        "a_word_start": a0,
        "a_word_end": a1,
        "b_word_start": b0,
        "b_word_end": b1,
        "a_start": a_start,
        "a_end": a_end,
        "b_start": b_start,
        "b_end": b_end,
        "words": a1 - a0,
        "matched": matched,
    }
    # per pair of documents: passages, words covered in each (overlaps once), shares
    uniq, first, counts = np.unique(pair, return_index=True, return_counts=True)
    gid = np.repeat(np.arange(len(uniq)), counts)
    reused_a = _union_lengths(gid, a0, a1, len(uniq))
    ob = np.lexsort((b0, gid))
    reused_b = _union_lengths(gid[ob], b0[ob], b1[ob], len(uniq))
    na, nb = wlen[left[uniq]], wlen[right[uniq]]
    pair_table = {
        "a": left[uniq],
        "b": right[uniq],
        "passages": counts,
        "reused_a": reused_a,
        "reused_b": reused_b,
        "share_a": reused_a / np.maximum(na, 1),
        "share_b": reused_b / np.maximum(nb, 1),
    }
    stats = {
        "documents": n,
        "words": int(len(words)),
        "fingerprints": int(n_fp),
        "common_fingerprints": common,
        "candidate_pairs": int(len(left)),
        "pairs": int(len(uniq)),
        "passages": int(len(pair)),
        "guaranteed_words": cfg.guaranteed_words,
        "min_words": cfg.shortest,
    }
    return ReuseResult(passage_table, pair_table, stats)


def _char_ranges(
    texts: Sequence[str], doc: np.ndarray, w0: np.ndarray, w1: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The character range ``[start of word w0, end of word w1 - 1)`` in ``texts[doc]``, per
    row; the words' offsets are found for the texts named only."""
    if len(doc) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    docs, inv = np.unique(doc, return_inverse=True)
    sub = [texts[d] for d in docs.tolist()]
    data, off = _encode(sub)
    _, woff, starts, ends, _ = _split(data, off, True)
    for t in [i for i, x in enumerate(sub) if not x.isascii()]:  # bytes -> characters
        chars = np.zeros(off[t + 1] - off[t] + 1, np.int64)
        np.cumsum((data[off[t] : off[t + 1]] & 0xC0) != 0x80, out=chars[1:])
        w = slice(woff[t], woff[t + 1])
        starts[w], ends[w] = chars[starts[w]], chars[ends[w]]
    at = woff[inv]
    return starts[at + w0], ends[at + w1 - 1]


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    counts = np.maximum(counts, 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.cumsum(counts) - counts
    return np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)
