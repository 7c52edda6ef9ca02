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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import xxhash

from .errors import ConfigError
from .text.words import word_keys
from .validate import check_int

__all__ = ["PassageConfig", "Passage", "PassageIndex", "ReuseMatch", "ReuseResult",
           "TextWords", "text_words", "fingerprints", "winnow_many", "reused_passages",
           "reuse_share", "find_reuse"]

@dataclass(frozen=True)
class PassageConfig:
    """What counts as a reused passage.

    ``k``: words per fingerprinted k-gram; ``window``: k-grams per winnowing window;
    ``min_words``: the shortest passage reported, in words (default: the guarantee,
    ``window + k - 1``; it may not be lower); ``max_gap``: words of difference bridged
    inside a passage (in each text); ``min_match``: words that must agree again after a gap;
    ``max_occurrences``: seeds per repeated k-gram hash in one text."""

    k: int = 5
    window: int = 12
    min_words: int | None = None
    max_gap: int = 3
    min_match: int = 2
    max_occurrences: int = 16

    def __post_init__(self) -> None:
        check_int("k", self.k, 1, 64)
        check_int("window", self.window, 1, 1024)
        check_int("min_words", self.min_words, 1, none=True)
        check_int("max_gap", self.max_gap, 0, 64)
        check_int("min_match", self.min_match, 1, 64)
        check_int("max_occurrences", self.max_occurrences, 1)
        if self.min_words is not None and self.min_words < self.guaranteed_words:
            raise ConfigError(
                f"min_words={self.min_words} is invalid: at least window + k - 1 = "
                f"{self.guaranteed_words}, the length from which every shared run is found "
                "(lower window or k for shorter passages)")

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
    their hashes (8 bytes a word instead of a string each: what a corpus needs)."""
    if not isinstance(text, str):
        raise ConfigError(f"text is {type(text).__name__}, not str")
    keys = word_keys(text)
    return TextWords(text, word_hashes(keys), keys if keep_keys else None)


_WORD = re.compile(r"\S+")
_M1 = np.uint64(0x9E3779B97F4A7C15)
_M2 = np.uint64(0xBF58476D1CE4E5B9)
_M3 = np.uint64(0x94D049BB133111EB)


def word_hashes(keys: Sequence[str]) -> np.ndarray:
    """``uint64`` hash of each word key (xxh3 of its UTF-8 bytes)."""
    h = xxhash.xxh3_64_intdigest
    return np.fromiter((h(w.encode("utf-8", "surrogatepass")) for w in keys), np.uint64,
                       len(keys))


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
            acc += h[t:t + n] * (mult | np.uint64(1))
            mult = mult * _M1 + np.uint64(t + 1)
        acc ^= acc >> np.uint64(30)
        acc *= _M2
        acc ^= acc >> np.uint64(27)
        acc *= _M3
        acc ^= acc >> np.uint64(31)
    return acc


def fingerprints(keys: Sequence[str] | np.ndarray, k: int, window: int
                 ) -> list[tuple[int, int]]:
    """``(hash, position)`` of the k-grams that winnowing keeps, in position order: of every
    ``window`` consecutive k-gram hashes the smallest (the rightmost of equal ones), each kept
    position once. A text of fewer than ``window`` k-grams keeps its smallest one (if any).
    ``keys``: the words' keys, or their :func:`word_hashes`."""
    h = keys if isinstance(keys, np.ndarray) else word_hashes(keys)
    kh = combine_kgrams(h, k)
    got, _, pos = winnow_many(kh, np.array([0, len(kh)], np.int64), window)
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
        return {"a": list(self.a_chars), "b": list(self.b_chars), "words": self.words,
                "matched_words": self.matched}


