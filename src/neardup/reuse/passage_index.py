"""The search side of reuse detection: :class:`PassageIndex` keeps texts in memory and finds
which of them a new text reuses passages from (:class:`ReuseMatch`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from ..validate import check_int
from .passages import (
    Passage,
    PassageConfig,
    TextWords,
    _passages_of_pair,
    _sorted_fingerprints,
    _words_of,
    reuse_share,
)


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
