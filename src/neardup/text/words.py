"""Words of a text with their character offsets, compared as the index compares them.

A word is a maximal run of non-white-space characters, except that each character of a script
written without spaces (Chinese, Japanese, Thai, ...: :mod:`neardup.text.scripts`) is a word
of its own; its comparison key is the word after
NFKC normalisation and case folding (what :func:`neardup.normalize` does to whole texts by
default), without the punctuation at its ends. Offsets are into the *original*
string, so that a caller can cut or highlight the words in the text as the user wrote it.
"""

from __future__ import annotations

import unicodedata

from .scripts import UNSPACED
from .scripts import WORD as _WORD


def _strip_punctuation(word: str) -> str:
    """``word`` without the punctuation at its ends ("weekends," -> "weekends"); a word of
    punctuation only is kept as it is."""
    a, b = 0, len(word)
    while a < b and unicodedata.category(word[a])[0] == "P":
        a += 1
    while b > a and unicodedata.category(word[b - 1])[0] == "P":
        b -= 1
    return word[a:b] if a < b else word


def word_key(word: str) -> str:
    """The comparison key of one word: NFKC, case folded, without punctuation at its ends
    (so that "Weekends," and "weekends." are the same word)."""
    if not word.isascii():
        word = unicodedata.normalize("NFKC", word)
    if not (word[:1].isalnum() and word[-1:].isalnum()):
        word = _strip_punctuation(word)
    return word.casefold()


def words(text: str) -> list[tuple[int, int, str]]:
    """``(start, end, key)`` of every word of ``text``: character offsets and comparison key."""
    return [(m.start(), m.end(), word_key(m.group())) for m in _WORD.finditer(text)]


def count_words(text: str) -> int:
    """How many words ``text`` has."""
    return sum(1 for _ in _WORD.finditer(text))


#: the ASCII characters of Unicode's punctuation categories (P*): what :func:`word_key` strips
#: from the ends of an ASCII word (the symbols ``$+<=>^`|~`` are not punctuation and stay)
ASCII_PUNCTUATION = "".join(
    chr(c) for c in range(128) if unicodedata.category(chr(c)).startswith("P")
)


def word_keys(text: str) -> list[str]:
    """The comparison keys of the words of ``text``, in order: ``[word_key(w) for w in
    text.split()]`` (each character of an unspaced script apart), with a fast path for ASCII
    text (one lowercasing of the whole text, then C-level string methods per word)."""
    if text.isascii():
        p = ASCII_PUNCTUATION
        return [w.strip(p) or w for w in text.lower().split()]
    if UNSPACED.search(text) is None:
        return [word_key(w) for w in text.split()]
    return [word_key(w) for w in _WORD.findall(text)]
