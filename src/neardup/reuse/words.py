"""The words of texts for reuse detection: split at white space (and apart in scripts written
without spaces), keyed and hashed (:mod:`neardup.text.words`; the compiled kernel for ASCII
words), with their offsets in the text (:class:`TextWords`); HTML tags blanked
(:func:`blank_tags`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._kernels.passages import count_words, hash_keys
from .._kernels.passages import text_words as _text_words
from .._threads import parallel
from ..errors import ConfigError
from ..text.normalize import HTML_TAG
from ..text.scripts import UNSPACED
from ..text.scripts import WORD as WORD_RE
from ..text.words import ASCII_PUNCTUATION, word_key, word_keys


class TextWords:
    """A text's words: the ``uint64`` hash of each comparison key (``hashes``: words are
    compared by these), where each word starts and ends in the text (character offsets,
    ``int64`` arrays ``starts`` and ``ends``, found when first asked for) and the keys
    themselves (``keys``, unless not kept)."""

    __slots__ = ("text", "hashes", "keys", "_starts", "_ends")

    def __init__(self, text: str, hashes: np.ndarray, keys: list[str] | None = None):
        self.text = text
        self.hashes = hashes
        self.keys = keys
        self._starts: np.ndarray | None = None
        self._ends: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.hashes)

    def _find(self) -> tuple[np.ndarray, np.ndarray]:
        ws = [(m.start(), m.end()) for m in _WORD.finditer(self.text)]
        n = len(ws)
        self._starts = starts = np.fromiter((a for a, _ in ws), np.int64, n)
        self._ends = ends = np.fromiter((b for _, b in ws), np.int64, n)
        return starts, ends

    @property
    def starts(self) -> np.ndarray:
        return self._find()[0] if self._starts is None else self._starts

    @property
    def ends(self) -> np.ndarray:
        return self._find()[1] if self._ends is None else self._ends

    @property
    def spans(self) -> list[tuple[int, int]]:
        """``(start, end)`` of every word."""
        return list(zip(self.starts.tolist(), self.ends.tolist()))


def text_words(text: str, keep_keys: bool = True) -> TextWords:
    """The words of ``text`` (see :mod:`neardup.text.words`); ``keep_keys=False`` keeps only
    their hashes (8 bytes a word instead of a string each: what a corpus needs). The text is
    split, and its ASCII words keyed and hashed, by the compiled kernel, which also gives the
    words' offsets; only words with other characters are keyed in Python (NFKC, case
    folding)."""
    if not isinstance(text, str):
        raise ConfigError(f"text is {type(text).__name__}, not str")
    data = np.frombuffer(text.encode("utf-8", "surrogatepass"), np.uint8)
    hashes, _, starts, ends, foreign = _split(data, np.array([0, len(data)], np.int64), True)
    if foreign.any():
        _key_foreign(data, hashes, starts, ends, foreign)
    if not text.isascii():  # byte offsets -> character offsets
        chars = np.zeros(len(data) + 1, np.int64)
        np.cumsum((data & 0xC0) != 0x80, out=chars[1:])
        starts, ends = chars[starts], chars[ends]
    tw = TextWords(text, hashes, word_keys(text) if keep_keys else None)
    tw._starts, tw._ends = starts, ends
    return tw


_WORD = WORD_RE


def blank_tags(text: str) -> str:
    """``text`` with every HTML tag (``<...>``, as normalisation's ``strip_html`` finds them:
    :data:`neardup.text.normalize.HTML_TAG`) replaced by as many spaces: the words between
    tags stand apart, at the same offsets."""
    if "<" not in text:
        return text
    return HTML_TAG.sub(lambda m: " " * len(m.group()), text)


#: 1 for the ASCII punctuation that word keys leave out at a word's ends
_PUNCT = np.zeros(256, np.uint8)
_PUNCT[np.frombuffer(ASCII_PUNCTUATION.encode("ascii"), np.uint8)] = 1


def word_hashes(keys: Sequence[str]) -> np.ndarray:
    """``uint64`` hash of each word key (of its UTF-8 bytes; see
    :mod:`neardup._kernels.passages`)."""
    data, off = _encode(keys)
    out = np.empty(len(keys), np.uint64)
    if len(keys):
        hash_keys(data, off, out)
    return out


def _split(
    data: np.ndarray, offsets: np.ndarray, where: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The words of the UTF-8 texts ``data[offsets[t]:offsets[t + 1]]``:
    ``(hashes, word_offsets, starts, ends, foreign)``; ``foreign`` marks the words whose hash
    is still to be computed (non-ASCII); ``starts``/``ends`` (byte offsets in each text) only
    with ``where``. The kernel splits at white space; the words that hold characters of a
    script written without spaces are then cut into those characters (each a word) and the
    runs of other characters between them (:mod:`neardup.text.scripts`)."""
    got = _split_spaces(data, offsets, where)
    return _apart(data, offsets, *got, where) if got[4].any() else got


