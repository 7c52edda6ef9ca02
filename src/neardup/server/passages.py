"""Shared passages of two texts, for highlighting them side by side.

A passage is a maximal run of word k-grams that both texts share *in the same order*: if the
k-gram starting at word ``i`` of ``a`` equals the one starting at word ``j`` of ``b``, and so do
those at ``(i+1, j+1)``, ... ``(i+m-1, j+m-1)`` (and neither ``(i-1, j-1)`` nor ``(i+m, j+m)``
match), the words ``a[i:i+m+k-1]`` and ``b[j:j+m+k-1]`` form one passage. Words are maximal runs
of non-whitespace (each character of a script written without spaces apart), compared after NFKC normalisation and case folding; offsets are character
offsets into the *original* strings, so the page can wrap them in ``<mark>`` as they are.

The work is vectorised: each distinct word gets an integer, each k-gram the number of its
distinct k-gram (exactly: hashed, sorted, and equal hashes checked to be equal k-grams), the k-grams of ``a`` find their
positions in ``b`` by ``searchsorted``, and the runs are read off the matches sorted by
diagonal. A 1 MB text against another takes a fraction of a second.
"""

from __future__ import annotations

import time
from functools import lru_cache
from typing import Any

import numpy as np

from ..text.scripts import UNSPACED, WORD
from ..text.words import word_key, word_keys, words
from ..validate import check_int

__all__ = [
    "passages_for_display",
    "passages_within",
    "shared_passages",
    "word_key",
    "word_keys",
    "words",
]


class _Late(Exception):
    """The deadline passed."""


@lru_cache(maxsize=1)
def _spaces() -> np.ndarray:
    """The code points that ``str.isspace`` (and so ``str.split`` and regex ``\\s``) calls
    white space (all below U+3001)."""
    return np.array([c for c in range(0x3001) if chr(c).isspace()], np.uint32)


