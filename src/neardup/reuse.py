"""Reused passages: the runs of words that one text copies from another, inside texts that are
otherwise different (a copied paragraph in new writing), where the whole-text similarity is low.

**Fingerprints.** Each text's words (:mod:`neardup.text.words`: NFKC, case folded) are hashed
as overlapping word ``k``-grams, and *winnowing* keeps, of every window of ``window``
consecutive k-gram hashes, the smallest (the rightmost of equal ones), with its position.

**The guarantee.** Two texts that share a run of at least ``window + k - 1`` words (that is,
``window`` consecutive shared k-grams) hold an identical window of k-gram hashes, from which
both keep the same hash at the same offset: that pair of positions is a *seed*. So every shared
run of at least ``guaranteed_words = window + k - 1`` words is found, whatever else the texts
hold. ``min_words`` (the shortest passage reported) must be at least that.

**Passages.** Words are compared by 64-bit hashes of their keys. From each seed (one whose k
words differ, a collision of k-gram hashes, is dropped), the exact run is extended in both
directions while the words agree. Runs
that follow one another in both texts with at most ``max_gap`` words between them in each (a
changed, inserted or dropped word; a short re-ordering) are merged into one passage, and a
passage's ends are extended across such gaps wherever at least ``min_match`` words agree again
(so that a passage with a changed word every 20 words is found whole from one seed). Passages
of at least ``min_words`` words (counted in the first text) are reported, in reading order of
the first text, with character ranges in both original texts.

**Bounds.** A k-gram hash kept more than ``max_occurrences`` times in one text (boilerplate
repeated within it) seeds from its first occurrences only; the other repeats are still found
when a run reaches them by extension. Work per pair is O(words + seeds x passage length).

**Where it runs.** Splitting, keying and hashing the words of ASCII texts, and the comparison
of a pair of texts, are compiled (:mod:`neardup._kernels.passages`, whose plain-Python oracle
is in the tests); a corpus is compared on several threads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._kernels.passages import (
    count_words,
    hash_keys,
    pair_passages_many,
    winnow,
)
from ._kernels.passages import text_words as _text_words
from ._records import record
from ._threads import parallel
from .errors import ConfigError
from .text.scripts import UNSPACED
from .text.scripts import WORD as WORD_RE
from .text.words import ASCII_PUNCTUATION, word_key, word_keys
from .validate import check_int

__all__ = [
    "PassageConfig",
    "Passage",
    "PassageIndex",
    "ReuseMatch",
    "ReuseResult",
    "TextWords",
    "text_words",
    "words_many",
    "fingerprints",
    "fingerprints_many",
    "winnow_many",
    "reused_passages",
    "passages_with",
    "reuse_share",
    "find_reuse",
    "blank_tags",
]


@record(frozen=True)
class PassageConfig:
    """What counts as a reused passage.

    ``k``: words per fingerprinted k-gram; ``window``: k-grams per winnowing window;
    ``min_words``: the shortest passage reported, in words (default: the guarantee,
    ``window + k - 1``; it may not be lower); ``max_gap``: words of difference bridged
    inside a passage (in each text); ``min_match``: words that must agree again after a gap;
    ``max_occurrences``: seeds per repeated k-gram hash in one text; ``strip_html``: HTML
    tags (``<...>``) separate words like spaces, so that markup neither joins nor splits
    the words of a passage (offsets stay those of the original text)."""

    k: int = 5
    window: int = 12
    min_words: int | None = None
    max_gap: int = 3
    min_match: int = 2
    max_occurrences: int = 16
    strip_html: bool = False

    def __post_init__(self) -> None:
        check_int("k", self.k, 1, 64)
        check_int("window", self.window, 1, 1024)
        check_int("min_words", self.min_words, 1, none=True)
        check_int("max_gap", self.max_gap, 0, 64)
        check_int("min_match", self.min_match, 1, 64)
        check_int("max_occurrences", self.max_occurrences, 1)
        if not isinstance(self.strip_html, bool):
            raise ConfigError(f"strip_html={self.strip_html!r} is invalid: True or False")
        if self.min_words is not None and self.min_words < self.guaranteed_words:
            raise ConfigError(
                f"min_words={self.min_words} is invalid: at least window + k - 1 = "
                f"{self.guaranteed_words}, the length from which every shared run is found "
                "(lower window or k for shorter passages)"
            )

    @property
    def guaranteed_words(self) -> int:
        """Every shared run of at least this many words is found."""
        return self.window + self.k - 1

    @property
    def shortest(self) -> int:
        """The shortest passage reported, in words."""
        return self.min_words if self.min_words is not None else self.guaranteed_words


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

    def _find(self) -> None:
        ws = [(m.start(), m.end()) for m in _WORD.finditer(self.text)]
        n = len(ws)
        self._starts = np.fromiter((a for a, _ in ws), np.int64, n)
        self._ends = np.fromiter((b for _, b in ws), np.int64, n)

    @property
    def starts(self) -> np.ndarray:
        if self._starts is None:
            self._find()
        return self._starts

    @property
    def ends(self) -> np.ndarray:
        if self._ends is None:
            self._find()
        return self._ends

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
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)
_TAG = re.compile(r"<[^>\x00]*>")


def blank_tags(text: str) -> str:
    """``text`` with every HTML tag (``<...>``, as normalisation's ``strip_html`` finds them)
    replaced by as many spaces: the words between tags stand apart, at the same offsets."""
    if "<" not in text:
        return text
    return _TAG.sub(lambda m: " " * len(m.group()), text)


def _prepared(text: str, cfg: PassageConfig) -> str:
    return blank_tags(text) if cfg.strip_html else text


#: 1 for the ASCII punctuation that word keys leave out at a word's ends
_PUNCT = np.zeros(256, np.uint8)
_PUNCT[np.frombuffer(ASCII_PUNCTUATION.encode("ascii"), np.uint8)] = 1
_NO_U64 = np.zeros(0, np.uint64)
_NO_I64 = np.zeros(0, np.int64)
#: k-grams up to which texts are winnowed in one pass (with room for every k-gram)
_ONE_PASS = 1 << 20


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


def combine_kgrams(h: np.ndarray, k: int) -> np.ndarray:
    """The hash of every run of ``k`` consecutive values of ``h`` (``len(h) - k + 1`` of them,
    or none): each value multiplied by an odd constant per position, summed, and mixed
    (splitmix64's finaliser). Batch and pairwise code hash k-grams with this one function."""
    n = len(h) - k + 1
    if n <= 0:
        return np.zeros(0, np.uint64)
    acc = np.zeros(n, np.uint64)
    mult = np.uint64(1)
    with np.errstate(over="ignore"):
        for t in range(k):
            acc += h[t : t + n] * (mult | np.uint64(1))
            mult = mult * _M1 + np.uint64(t + 1)
        acc ^= acc >> np.uint64(30)
        acc *= _M2
        acc ^= acc >> np.uint64(27)
        acc *= _M3
        acc ^= acc >> np.uint64(31)
    return acc


def fingerprints(keys: Sequence[str] | np.ndarray, k: int, window: int) -> list[tuple[int, int]]:
    """``(hash, position)`` of the k-grams that winnowing keeps, in position order: of every
    ``window`` consecutive k-gram hashes the smallest (the rightmost of equal ones), each kept
    position once. A text of fewer than ``window`` k-grams keeps its smallest one (if any).
    ``keys``: the words' keys, or their :func:`word_hashes`."""
    h = keys if isinstance(keys, np.ndarray) else word_hashes(keys)
    got, _, pos = fingerprints_many_flat(h, np.array([0, len(h)], np.int64), k, window)
    return list(zip(got.tolist(), pos.tolist()))


@dataclass
class Passage:
    """One reused passage: words ``a_words`` = ``[start, end)`` of the first text and
    ``b_words`` of the second; ``a_chars``/``b_chars`` the character ranges in the original
    texts; ``words`` its length in the first text; ``matched`` the words of it that agree
    exactly in both (the rest are the bridged gaps)."""

    a_words: tuple[int, int]
    b_words: tuple[int, int]
    a_chars: tuple[int, int]
    b_chars: tuple[int, int]
    words: int
    matched: int
    runs: list[tuple[int, int, int]] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict:
        return {
            "a": list(self.a_chars),
            "b": list(self.b_chars),
            "words": self.words,
            "matched_words": self.matched,
        }


def _words_of(text: str, cfg: PassageConfig) -> TextWords:
    """:func:`text_words` of ``text`` as ``cfg`` reads it (HTML tags blanked), keeping the
    original text."""
    if not cfg.strip_html or not isinstance(text, str):
        return text_words(text, keep_keys=False)
    tw = text_words(blank_tags(text), keep_keys=False)
    tw.text = text
    return tw


def _sorted_fingerprints(
    fp: Sequence[tuple[int, int]] | None, words: TextWords, cfg: PassageConfig
) -> tuple[np.ndarray, np.ndarray]:
    """A text's fingerprints as arrays sorted by hash, then position (what the kernel takes)."""
    if fp is None:
        h, _, pos = fingerprints_many_flat(
            words.hashes, np.array([0, len(words)], np.int64), cfg.k, cfg.window
        )
    elif len(fp):
        arr = np.asarray(fp, dtype=np.uint64)
        h, pos = arr[:, 0], arr[:, 1].astype(np.int64)
    else:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    order = np.lexsort((pos, h))
    return h[order], pos[order]


def _passages_of_pair(
    ta: TextWords,
    tb: TextWords,
    fa: tuple[np.ndarray, np.ndarray],
    fb: tuple[np.ndarray, np.ndarray],
    cfg: PassageConfig,
) -> list[Passage]:
    """The passages of two texts from their sorted fingerprints (:func:`_sorted_fingerprints`)."""
    la, lb = len(ta), len(tb)
    words = np.concatenate([ta.hashes, tb.hashes])
    fh = np.concatenate([fa[0], fb[0]])
    fpos = np.concatenate([fa[1], fb[1]])
    rows, runs = pair_passages_many(
        words,
        np.array([0, la, la + lb], np.int64),
        fh,
        fpos,
        np.array([0, len(fa[0]), len(fh)], np.int64),
        _ZERO,
        _ONE,
        0,
        1,
        cfg.k,
        cfg.max_gap,
        cfg.min_match,
        cfg.max_occurrences,
        cfg.shortest,
    )
    if len(rows) == 0:
        return []
    a_st, a_en, b_st, b_en = ta.starts, ta.ends, tb.starts, tb.ends
    out = []
    for _, i0, i1, j0, j1, matched, r0, nr in rows.tolist():
        out.append(
            Passage(
                (i0, i1),
                (j0, j1),
                (int(a_st[i0]), int(a_en[i1 - 1])),
                (int(b_st[j0]), int(b_en[j1 - 1])),
                i1 - i0,
                matched,
                [tuple(r) for r in runs[r0 : r0 + nr].tolist()],
            )
        )
    out.sort(key=lambda p: (p.a_words, p.b_words))
    return out


_ZERO = np.zeros(1, np.int64)
_ONE = np.ones(1, np.int64)


def reused_passages(
    a: str | TextWords,
    b: str | TextWords,
    config: PassageConfig | None = None,
    *,
    fingerprints_a: Sequence[tuple[int, int]] | None = None,
    fingerprints_b: Sequence[tuple[int, int]] | None = None,
) -> list[Passage]:
    """The passages of ``b`` reused in ``a`` (and so of ``a`` in ``b``), in reading order of
    ``a``; see the module docstring for what is found and the guarantee. ``fingerprints_a``/
    ``_b``: the texts' :func:`fingerprints` with the same ``k`` and ``window``, if known."""
    cfg = config or PassageConfig()
    ta = a if isinstance(a, TextWords) else _words_of(a, cfg)
    tb = b if isinstance(b, TextWords) else _words_of(b, cfg)
    return _passages_of_pair(
        ta,
        tb,
        _sorted_fingerprints(fingerprints_a, ta, cfg),
        _sorted_fingerprints(fingerprints_b, tb, cfg),
        cfg,
    )


def passages_with(
    query: str | TextWords,
    texts: Sequence[str],
    config: PassageConfig | None = None,
    *,
    deadline: float | None = None,
    batch: int = 64,
) -> tuple[list[list[Passage]], list[int]]:
    """The passages ``query`` shares with each of ``texts`` (what :func:`reused_passages` of
    ``query`` and each text finds), compared ``batch`` texts at a time by the kernel.
    ``deadline`` (a :func:`time.monotonic` time): no new batch is started after it. Returns
    the passages of each text compared (the first ones: fewer than ``texts`` when the
    deadline stopped it) and each one's number of words."""
    import time

    cfg = config or PassageConfig()
    q = query if isinstance(query, TextWords) else _words_of(query, cfg)
    fq = _sorted_fingerprints(None, q, cfg)
    if cfg.strip_html:
        texts = [blank_tags(t) for t in texts]
    out: list[list[Passage]] = []
    sizes: list[int] = []
    for s0 in range(0, len(texts), batch):
        if deadline is not None and s0 and time.monotonic() > deadline:
            break
        part = texts[s0 : s0 + batch]
        n = len(part)
        # one split gives the words and where they are (the ranges of the passages found)
        data, off = _encode(part)
        words, woff, w_start, w_end, foreign = _split(data, off, True)
        for t in np.unique(
            np.searchsorted(woff, np.flatnonzero(foreign), side="right") - 1
        ).tolist():  # the texts with non-ASCII words: keyed here
            w = slice(woff[t], woff[t + 1])
            _key_foreign(data[off[t] : off[t + 1]], words[w], w_start[w], w_end[w], foreign[w])
        sizes.extend(np.diff(woff).tolist())
        fh, fdoc, fpos = fingerprints_many_flat(words, woff, cfg.k, cfg.window)
        order = order_by_text_then_hash(fdoc, fh, n)
        all_words = np.concatenate([q.hashes, words])
        all_woff = np.concatenate([[0], len(q) + woff]).astype(np.int64)
        all_fh = np.concatenate([fq[0], fh[order]])
        all_fpos = np.concatenate([fq[1], fpos[order]])
        all_foff = np.concatenate(
            [[0], len(fq[0]) + np.searchsorted(fdoc[order], np.arange(n + 1))]
        )
        rows, runs = pair_passages_many(
            all_words,
            all_woff,
            all_fh,
            all_fpos,
            all_foff.astype(np.int64),
            np.zeros(n, np.int64),
            np.arange(1, n + 1, dtype=np.int64),
            0,
            n,
            cfg.k,
            cfg.max_gap,
            cfg.min_match,
            cfg.max_occurrences,
            cfg.shortest,
        )
        found: list[list[Passage]] = [[] for _ in range(n)]
        if len(rows):
            b_start, b_end = _ranges_in(
                part, data, off, woff, w_start, w_end, rows[:, 0], rows[:, 3], rows[:, 4]
            )
            a_st, a_en = q.starts, q.ends
            for (p, i0, i1, j0, j1, matched, r0, nr), bs, be in zip(
                rows.tolist(), b_start.tolist(), b_end.tolist()
            ):
                found[p].append(
                    Passage(
                        (i0, i1),
                        (j0, j1),
                        (int(a_st[i0]), int(a_en[i1 - 1])),
                        (bs, be),
                        i1 - i0,
                        matched,
                        [tuple(r) for r in runs[r0 : r0 + nr].tolist()],
                    )
                )
            for f in found:
                f.sort(key=lambda x: (x.a_words, x.b_words))
        out.extend(found)
    return out, sizes


def order_by_text_then_hash(doc: np.ndarray, hashes: np.ndarray, n: int) -> np.ndarray:
    """The order of fingerprints by text, then hash, then position, from the winnowing's
    order (by text, then position): two stable sorts, the second of small integers (a radix
    sort): faster than ``np.lexsort((pos, hashes, doc))`` (1.6x for 4,000)."""
    by_hash = np.argsort(hashes, kind="stable")
    small = np.int16 if n < (1 << 15) else np.int32 if n < (1 << 31) else np.int64
    return by_hash[np.argsort(doc[by_hash].astype(small), kind="stable")]


def _ranges_in(
    texts: Sequence[str],
    data: np.ndarray,
    off: np.ndarray,
    woff: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    doc: np.ndarray,
    w0: np.ndarray,
    w1: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_char_ranges` from a split already made (:func:`_split` with ``where``: the
    words' byte offsets in each text): ``[start of word w0, end of word w1 - 1)`` in
    ``texts[doc]``, in characters."""
    first, last = woff[doc] + w0, woff[doc] + w1 - 1
    a, b = starts[first], ends[last]
    for t in np.unique(doc).tolist():
        if texts[t].isascii():
            continue
        chars = np.zeros(off[t + 1] - off[t] + 1, np.int64)  # bytes -> characters
        np.cumsum((data[off[t] : off[t + 1]] & 0xC0) != 0x80, out=chars[1:])
        at = doc == t
        a[at], b[at] = chars[a[at]], chars[b[at]]
    return a, b


def reuse_share(passages: Sequence[Passage], n_words: int, side: str = "a") -> float:
    """The share of a text's ``n_words`` words that lie in ``passages`` (``side`` "a": the
    first text's ranges, "b": the second's), overlaps counted once."""
    if n_words <= 0:
        return 0.0
    spans = sorted(p.a_words if side == "a" else p.b_words for p in passages)
    covered = 0
    end = 0
    for s, e in spans:
        s = max(s, end)
        if e > s:
            covered += e - s
            end = e
    return covered / n_words


def winnow_many(
    kgram_hashes: np.ndarray, offsets: np.ndarray, window: int, block: int = 1 << 20
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fingerprints` of many texts at once: ``kgram_hashes`` (``uint64``) of all texts
    one after the other, text ``d``'s being ``[offsets[d], offsets[d + 1])``. Returns
    ``(hash, text, position)`` arrays, in text then position order: for each text what
    :func:`fingerprints` keeps. Windows are scanned ``block`` at a time (bounded memory)."""
    from numpy.lib.stride_tricks import sliding_window_view

    kh = np.asarray(kgram_hashes, dtype=np.uint64)
    off = np.asarray(offsets, dtype=np.int64)
    counts = np.diff(off)
    w = int(window)
    best_parts: list[np.ndarray] = []
    # texts of at least ``w`` k-grams: every window inside the text
    full = np.flatnonzero(counts >= w)
    nwin = counts[full] - w + 1
    if len(full) and len(kh) >= w:
        starts = np.repeat(off[full], nwin) + (
            np.arange(int(nwin.sum()), dtype=np.int64) - np.repeat(np.cumsum(nwin) - nwin, nwin)
        )
        view = sliding_window_view(kh, w)
        for s0 in range(0, len(starts), block):
            st = starts[s0 : s0 + block]
            win = view[st][:, ::-1]
            best_parts.append(st + (w - 1) - np.argmin(win, axis=1))
    best = np.concatenate(best_parts) if best_parts else np.zeros(0, np.int64)
    # texts of fewer k-grams: one window, the whole text
    short = np.flatnonzero((counts > 0) & (counts < w))
    if len(short):
        extra = np.empty(len(short), np.int64)
        for t, d in enumerate(short.tolist()):
            seg = kh[off[d] : off[d + 1]]
            extra[t] = off[d] + len(seg) - 1 - int(np.argmin(seg[::-1]))
        best = np.concatenate([best, extra])
    if len(best) == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    best.sort(kind="stable")
    keep = np.ones(len(best), bool)
    keep[1:] = best[1:] != best[:-1]  # a position kept by consecutive windows: once
    best = best[keep]
    doc = np.searchsorted(off, best, side="right") - 1
    return kh[best], doc, best - off[doc]


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
        from ._extras import require

        require("pandas", "tables", "ReuseResult.to_pandas")
        return self.to_arrow(table).to_pandas()

    def to_polars(self, table: str = "pairs") -> Any:
        """The ``pairs`` or ``passages`` table as a ``polars.DataFrame`` (needs polars)."""
        from ._extras import require

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
    from ._columns import table_columns, text_column

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
    rows = [chunks[k][0] for k in sorted(chunks)]
    rows = np.concatenate(rows) if rows else np.zeros((0, 8), np.int64)
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


@dataclass
class ReuseMatch:
    """An indexed text that shares passages with a checked text: its ``id``, the
    ``passages`` (``a`` ranges in the checked text, ``b`` ranges in the indexed one), and the
    share of each text's words they cover (``share_query``: how much of the checked text is
    reused; ``share_source``: how much of the indexed text it took)."""

    id: str
    passages: list[Passage]
    share_query: float
    share_source: float


class PassageIndex:
    """Texts kept in memory to find which of them a new text reuses passages from (the
    "search" side of reuse detection: one text against a collection).

    >>> ix = PassageIndex()
    >>> ix.add("a", some_article)
    >>> ix.check(new_text)          # [ReuseMatch(id="a", passages=[...], ...)]

    ``config``: what counts as a passage (:class:`PassageConfig`); ``max_doc_freq``: a
    fingerprint held by more than this many indexed texts proposes none of them (a phrase
    everybody uses; ``None``: no limit). :meth:`check` finds every indexed text that shares a
    run of at least ``config.guaranteed_words`` words with the checked one (among fingerprints
    under the limit), with the same passages as :func:`reused_passages`."""

    def __init__(self, config: PassageConfig | None = None, *, max_doc_freq: int | None = None):
        self.config = config or PassageConfig()
        check_int("max_doc_freq", max_doc_freq, 1, none=True)
        self.max_doc_freq = max_doc_freq
        self._docs: dict[str, tuple[TextWords, tuple[np.ndarray, np.ndarray]]] = {}
        self._where: dict[int, set[str]] = {}

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, id: object) -> bool:  # noqa: A002
        return id in self._docs

    def add(self, id: str, text: str) -> None:  # noqa: A002
        """Index ``text`` under ``id`` (an id already present is a ``ConfigError``)."""
        if not isinstance(id, str) or not id:
            raise ConfigError(f"id {id!r} is invalid: a non-empty string")
        if id in self._docs:
            raise ConfigError(f"id {id!r} is already in the index")
        tw = _words_of(text, self.config)
        fp = _sorted_fingerprints(None, tw, self.config)
        self._docs[id] = (tw, fp)
        for h in np.unique(fp[0]).tolist():
            self._where.setdefault(h, set()).add(id)

    def remove(self, id: str) -> bool:  # noqa: A002
        """Remove a text; whether it was there."""
        got = self._docs.pop(id, None)
        if got is None:
            return False
        for h in np.unique(got[1][0]).tolist():
            ids = self._where.get(h)
            if ids is not None:
                ids.discard(id)
                if not ids:
                    del self._where[h]
        return True

    def check(
        self, text: str, *, min_share: float = 0.0, top_k: int | None = None
    ) -> list[ReuseMatch]:
        """The indexed texts ``text`` shares passages with, most reused first (by the share
        of ``text`` they cover, then id); ``min_share``: leave out those that cover less of
        ``text``; ``top_k``: at most that many."""
        check_int("top_k", top_k, 1, none=True)
        cfg = self.config
        q = _words_of(text, cfg)
        fq = _sorted_fingerprints(None, q, cfg)
        cand: set[str] = set()
        for h in np.unique(fq[0]).tolist():
            ids = self._where.get(h)
            if ids and (self.max_doc_freq is None or len(ids) <= self.max_doc_freq):
                cand.update(ids)
        out = []
        for doc_id in cand:
            tw, fp = self._docs[doc_id]
            found = _passages_of_pair(q, tw, fq, fp, cfg)
            if not found:
                continue
            share = reuse_share(found, len(q))
            if share < min_share:
                continue
            out.append(ReuseMatch(doc_id, found, share, reuse_share(found, len(tw), "b")))
        out.sort(key=lambda m: (-m.share_query, m.id))
        return out[:top_k] if top_k is not None else out


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorised."""
    counts = np.maximum(counts, 0)
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.cumsum(counts) - counts
    return np.repeat(starts - first, counts) + np.arange(total, dtype=np.int64)


def fingerprints_many(
    hashes: Sequence[np.ndarray], k: int, window: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fingerprints` of many texts given as their :func:`word_hashes`, at once:
    ``(hash, text, position)`` arrays, as :func:`winnow_many` returns them."""
    n = len(hashes)
    sizes = np.fromiter((len(h) for h in hashes), np.int64, n)
    woff = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=woff[1:])
    words = np.concatenate(hashes) if n else np.zeros(0, np.uint64)
    return fingerprints_many_flat(words, woff, k, window)


def fingerprints_many_flat(
    words: np.ndarray, word_offsets: np.ndarray, k: int, window: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fingerprints_many` of texts given as one array of word hashes, text ``t``'s
    being ``words[word_offsets[t]:word_offsets[t + 1]]`` (as :func:`words_many` gives them):
    the k-grams hashed as :func:`combine_kgrams` does and winnowed as :func:`winnow_many`
    does, by the compiled kernel, on several threads."""
    words = np.ascontiguousarray(words, dtype=np.uint64)
    woff = np.ascontiguousarray(word_offsets, dtype=np.int64)
    n = len(woff) - 1
    coef = np.empty(k, np.uint64)
    mult = 1
    for t in range(k):
        coef[t] = mult | 1
        mult = (mult * 0x9E3779B97F4A7C15 + t + 1) & 0xFFFFFFFFFFFFFFFF
    weights = np.diff(woff)
    room = np.maximum(weights - k + 1, 0)  # k-grams per text: the most it can keep
    if 0 < room.sum() <= _ONE_PASS:
        # few words (a check's candidates): one pass into room for every k-gram, positions
        # first set to -1, then the kept ones closed up (no counting pass before)
        roff = np.zeros(n + 1, np.int64)
        np.cumsum(room, out=roff[1:])
        out_h = np.empty(int(roff[-1]), np.uint64)
        out_pos = np.full(int(roff[-1]), -1, np.int64)
        parallel(
            lambda lo, hi: winnow(words, woff, coef, window, _NO_I64, out_h, out_pos, roff, lo, hi),
            n,
            weights,
        )
        kept = out_pos >= 0
        return (out_h[kept], np.repeat(np.arange(n, dtype=np.int64), room)[kept], out_pos[kept])
    counts = np.zeros(n, np.int64)
    parallel(
        lambda lo, hi: winnow(words, woff, coef, window, counts, _NO_U64, _NO_I64, _NO_I64, lo, hi),
        n,
        weights,
    )
    foff = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=foff[1:])
    total = int(foff[-1])
    out_h = np.empty(total, np.uint64)
    out_pos = np.empty(total, np.int64)
    if total:
        parallel(
            lambda lo, hi: winnow(words, woff, coef, window, counts, out_h, out_pos, foff, lo, hi),
            n,
            weights,
        )
    return out_h, np.repeat(np.arange(n, dtype=np.int64), counts), out_pos
