"""What :meth:`Index.check <neardup.index.Index.check>` answers, and how it is found: the
passages a checked text shares with indexed texts (its fingerprints looked up, the holders
ranked, common passages told apart from reuse, the candidates compared word by word).
:class:`PassageCheck` is the part of :class:`~neardup.index.Index` that checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._records import record
from ..errors import ConfigError
from ..reuse import (
    PassageConfig,
    ReuseMatch,
    checked_fingerprints,
    passages_with,
    reuse_share,
    salt_fingerprints,
)
from ..validate import check_int
from .storage import Storage

#: Indexed texts that make a passage common (boilerplate) in :meth:`Index.check`: texts that
#: share only such passages with a checked text are counted, not compared one by one.
COMMON_TEXTS = 16


@dataclass(frozen=True)
class CommonPassage:
    """A passage of a checked text that many indexed texts hold (a template sentence, a widely
    copied quote; half or more of its fingerprints are held by that many texts):
    ``a_words``/``a_chars`` its range of words/characters in the checked text, ``words`` its
    length, ``texts`` about how many indexed texts hold it (the fewest holders of one of
    those fingerprints, counted up to the index's ``bucket_cap``), ``example`` the id of one
    of them and ``b_chars`` the passage's range there."""

    a_words: tuple[int, int]
    a_chars: tuple[int, int]
    words: int
    texts: int
    example: str
    b_chars: tuple[int, int]


@record
class CheckResult:
    """What :meth:`Index.check` found: whole-text ``matches`` (:class:`Match`), the indexed
    texts ``reused`` in passages (:class:`~neardup.reuse.ReuseMatch`), whether the
    passages were ``capped`` (some left out by ``max_passages``) and whether the search was
    ``incomplete`` (some candidate texts not compared: ``max_candidates``, ``time_budget``);
    ``texts``: the indexed texts compared, by id (not compared for equality); ``common``: the
    passages many indexed texts hold (:class:`CommonPassage`), each once."""

    matches: list[Match]
    reused: list[ReuseMatch]
    capped: bool = False
    incomplete: bool = False
    #: the indexed texts compared, by id (those of ``reused`` among them), for showing them
    #: beside the passages without reading them again
    texts: dict[str, str] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    #: the passages of the checked text that many indexed texts hold, each once
    common: list[CommonPassage] = dataclasses.field(default_factory=list)

    @property
    def unique(self) -> bool:
        """Neither a whole-text near-duplicate nor a passage held by an indexed text (reused
        or common) was found, and every candidate was compared."""
        return not self.matches and not self.reused and not self.common and not self.incomplete


@dataclass(frozen=True)
class Match:
    """A near-duplicate found by a query: an id and its verified Jaccard similarity."""

    id: str
    similarity: float

    def __iter__(self) -> Iterator[Any]:  # unpacks as (id, similarity)
        yield self.id
        yield self.similarity


def _ranked(pos: np.ndarray, handles: np.ndarray, rare: np.ndarray) -> np.ndarray:
    """The handles that hold a key ``rare`` says is rare (``pos``: the key of each holding,
    ``handles``: its holder), ranked by the number of keys each holds, rare or not (most
    first; then oldest first)."""
    if len(handles) == 0:
        return np.zeros(0, np.int64)
    uniq, inv, shared = np.unique(handles, return_inverse=True, return_counts=True)
    has_rare = np.zeros(len(uniq), bool)
    has_rare[inv[rare[pos]]] = True
    cand, shared = uniq[has_rare], shared[has_rare]
    return cand[np.lexsort((cand, -shared))]


def _representatives(
    pos: np.ndarray, handles: np.ndarray, open_key: np.ndarray, compared: np.ndarray, room: int
) -> np.ndarray:
    """Texts to compare for the keys ``open_key`` marks (common ones that nothing compared
    explains), at most ``room``: key by key, the holder (not in ``compared``) that holds the
    most open keys (then the oldest); the keys it holds are then taken care of."""
    sel = open_key[pos] & ~np.isin(handles, compared)
    kp, hp = pos[sel], handles[sel]
    if len(kp) == 0 or room < 1:
        return np.zeros(0, np.int64)
    uniq, inv = np.unique(hp, return_inverse=True)
    weight = np.bincount(inv)
    by_key = np.argsort(kp, kind="stable")
    key_starts = np.searchsorted(kp[by_key], np.arange(len(open_key) + 1))
    by_holder = np.argsort(inv, kind="stable")
    holder_starts = np.searchsorted(inv[by_holder], np.arange(len(uniq) + 1))
    done = ~open_key
    out: list[int] = []
    for key in np.unique(kp).tolist():
        if done[key]:
            continue
        cands = inv[by_key[key_starts[key] : key_starts[key + 1]]]
        best = int(cands[np.argmax(weight[cands] * (len(uniq) + 1) - cands)])
        out.append(int(uniq[best]))
        done[kp[by_holder[holder_starts[best] : holder_starts[best + 1]]]] = True
        if len(out) >= room:
            break
    return np.array(out, np.int64)


def _common_passages(pool: list[tuple[Any, int, str]], n_words: int) -> list[CommonPassage]:
    """Each common passage once: of ``(passage, texts, example id)`` found with several texts,
    the longest first, leaving out those that overlap one kept in the checked text."""
    taken = np.zeros(n_words + 1, bool)
    out = []
    for p, texts, doc_id in sorted(pool, key=lambda x: (-x[0].words, x[0].a_words, x[2])):
        a0, a1 = p.a_words
        if taken[a0:a1].any():
            continue
        taken[a0:a1] = True
        out.append(CommonPassage(p.a_words, p.a_chars, p.words, texts, doc_id, p.b_chars))
    out.sort(key=lambda c: c.a_words)
    return out


class PassageCheck:
    """The passage check of an index (a part of :class:`~neardup.index.Index`)."""

    # what it uses of the index (set by Index.__init__)
    storage: Storage
    passages: PassageConfig | None
    bucket_cap: int
    _no_passages: str

    if TYPE_CHECKING:

        def query(
            self, text: str, threshold: float | None = None, top_k: int | None = None
        ) -> list[Match]: ...

        def query_within(
            self,
            text: str,
            seconds: float,
            threshold: float | None = None,
            top_k: int | None = None,
        ) -> tuple[list[Match], bool]: ...

        def _unpack(self, value: str | bytes | None) -> str | None: ...

    def check(
        self,
        text: str,
        *,
        threshold: float | None = None,
        min_share: float = 0.0,
        top_k: int | None = None,
        max_passages: int = 100,
        max_candidates: int = 1000,
        time_budget: float | None = None,
        common_texts: int = COMMON_TEXTS,
    ) -> CheckResult:
        """Everything the index holds of ``text``: ``matches``, its whole-text near-duplicates
        (as :meth:`query` with ``threshold``); ``reused``, the indexed texts it shares
        passages with (see :mod:`neardup.reuse`): :class:`~neardup.reuse.ReuseMatch` with the
        passages (``a``: ranges in ``text``, ``b``: in the indexed text) and the share of each
        text they cover, most reused first; and ``common``, the passages of ``text`` that
        ``common_texts`` (16) indexed texts or more hold (template sentences, widely copied
        quotes: :class:`CommonPassage`), each once, with about how many texts hold it.
        ``min_share``: leave out reused texts that cover less of ``text``; ``top_k``: at most
        that many matches and reused texts; ``max_passages``: at most that many passages in
        ``reused`` (the most reused texts first) and in ``common``; ``capped`` says whether
        some were left out.

        Candidates: the indexed texts that share a passage fingerprint with ``text`` held by
        fewer than ``common_texts`` indexed texts are compared with it, one by one, ranked by
        how many of ``text``'s fingerprints they share, most first, before any text is read.
        So every indexed text that shares a passage of ``guaranteed_words`` (16) words or
        more with ``text`` is compared, unless each fingerprint it shares is common (held by
        ``common_texts`` texts or more). Those common fingerprints that no compared text
        explains are compared with a few representatives: for each, the text that holds the
        most of them. A text whose passages with ``text`` are all common is listed in
        ``common`` (as the example of a passage), not in ``reused``; the other texts that
        hold a common passage are counted, not compared. So the work of a check does not grow
        with how often its sentences occur in the index.

        Bounded work: at most ``max_candidates`` texts are compared (the highest ranked),
        and with ``time_budget`` (seconds) no new batch of them is started once it is spent;
        ``incomplete`` then says that some were not compared (the answer may miss sources,
        and :attr:`CheckResult.unique` is false). An index built without passage fingerprints
        raises :class:`ConfigError`."""
        import time

        if self.passages is None:
            raise ConfigError(self._no_passages)
        check_int("top_k", top_k, 1, none=True)
        check_int("max_passages", max_passages, 1)
        check_int("max_candidates", max_candidates, 1)
        check_int("common_texts", common_texts, 2)
        if time_budget is not None and not (
            isinstance(time_budget, (int, float)) and time_budget > 0
        ):
            raise ConfigError(f"time_budget={time_budget!r} is invalid: seconds, above 0")
        deadline: float | None = None
        if time_budget is None:
            matches, verified = self.query(text, threshold, top_k), True
        else:
            deadline = time.monotonic() + float(time_budget)
            matches, verified = self.query_within(text, float(time_budget), threshold, top_k)
        cfg = self.passages
        q, fh, fpos = checked_fingerprints(text, cfg)
        keys, key_of = np.unique(salt_fingerprints(fh), return_inverse=True)
        floor = min(common_texts, self.bucket_cap)
        pos, handles, held, ranked = self._candidates(keys, floor)
        common = held >= floor
        incomplete = len(ranked) > max_candidates
        ranked = ranked[:max_candidates]
        stored, found, sizes, cut = self._compare(q, ranked, deadline)
        if not cut and len(ranked) < max_candidates:
            # the common fingerprints that no passage found so far covers: a representative
            # of each (the text that holds the most of them) is compared too
            covered = np.zeros(len(q) + 1, np.int64)
            for got in found:
                for p in got:
                    covered[p.a_words[0]] += 1
                    covered[p.a_words[1]] -= 1
            inside = np.cumsum(covered)[fpos] > 0
            open_key = common.copy()
            open_key[key_of[inside]] = False
            reps = _representatives(pos, handles, open_key, ranked, max_candidates - len(ranked))
            if len(reps):
                more = self._compare(q, reps, deadline)
                stored, found, sizes = stored + more[0], found + more[1], sizes + more[2]
                cut = more[3]
        incomplete = incomplete or cut or not verified
        # which passages are common: half or more of the fingerprints of text inside it are
        # (the edges of a passage may take in a few words around a template sentence)
        order = np.argsort(fpos, kind="stable")
        spos, sheld = fpos[order], held[key_of[order]]
        skey = key_of[order]
        out: list[ReuseMatch] = []
        pool: list[tuple[Any, Any, str]] = []
        for (doc_id, _), got, n_source in zip(stored, found, sizes):
            if not got:
                continue
            many = []
            for p in got:
                lo, hi = np.searchsorted(spos, [p.a_words[0], p.a_words[1] - cfg.k + 1])
                h = skey[lo:hi][sheld[lo:hi] >= floor]
                many.append(h if len(h) and 2 * len(h) >= hi - lo else None)
            if any(h is None for h in many):  # reuses something of its own: a source
                share = reuse_share(got, len(q))
                if share >= min_share:
                    out.append(ReuseMatch(doc_id, got, share, reuse_share(got, n_source, "b")))
            pool.extend((p, h, doc_id) for p, h in zip(got, many) if h is not None)
        if pool:  # how many texts hold each common passage: the fewest of its common keys
            need = np.unique(np.concatenate([h for _, h, _ in pool]))
            counts = np.zeros(len(keys), np.int64)
            counts[need] = self.storage.holder_counts(keys[need], self.bucket_cap)
            pool = [(p, int(counts[h].min()), doc_id) for p, h, doc_id in pool]
        out.sort(key=lambda m: (-m.share_query, m.id))
        if top_k is not None:
            out = out[:top_k]
        kept, total, capped = [], 0, False
        for m in out:
            if total + len(m.passages) > max_passages:
                capped = True
                m = ReuseMatch(
                    m.id, m.passages[: max_passages - total], m.share_query, m.share_source
                )
                if not m.passages:
                    break
            kept.append(m)
            total += len(m.passages)
        shared = _common_passages(pool, len(q))
        capped = capped or len(shared) > max_passages
        return CheckResult(
            matches, kept, capped, incomplete, dict(stored), common=shared[:max_passages]
        )

    def _candidates(
        self, keys: np.ndarray, floor: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Who holds the passage ``keys`` (distinct) of a checked text: ``(pos, handles)``,
        a holding each (its key's position in ``keys``, the text's handle; ``floor`` a key
        at most: a common key's holders are not all read), the holders of each key, and the
        candidates: the texts that hold a key held by fewer than ``floor`` texts, ranked by the
        number of ``keys`` each was found holding (most first; then the oldest)."""
        if len(keys):
            pos, handles = self.storage.holders(keys, floor)
        else:
            pos, handles = np.zeros(0, np.int64), np.zeros(0, np.int64)
        held = np.bincount(pos, minlength=len(keys))
        return pos, handles, held, _ranked(pos, handles, held < floor)

    def _compare(
        self, q: Any, handles: np.ndarray, deadline: float | None
    ) -> tuple[list[tuple[str, str]], list, list[int], bool]:
        """The texts of ``handles`` (``(id, text)``), the passages ``q`` shares with each of
        those compared before ``deadline``, their numbers of words, and whether the deadline
        left some out."""
        rows = self.storage.texts_of(handles.tolist()) if len(handles) else []
        stored = [(i, t) for i, raw in rows if (t := self._unpack(raw)) is not None]
        if not stored:
            return [], [], [], False
        found, sizes = passages_with(q, [t for _, t in stored], self.passages, deadline=deadline)
        return stored[: len(found)], found, sizes, len(found) < len(stored)
