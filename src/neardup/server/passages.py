"""Shared passages of two texts, for highlighting them side by side: the passages are found by
:func:`neardup.reuse.shared_passages` (the compiled passage search of reuse detection; see
there for what a passage is), and bounded here for the web page: a time limit, and at most
``limit`` passages, the longest.
"""

from __future__ import annotations

import time
from typing import Any

from ..reuse import shared_passages, text_words
from ..text.words import word_key, word_keys, words

__all__ = [
    "passages_for_display",
    "passages_within",
    "shared_passages",
    "word_key",
    "word_keys",
    "words",
]


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
    :func:`~neardup.text.words.word_keys`, where the caller has them (no longer needed: the
    words are found by the compiled kernel)."""
    if deadline is not None and time.monotonic() > deadline:
        return [], False
    ta, tb = text_words(a, keep_keys=False), text_words(b, keep_keys=False)
    n = min(len(ta), len(tb))
    if n == 0:
        return [], True
    got = shared_passages(ta, tb, max(1, min(k, n)), max_occurrences=8)
    if deadline is not None and time.monotonic() > deadline:
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