def _apart(
    data: np.ndarray,
    offsets: np.ndarray,
    hashes: np.ndarray,
    woff: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    foreign: np.ndarray,
    where: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_split`'s words with those holding characters of unspaced scripts cut apart."""
    texts = np.unique(np.searchsorted(woff, np.flatnonzero(foreign), side="right") - 1)
    cut: dict[int, tuple] = {}  # text -> its words (hashes, starts, ends, foreign), cut
    for t in texts.tolist():
        one = data[offsets[t] : offsets[t + 1]]
        w = slice(woff[t], woff[t + 1])
        if where:
            h, st, en, fo = hashes[w], starts[w], ends[w], foreign[w]
        else:
            h, _, st, en, fo = _split_spaces(one, np.array([0, len(one)], np.int64), True)
        raw = one.tobytes()
        parts = None
        for j in np.flatnonzero(fo).tolist():
            word = raw[st[j] : en[j]].decode("utf-8", "surrogatepass")
            if UNSPACED.search(word) is None:
                continue
            if parts is None:
                parts = {}
            at, pos, spans = 0, st[j], []
            for m in WORD_RE.finditer(word):  # byte offsets of each piece
                pos += len(word[at : m.start()].encode("utf-8", "surrogatepass"))
                size = len(m.group().encode("utf-8", "surrogatepass"))
                # an ASCII piece is hashed here, the others are still to be keyed
                ascii_hash = (
                    int(word_hashes([word_key(m.group())])[0]) if m.group().isascii() else None
                )
                spans.append((pos, pos + size, ascii_hash))
                pos, at = pos + size, m.end()
            parts[j] = spans
        if parts is None:
            continue
        # the text's words as runs of those kept and the pieces of each word cut
        runs: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        prev = 0
        for j in sorted(parts):
            runs.append((h[prev:j], st[prev:j], en[prev:j], fo[prev:j]))
            pieces = parts[j]
            runs.append(
                (
                    np.array([0 if x is None else x for _, _, x in pieces], np.uint64),
                    np.array([a for a, _, _ in pieces], np.int64),
                    np.array([b for _, b, _ in pieces], np.int64),
                    np.array([x is None for _, _, x in pieces], np.uint8),
                )
            )
            prev = j + 1
        runs.append((h[prev:], st[prev:], en[prev:], fo[prev:]))
        cut[t] = tuple(
            np.concatenate([r[i] for r in runs]).astype(dt)
            for i, dt in enumerate((np.uint64, np.int64, np.int64, np.uint8))
        )
    if not cut:
        return hashes, woff, starts, ends, foreign
    counts = np.diff(woff)
    new_counts = counts.copy()
    for t, got in cut.items():
        new_counts[t] = len(got[0])
    nwoff = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(new_counts, out=nwoff[1:])
    total = int(nwoff[-1])
    nh, nfo = np.empty(total, np.uint64), np.empty(total, np.uint8)
    ns, ne = (np.empty(total, np.int64), np.empty(total, np.int64)) if where else (starts, ends)
    prev = 0  # the texts between the cut ones move as blocks
    for t in [*sorted(cut), len(counts)]:
        a, b, shift = woff[prev], woff[t], nwoff[prev] - woff[prev]
        nh[a + shift : b + shift], nfo[a + shift : b + shift] = hashes[a:b], foreign[a:b]
        if where:
            ns[a + shift : b + shift], ne[a + shift : b + shift] = starts[a:b], ends[a:b]
        if t < len(counts):
            h, st, en, fo = cut[t]
            w = slice(nwoff[t], nwoff[t + 1])
            nh[w], nfo[w] = h, fo
            if where:
                ns[w], ne[w] = st, en
        prev = t + 1
    return nh, nwoff, ns, ne, nfo


def _split_spaces(
    data: np.ndarray, offsets: np.ndarray, where: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The words of the UTF-8 texts that the kernel finds between white space (see
    :func:`_split`)."""
    n = len(offsets) - 1
    weights = np.diff(offsets)
    counts = np.empty(n, np.int64)
    parallel(lambda lo, hi: count_words(data, offsets, counts, lo, hi), n, weights)
    woff = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=woff[1:])
    total = int(woff[-1])
    hashes = np.empty(total, np.uint64)
    starts = np.empty(total if where else 0, np.int64)
    ends = np.empty(total if where else 0, np.int64)
    foreign = np.empty(total, np.uint8)
    parallel(
        lambda lo, hi: _text_words(
            data, offsets, woff, _PUNCT, hashes, starts, ends, foreign, lo, hi
        ),
        n,
        weights,
    )
    return hashes, woff, starts, ends, foreign


def _key_foreign(
    data: np.ndarray, hashes: np.ndarray, starts: np.ndarray, ends: np.ndarray, foreign: np.ndarray
) -> None:
    """Hash the words marked ``foreign`` of one text (``data``: its UTF-8 bytes; ``starts``/
    ``ends``: its words' byte offsets) from their keys (:func:`word_key`)."""
    at = np.flatnonzero(foreign)
    raw = data.tobytes()
    keys = [
        word_key(raw[s:e].decode("utf-8", "surrogatepass"))
        for s, e in zip(starts[at].tolist(), ends[at].tolist())
    ]
    hashes[at] = word_hashes(keys)


def _encode(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``texts`` as one UTF-8 buffer and the offsets of each text in it."""
    enc = [t.encode("utf-8", "surrogatepass") for t in texts]
    off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, enc), np.int64, len(enc)), out=off[1:])
    return np.frombuffer(b"".join(enc), np.uint8), off


def words_many(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The word hashes of many texts at once: ``(hashes, word_offsets)``, text ``t``'s being
    ``hashes[word_offsets[t]:word_offsets[t + 1]]`` (as :func:`text_words` gives them). All
    texts go through the kernel together; the few words with non-ASCII characters are then
    keyed in Python, text by text."""
    data, off = _encode(texts)
    hashes, woff, _, _, foreign = _split(data, off, False)
    marked = np.flatnonzero(foreign)
    if len(marked):
        for t in np.unique(np.searchsorted(woff, marked, side="right") - 1).tolist():
            one = data[off[t] : off[t + 1]]
            h, _, st, en, fo = _split(one, np.array([0, len(one)], np.int64), True)
            _key_foreign(one, h, st, en, fo)
            hashes[woff[t] : woff[t + 1]] = h
    return hashes, woff