def _seeds(a: TextWords, b: TextWords, cfg: PassageConfig,
           fp_a: Sequence[tuple[int, int]] | None = None,
           fp_b: Sequence[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
    """Pairs of positions whose kept k-grams have equal hashes (:func:`_runs` drops a pair whose
    words differ); ``fp_a`` and
    ``fp_b``: the texts' :func:`fingerprints`, if already known."""
    if fp_a is None:
        fp_a = fingerprints(a.hashes, cfg.k, cfg.window)
    if fp_b is None:
        fp_b = fingerprints(b.hashes, cfg.k, cfg.window)
    fb: dict[int, list[int]] = {}
    for h, j in fp_b:
        pos = fb.setdefault(h, [])
        if len(pos) < cfg.max_occurrences:
            pos.append(j)
    seen: dict[int, int] = {}
    out = []
    for h, i in fp_a:
        js = fb.get(h)
        if js is None:
            continue
        n = seen.get(h, 0)
        if n >= cfg.max_occurrences:
            continue
        seen[h] = n + 1
        out.extend((i, j) for j in js)
    return out


def _first_difference(x: np.ndarray, y: np.ndarray) -> int:
    """The first position where ``x`` and ``y`` (equal lengths) differ, or their length."""
    d = x != y
    i = int(d.argmax())
    return i if d[i] else len(x)


def _run(a: np.ndarray, b: np.ndarray, i: int, j: int) -> tuple[int, int, int]:
    """The maximal run of equal words through ``(i, j)``: ``(i0, j0, length)``."""
    m = min(i, j)
    if m:
        back = _first_difference(a[i - m:i][::-1], b[j - m:j][::-1])
        i -= back
        j -= back
    m = min(len(a) - i, len(b) - j)
    return i, j, _first_difference(a[i:i + m], b[j:j + m]) if m else 0


def _runs(a: np.ndarray, b: np.ndarray, seeds: Sequence[tuple[int, int]], k: int
          ) -> set[tuple[int, int, int]]:
    """The maximal runs through ``seeds``; a seed inside a run already found is not extended
    again (seeds taken by diagonal, then position)."""
    runs: set[tuple[int, int, int]] = set()
    covered: dict[int, tuple[int, int]] = {}
    for i, j in sorted(seeds, key=lambda s: (s[0] - s[1], s[0])):
        last = covered.get(i - j)
        if last is not None and last[0] <= i < last[1]:
            continue
        r = _run(a, b, i, j)
        covered[i - j] = (r[0], r[0] + r[2])
        if r[0] + r[2] >= i + k:  # the seed's k words agree (not a collision of k-gram hashes)
            runs.add(r)
    return runs


def _gap_step(a: np.ndarray, b: np.ndarray, i: int, j: int, g: int, m: int,
              forwards: bool) -> tuple[int, int] | None:
    """The smallest ``(da, db)`` (by ``da + db``; not both 0; each at most ``g``) such that
    ``m`` words agree again: after ``(i, j)`` going forwards (at ``i + da``, ``j + db``), or
    before it going backwards (ending at ``i - da``, ``j - db``); ``None`` if none does."""
    if forwards:
        xa = a[i:i + g + m].tolist()
        xb = b[j:j + g + m].tolist()
    else:
        xa = a[max(0, i - g - m):i].tolist()[::-1]
        xb = b[max(0, j - g - m):j].tolist()[::-1]
    best = None
    for da in range(min(g, len(xa) - m) + 1):
        wa = xa[da:da + m]
        for db in range(min(g, len(xb) - m) + 1):
            if (da or db) and (best is None or da + db < best[0] + best[1]) \
                    and wa == xb[db:db + m]:
                best = (da, db)
    return best


def _extend(a: np.ndarray, b: np.ndarray, runs: list[tuple[int, int, int]],
            cfg: PassageConfig) -> list[tuple[int, int, int]]:
    """``runs`` (of one passage, in order) extended across gaps at both ends."""
    g, m = cfg.max_gap, cfg.min_match
    while True:  # forwards from the last run
        i0, j0, n = runs[-1]
        step = _gap_step(a, b, i0 + n, j0 + n, g, m, True)
        if step is None:
            break
        runs.append(_run(a, b, i0 + n + step[0], j0 + n + step[1]))
    while True:  # backwards from the first run
        i, j, _ = runs[0]
        step = _gap_step(a, b, i, j, g, m, False)
        if step is None:
            break
        runs.insert(0, _run(a, b, i - step[0] - m, j - step[1] - m))
    return runs


def _merge(runs: set[tuple[int, int, int]], gap: int) -> list[list[tuple[int, int, int]]]:
    """Runs grouped into passages: a run joins the passage whose last run ends at most ``gap``
    words before it in both texts (the nearest such), whatever other runs (a phrase repeated
    elsewhere) lie between them in reading order. Passages in order of their first run."""
    groups: list[list[tuple[int, int, int]]] = []
    ends: dict[int, list[int]] = {}  # where in the first text a passage ends -> passages
    for r in sorted(runs):
        i0, j0, n = r
        target = None
        for ie in range(i0, i0 - gap - 1, -1):
            for gi in ends.get(ie, ()):
                last = groups[gi][-1]
                if 0 <= j0 - (last[1] + last[2]) <= gap:
                    target = gi
                    break
            if target is not None:
                ends[ie].remove(target)
                break
        if target is None:
            groups.append([r])
            target = len(groups) - 1
        else:
            groups[target].append(r)
        ends.setdefault(i0 + n, []).append(target)
    return groups


def reused_passages(a: str | TextWords, b: str | TextWords,
                    config: PassageConfig | None = None, *,
                    fingerprints_a: Sequence[tuple[int, int]] | None = None,
                    fingerprints_b: Sequence[tuple[int, int]] | None = None) -> list[Passage]:
    """The passages of ``b`` reused in ``a`` (and so of ``a`` in ``b``), in reading order of
    ``a``; see the module docstring for what is found and the guarantee. ``fingerprints_a``/
    ``_b``: the texts' :func:`fingerprints` with the same ``k`` and ``window``, if known."""
    cfg = config or PassageConfig()
    ta = a if isinstance(a, TextWords) else text_words(a)
    tb = b if isinstance(b, TextWords) else text_words(b)
    ka, kb = ta.hashes, tb.hashes
    runs = _runs(ka, kb, _seeds(ta, tb, cfg, fingerprints_a, fingerprints_b), cfg.k)
    if cfg.max_gap:
        for grp in _merge(runs, cfg.max_gap):
            runs.update(_extend(ka, kb, grp, cfg))
    passages: list[Passage] = []
    groups = _merge(runs, cfg.max_gap)
    for grp in groups:
        i0, j0 = grp[0][0], grp[0][1]
        i1 = grp[-1][0] + grp[-1][2]
        j1 = grp[-1][1] + grp[-1][2]
        if i1 - i0 < cfg.shortest:
            continue
        passages.append(Passage(
            (i0, i1), (j0, j1), (int(ta.starts[i0]), int(ta.ends[i1 - 1])),
            (int(tb.starts[j0]), int(tb.ends[j1 - 1])), i1 - i0, sum(r[2] for r in grp),
            list(grp)))
    passages.sort(key=lambda p: (p.a_words, p.b_words))
    return passages


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


def winnow_many(kgram_hashes: np.ndarray, offsets: np.ndarray, window: int,
                block: int = 1 << 20) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
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
            np.arange(int(nwin.sum()), dtype=np.int64)
            - np.repeat(np.cumsum(nwin) - nwin, nwin))
        view = sliding_window_view(kh, w)
        for s0 in range(0, len(starts), block):
            st = starts[s0:s0 + block]
            win = view[st][:, ::-1]
            best_parts.append(st + (w - 1) - np.argmin(win, axis=1))
    best = np.concatenate(best_parts) if best_parts else np.zeros(0, np.int64)
    # texts of fewer k-grams: one window, the whole text
    short = np.flatnonzero((counts > 0) & (counts < w))
    if len(short):
        extra = np.empty(len(short), np.int64)
        for t, d in enumerate(short.tolist()):
            seg = kh[off[d]:off[d + 1]]
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


@dataclass
class ReuseResult:
    """Reused passages across a corpus (:func:`find_reuse`).

    ``passages``: one record per passage: ``a``, ``b`` (the two documents' rows, ``a < b``),
    word and character ranges in each, ``words`` (in ``a``) and ``matched``; ``pairs``: one
    record per pair of documents with at least one passage: ``a``, ``b``, ``passages``,
    ``reused_a``/``reused_b`` (words of each in passages) and ``share_a``/``share_b`` (those
    over the document's words); ``stats``: counts (documents, fingerprints, candidate pairs,
    fingerprints left out as too common, ...)."""

    passages: list[dict]
    pairs: list[dict]
    stats: dict


def find_reuse(texts: Sequence[str], config: PassageConfig | None = None, *,
               max_doc_freq: int = 100) -> ReuseResult:
    """Every pair of ``texts`` that shares a passage, with the passages (see the module
    docstring; the guarantee holds for every pair whose shared fingerprints are each kept by
    at most ``max_doc_freq`` texts).

    Each text's winnowed fingerprints are computed once; texts that keep a common fingerprint
    are candidate pairs, compared with :func:`reused_passages`. A fingerprint kept by more than
    ``max_doc_freq`` texts (a phrase everybody uses) proposes no pair and is counted in
    ``stats["common_fingerprints"]``."""
    cfg = config or PassageConfig()
    check_int("max_doc_freq", max_doc_freq, 2)
    tw = [text_words(t, keep_keys=False) for t in texts]
    fh, fdoc, fpos = fingerprints_many([t.hashes for t in tw], cfg.k, cfg.window)
    # the fingerprints of each text, for the pairwise step
    bounds = np.searchsorted(fdoc, np.arange(len(tw) + 1))
    # candidate pairs: texts that keep the same fingerprint
    order = np.lexsort((fdoc, fh))
    h_sorted, d_sorted = fh[order], fdoc[order]
    new = np.ones(len(order), bool)
    new[1:] = (h_sorted[1:] != h_sorted[:-1]) | (d_sorted[1:] != d_sorted[:-1])
    h_u, d_u = h_sorted[new], d_sorted[new]  # (hash, text) once each
    starts = np.flatnonzero(np.r_[True, h_u[1:] != h_u[:-1]])
    sizes = np.diff(np.r_[starts, len(h_u)])
    common = int((sizes > max_doc_freq).sum())
    cand: set[tuple[int, int]] = set()
    for s, m in zip(starts[(sizes >= 2) & (sizes <= max_doc_freq)].tolist(),
                    sizes[(sizes >= 2) & (sizes <= max_doc_freq)].tolist()):
        docs = d_u[s:s + m].tolist()
        cand.update((docs[x], docs[y]) for x in range(m) for y in range(x + 1, m))
    fps: dict[int, list[tuple[int, int]]] = {}

    def fp(d: int) -> list[tuple[int, int]]:
        got = fps.get(d)
        if got is None:
            a, b = bounds[d], bounds[d + 1]
            got = fps[d] = list(zip(fh[a:b].tolist(), fpos[a:b].tolist()))
        return got

    passages: list[dict] = []
    pairs: list[dict] = []
    for a, b in sorted(cand):
        found = reused_passages(tw[a], tw[b], cfg, fingerprints_a=fp(a), fingerprints_b=fp(b))
        if not found:
            continue
        for p in found:
            passages.append({"a": a, "b": b, "a_words": p.a_words, "b_words": p.b_words,
                             "a_chars": p.a_chars, "b_chars": p.b_chars, "words": p.words,
                             "matched": p.matched})
        na, nb = len(tw[a]), len(tw[b])
        sa, sb = reuse_share(found, na), reuse_share(found, nb, "b")
        pairs.append({"a": a, "b": b, "passages": len(found),
                      "reused_a": round(sa * na), "reused_b": round(sb * nb),
                      "share_a": sa, "share_b": sb})
    stats = {"documents": len(tw), "words": int(sum(len(t) for t in tw)),
             "fingerprints": int(len(fh)), "common_fingerprints": common,
             "candidate_pairs": len(cand), "pairs": len(pairs), "passages": len(passages),
             "guaranteed_words": cfg.guaranteed_words, "min_words": cfg.shortest}
    return ReuseResult(passages, pairs, stats)


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

    def __init__(self, config: PassageConfig | None = None, *,
                 max_doc_freq: int | None = None):
        self.config = config or PassageConfig()
        check_int("max_doc_freq", max_doc_freq, 1, none=True)
        self.max_doc_freq = max_doc_freq
        self._docs: dict[str, tuple[TextWords, list[tuple[int, int]]]] = {}
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
        tw = text_words(text, keep_keys=False)
        fp = fingerprints(tw.hashes, self.config.k, self.config.window)
        self._docs[id] = (tw, fp)
        for h, _ in fp:
            self._where.setdefault(h, set()).add(id)

    def remove(self, id: str) -> bool:  # noqa: A002
        """Remove a text; whether it was there."""
        got = self._docs.pop(id, None)
        if got is None:
            return False
        for h, _ in got[1]:
            ids = self._where.get(h)
            if ids is not None:
                ids.discard(id)
                if not ids:
                    del self._where[h]
        return True

    def check(self, text: str, *, min_share: float = 0.0,
              top_k: int | None = None) -> list[ReuseMatch]:
        """The indexed texts ``text`` shares passages with, most reused first (by the share
        of ``text`` they cover, then id); ``min_share``: leave out those that cover less of
        ``text``; ``top_k``: at most that many."""
        check_int("top_k", top_k, 1, none=True)
        cfg = self.config
        q = text_words(text, keep_keys=False)
        fq = fingerprints(q.hashes, cfg.k, cfg.window)
        cand: set[str] = set()
        for h, _ in fq:
            ids = self._where.get(h)
            if ids and (self.max_doc_freq is None or len(ids) <= self.max_doc_freq):
                cand.update(ids)
        out = []
        for doc_id in cand:
            tw, fp = self._docs[doc_id]
            found = reused_passages(q, tw, cfg, fingerprints_a=fq, fingerprints_b=fp)
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


def fingerprints_many(hashes: Sequence[np.ndarray], k: int, window: int
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`fingerprints` of many texts given as their :func:`word_hashes`, at once:
    ``(hash, text, position)`` arrays, as :func:`winnow_many` returns them."""
    n = len(hashes)
    sizes = np.fromiter((len(h) for h in hashes), np.int64, n)
    woff = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=woff[1:])
    words = np.concatenate(hashes) if n else np.zeros(0, np.uint64)
    counts = np.maximum(sizes - k + 1, 0)
    koff = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=koff[1:])
    kh = combine_kgrams(words.astype(np.uint64, copy=False), k)[_ranges(woff[:-1], counts)] \
        if len(words) >= k else np.zeros(0, np.uint64)
    return winnow_many(kh, koff, window)
