"""Scripts written without spaces between words.

Chinese, Japanese, Thai, Lao, Khmer, Myanmar and Tibetan put no space between words, so a
sentence of them is one whitespace-separated "word" and a whole paragraph may be one word
shingle: near-copies of it would share nothing. Everywhere neardup cuts a text into words
(word shingles, reused passages, the page's highlighting), each character of these scripts is
a word of its own, so that word shingles become character n-grams inside such runs and stay
words elsewhere: a text that mixes scripts ("iPhone 15 专业版 256GB") is cut as
``iphone 15 专 业 版 256gb``. Korean is written with spaces and keeps its words.
"""

from __future__ import annotations

import re

#: The character ranges of the scripts written without spaces between words.
UNSPACED_RANGES = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u0f00-\u0fff"  # Tibetan
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # Katakana (and its half-width forms)
    "\u3100-\u312f\u31a0-\u31bf"  # Bopomofo
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # Han (CJK ideographs)
    "\U00020000-\U0003134f"  # Han, supplementary planes
)
#: one character of such a script
UNSPACED = re.compile(f"[{UNSPACED_RANGES}]")
#: a word: one character of such a script, or a run of other characters that are not space
WORD = re.compile(f"[{UNSPACED_RANGES}]|[^\\s{UNSPACED_RANGES}]+")


def words_apart(text: str) -> str:
    """``text`` (words separated by single spaces, as normalisation leaves it) with every
    character of a script written without spaces standing apart, as a word of its own."""
    if text.isascii() or UNSPACED.search(text) is None:
        return text
    return " ".join(WORD.findall(text))
