"""Reused passages between texts: what counts as one (:class:`PassageConfig`), the passages of
two texts (:func:`reused_passages`) and of one text with many (:func:`passages_with`), and the
share of a text they cover (:func:`reuse_share`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .._kernels.passages import pair_passages_many
from .._records import record
from ..errors import ConfigError
from ..validate import check_int
from .winnowing import fingerprints_many_flat, order_by_text_then_hash
from .words import TextWords, _encode, _key_foreign, _split, blank_tags, text_words


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


def _prepared(text: str, cfg: PassageConfig) -> str:
    return blank_tags(text) if cfg.strip_html else text


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