def _word_bounds(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Character offsets ``(starts, ends)`` of the words of ``text`` (maximal runs of
    non-white-space, each character of a script written without spaces apart), vectorised
    where the text holds no such character."""
    if not text.isascii() and UNSPACED.search(text) is not None:
        spans = [m.span() for m in WORD.finditer(text)]
        return (
            np.fromiter((a for a, _ in spans), np.int64, len(spans)),
            np.fromiter((b for _, b in spans), np.int64, len(spans)),
        )
    cps = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)
    solid = np.ones(len(cps) + 2, np.int8)
    solid[0] = solid[-1] = 0
    solid[1:-1] = ~np.isin(cps, _spaces())
    edges = np.diff(solid)
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def _check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _Late


def _kgram_ids(ia: np.ndarray, ib: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """For each k-gram of the word numbers ``ia`` and of ``ib``, the number of its distinct
    k-gram (equal numbers exactly where the k words are equal): the k-grams are hashed to 64-bit
    integers and sorted; equal hashes are checked to be equal k-grams (where two are not, the
    k-grams themselves are sorted)."""
    from numpy.lib.stride_tricks import sliding_window_view

    w = np.concatenate([sliding_window_view(ia, k), sliding_window_view(ib, k)])
    h = np.zeros(len(w), np.uint64)
    for t in range(k):
        h = (h ^ w[:, t].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    order = np.argsort(h, kind="stable")
    hs, ws = h[order], w[order]
    same_hash = hs[1:] == hs[:-1]
    same_gram = (ws[1:] == ws[:-1]).all(axis=1)
    if np.any(same_hash & ~same_gram):  # a collision: sort the k-grams themselves
        order = np.lexsort(w.T[::-1])
        ws = w[order]
        same_gram = (ws[1:] == ws[:-1]).all(axis=1)
    new = np.ones(len(ws), bool)
    new[1:] = ~same_gram
    gid = np.empty(len(ws), np.int64)
    gid[order] = np.cumsum(new) - 1
    return gid[: len(ia) - k + 1], gid[len(ia) - k + 1 :]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def _passages(
    a: str,
    b: str,
    k: int,
    max_occurrences: int | None,
    deadline: float | None,
    ka: list[str] | None = None,
    kb: list[str] | None = None,
) -> list[dict[str, Any]]:
    ka = word_keys(a) if ka is None else ka
    kb = word_keys(b) if kb is None else kb
    na, nb = len(ka) - k + 1, len(kb) - k + 1
    if na <= 0 or nb <= 0:
        return []
    codes: dict[str, int] = {}
    ia = np.fromiter((codes.setdefault(w, len(codes)) for w in ka), np.int64, len(ka))
    ib = np.fromiter((codes.setdefault(w, len(codes)) for w in kb), np.int64, len(kb))
    _check_deadline(deadline)
    ga, gb = _kgram_ids(ia, ib, k)
    # b's positions by k-gram, then position; only the first ``max_occurrences`` of each
    jb = np.argsort(gb, kind="stable")
    gs = gb[jb]
    if max_occurrences is not None:
        rank = np.arange(len(gs)) - np.searchsorted(gs, gs, "left")
        keep = rank < max_occurrences
        jb, gs = jb[keep], gs[keep]
    lo = np.searchsorted(gs, ga, "left")
    count = np.searchsorted(gs, ga, "right") - lo
    _check_deadline(deadline)
    # every match (i, j); sorted by diagonal then i, a run starts where (i - 1, j - 1) is not
    # the match before it
    i = np.repeat(np.arange(na, dtype=np.int64), count)
    j = jb[_ranges(lo, count)].astype(np.int64)
    if len(i) == 0:
        return []
    d = j - i
    order = np.lexsort((i, d))
    i, d = i[order], d[order]
    start = np.ones(len(i), bool)
    start[1:] = (d[1:] != d[:-1]) | (i[1:] != i[:-1] + 1)
    first = np.flatnonzero(start)
    m = np.diff(np.append(first, len(i)))
    i0 = i[first]
    j0 = i0 + d[first]
    order = np.lexsort((j0, i0))
    i0, j0, m = i0[order], j0[order], m[order]
    _check_deadline(deadline)
    sa, ea = _word_bounds(a)
    sb, eb = _word_bounds(b)
    last = m + k - 2  # offset of a run's last word from its first
    cols = (sa[i0], ea[i0 + last], sb[j0], eb[j0 + last], m + k - 1)
    return [
        {"a": [x0, x1], "b": [y0, y1], "words": w}
        for x0, x1, y0, y1, w in zip(*(c.tolist() for c in cols))
    ]


def shared_passages(
    a: str, b: str, k: int = 5, *, max_occurrences: int | None = None
) -> list[dict[str, Any]]:
    """Maximal shared passages of ``a`` and ``b`` built from shared word ``k``-grams.

    Returns ``[{"a": [start, end], "b": [start, end], "words": n}, ...]`` (character offsets
    into ``a`` and ``b``, end exclusive; ``n`` words in each), sorted by ``a`` then ``b`` start.
    ``max_occurrences``: consider at most that many positions in ``b`` of any one k-gram (the
    first ones), which bounds the work on very repetitive texts; ``None`` is exact.
    """
    check_int("k", k, 1)
    return _passages(a, b, k, max_occurrences, None)


def passages_within(
    a: str,
    b: str,
    k: int = 5,
    limit: int = 200,
    deadline: float | None = None,
    keys_a: list[str] | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """:func:`passages_for_display`, stopping at ``deadline`` (a :func:`time.monotonic`
    time): ``(passages, complete)``, no passages where it stopped. ``keys_a``: ``a``'s
    :func:`~neardup.text.words.word_keys`, where the caller has them."""
    try:
        _check_deadline(deadline)
        ka = word_keys(a) if keys_a is None else keys_a
        kb = word_keys(b)
        n = min(len(ka), len(kb))
        if n == 0:
            return [], True
        got = _passages(a, b, max(1, min(k, n)), 8, deadline, ka, kb)
    except _Late:
        return [], False
    if len(got) > limit:
        got = sorted(got, key=lambda p: (-p["words"], p["a"][0], p["b"][0]))[:limit]
        got.sort(key=lambda p: (p["a"][0], p["b"][0]))
    return got, True


def passages_for_display(a: str, b: str, k: int = 5, limit: int = 200) -> list[dict[str, Any]]:
    """:func:`shared_passages` as the web page wants them: ``k`` lowered to the shorter text's
    word count (a text shorter than one shingle is shingled whole, so two such near-duplicates
    still show what they share), bounded work, and at most ``limit`` passages, longest first."""
    return passages_within(a, b, k, limit)[0]
