"""Shared passages of two texts, for highlighting them side by side.

A passage is a maximal run of word k-grams that both texts share *in the same order*: if the
k-gram starting at word ``i`` of ``a`` equals the one starting at word ``j`` of ``b``, and so do
those at ``(i+1, j+1)``, ... ``(i+m-1, j+m-1)`` (and neither ``(i-1, j-1)`` nor ``(i+m, j+m)``
match), the words ``a[i:i+m+k-1]`` and ``b[j:j+m+k-1]`` form one passage. Words are maximal runs
of non-whitespace, compared after NFKC normalisation and case folding; offsets are character
offsets into the *original* strings, so the page can wrap them in ``<mark>`` as they are.
"""

from __future__ import annotations

import re
from typing import Any

from ..text.words import word_key, words
from ..validate import check_int

__all__ = ["passages_for_display", "shared_passages", "word_key", "words"]

_WORD = re.compile(r"\S+")


def shared_passages(a: str, b: str, k: int = 5, *,
                    max_occurrences: int | None = None) -> list[dict[str, Any]]:
    """Maximal shared passages of ``a`` and ``b`` built from shared word ``k``-grams.

    Returns ``[{"a": [start, end], "b": [start, end], "words": n}, ...]`` (character offsets
    into ``a`` and ``b``, end exclusive; ``n`` words in each), sorted by ``a`` then ``b`` start.
    ``max_occurrences``: consider at most that many positions in ``b`` of any one k-gram (the
    first ones), which bounds the work on very repetitive texts; ``None`` is exact.
    """
    check_int("k", k, 1)
    wa, wb = words(a), words(b)
    na, nb = len(wa) - k + 1, len(wb) - k + 1
    if na <= 0 or nb <= 0:
        return []
    ka = [w[2] for w in wa]
    kb = [w[2] for w in wb]
    where: dict[tuple[str, ...], list[int]] = {}
    for j in range(nb):
        pos = where.setdefault(tuple(kb[j:j + k]), [])
        if max_occurrences is None or len(pos) < max_occurrences:
            pos.append(j)
    # For each shared k-gram (i, j) the run along its diagonal; a run starts where (i-1, j-1)
    # does not match. ``prev`` holds the matches of row i-1 as {j: run start (i0, j0)}.
    runs: dict[tuple[int, int], int] = {}  # (i0, j0) -> number of k-grams in the run
    prev: dict[int, tuple[int, int]] = {}
    for i in range(na):
        cur: dict[int, tuple[int, int]] = {}
        for j in where.get(tuple(ka[i:i + k]), ()):
            start = prev.get(j - 1)
            if start is None:
                start = (i, j)
                runs[start] = 0
            runs[start] += 1
            cur[j] = start
        prev = cur
    out = []
    for (i0, j0), m in sorted(runs.items()):
        last = m + k - 2  # offset of the run's last word from its first
        out.append({"a": [wa[i0][0], wa[i0 + last][1]], "b": [wb[j0][0], wb[j0 + last][1]],
                    "words": m + k - 1})
    return out


def passages_for_display(a: str, b: str, k: int = 5, limit: int = 200) -> list[dict[str, Any]]:
    """:func:`shared_passages` as the web page wants them: ``k`` lowered to the shorter text's
    word count (a text shorter than one shingle is shingled whole, so two such near-duplicates
    still show what they share), bounded work, and at most ``limit`` passages, longest first."""
    n = min(len(_WORD.findall(a)), len(_WORD.findall(b)))
    if n == 0:
        return []
    got = shared_passages(a, b, max(1, min(k, n)), max_occurrences=8)
    if len(got) > limit:
        got = sorted(got, key=lambda p: (-p["words"], p["a"][0], p["b"][0]))[:limit]
        got.sort(key=lambda p: (p["a"][0], p["b"][0]))
    return got
