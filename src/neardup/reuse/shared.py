"""Shared passages of two texts, for showing them side by side (the service's pair view).

A passage is a maximal run of word k-grams that both texts share *in the same order*: if the
k-gram starting at word ``i`` of ``a`` equals the one starting at word ``j`` of ``b``, and so do
those at ``(i+1, j+1)``, ... ``(i+m-1, j+m-1)`` (and neither ``(i-1, j-1)`` nor ``(i+m, j+m)``
match), the words ``a[i:i+m+k-1]`` and ``b[j:j+m+k-1]`` form one passage. Every such run is
reported, however short (down to one k-gram) and however often a phrase repeats (no gaps are
bridged: that is :func:`~neardup.reuse.reused_passages`). Words are those of
:func:`~neardup.reuse.text_words` (maximal runs of non-white-space, each character of a script
written without spaces apart, compared after NFKC normalisation and case folding); offsets are
character offsets into the *original* strings, so the page can wrap them in ``<mark>`` as they
are.

The search is the compiled one of reuse detection (:mod:`neardup._kernels.passages`), seeded
by every k-gram of ``a`` and every k-gram of ``b`` that may match (with ``max_occurrences``,
the first ones of each k-gram only): equal k-gram hashes whose words agree are extended while
the words agree. With ``max_occurrences``, ``b`` is given to it as the stretches of words that
hold only such k-grams, apart, so that no run crosses a k-gram left out and the work stays
bounded by the matches allowed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._kernels.passages import pair_passages_many
from ..validate import check_int
from .winnowing import combine_kgrams
from .words import TextWords, text_words

_ZERO = np.zeros(1, np.int64)
_ONE = np.ones(1, np.int64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``starts[t] + 0, 1, ..., lengths[t] - 1`` for every ``t``, one after the other."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    return np.arange(total, dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)


def _stretches(
    tb: TextWords, allowed: np.ndarray, k: int, sep: np.uint64
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``b``'s words as the stretches that hold only ``allowed`` k-grams (the words of each
    maximal run of allowed k-gram starts), with the word ``sep`` between two stretches:
    ``(words, where, first, at)``: the words given to the kernel, the position in ``b`` of
    each (-1 for a separator), and the first word of each stretch in ``b`` and among the
    words."""
    edges = np.diff(np.concatenate([[0], allowed.view(np.int8), [0]]))
    first = np.flatnonzero(edges == 1)
    size = np.flatnonzero(edges == -1) - first + k - 1  # words per stretch
    at = np.cumsum(size + 1) - (size + 1)
    where = np.full(int(size.sum()) + len(size) - 1, -1, np.int64)
    where[_ranges(at, size)] = _ranges(first, size)
    words = tb.hashes[np.maximum(where, 0)]
    words[where < 0] = sep
    return words, where, first, at


def shared_passages(
    a: str | TextWords, b: str | TextWords, k: int = 5, *, max_occurrences: int | None = None
) -> list[dict[str, Any]]:
    """Maximal shared passages of ``a`` and ``b`` built from shared word ``k``-grams (see the
    module docstring).

    Returns ``[{"a": [start, end], "b": [start, end], "words": n}, ...]`` (character offsets
    into ``a`` and ``b``, end exclusive; ``n`` words in each), sorted by ``a`` then ``b`` start.
    ``max_occurrences``: consider at most that many positions in ``b`` of any one k-gram (the
    first ones), which bounds the work on very repetitive texts; ``None`` is exact. ``a`` and
    ``b`` may be given as their :func:`~neardup.reuse.text_words`.
    """
    check_int("k", k, 1)
    ta = a if isinstance(a, TextWords) else text_words(a, keep_keys=False)
    tb = b if isinstance(b, TextWords) else text_words(b, keep_keys=False)
    la, lb = len(ta), len(tb)
    na, nb = la - k + 1, lb - k + 1
    if na <= 0 or nb <= 0:
        return []
    ga, gb = combine_kgrams(ta.hashes, k), combine_kgrams(tb.hashes, k)
    fa = np.argsort(ga, kind="stable")  # the k-grams by hash, then position
    fb = np.argsort(gb, kind="stable")
    words_b, pos_b, where = tb.hashes, fb, None
    if max_occurrences is not None:  # only the first max_occurrences of each k-gram of b
        gs = gb[fb]
        fb = fb[np.arange(nb) - np.searchsorted(gs, gs, "left") < max_occurrences]
        pos_b = fb
        if len(fb) < nb:
            allowed = np.zeros(nb, bool)
            allowed[fb] = True
            sep = np.uint64(0)  # a word that a does not hold: no run goes through it
            while (ta.hashes == sep).any():
                sep += np.uint64(1)
            words_b, where, first, at = _stretches(tb, allowed, k, sep)
            pos_b = fb + (at - first)[np.searchsorted(first, fb, "right") - 1]
    rows, _ = pair_passages_many(
        np.concatenate([ta.hashes, words_b]),
        np.array([0, la, la + len(words_b)], np.int64),
        np.concatenate([ga[fa], gb[fb]]),
        np.concatenate([fa, pos_b]).astype(np.int64),
        np.array([0, na, na + len(fb)], np.int64),
        _ZERO,
        _ONE,
        0,
        1,
        k,
        0,  # no gaps bridged
        1,
        max(na, len(fb)) + 1,  # every seed
        k,
    )
    if len(rows) == 0:
        return []
    i0, j0 = rows[:, 1], rows[:, 3]
    m = rows[:, 2] - i0 - k + 1  # k-grams of each run
    if where is not None:
        j0 = where[j0]
    order = np.lexsort((j0, i0))
    i0, j0, m = i0[order], j0[order], m[order]
    last = m + k - 2  # offset of a run's last word from its first
    cols = (ta.starts[i0], ta.ends[i0 + last], tb.starts[j0], tb.ends[j0 + last], m + k - 1)
    return [
        {"a": [x0, x1], "b": [y0, y1], "words": w}
        for x0, x1, y0, y1, w in zip(*(c.tolist() for c in cols))
    ]
