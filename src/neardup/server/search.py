"""The routes that search the index: ``POST /query`` (near-duplicates of a text) and
``POST /check`` (is a text new: its matches, the passages it shares with indexed texts, and
an atomic add of a unique text)."""

from __future__ import annotations

import time

from fastapi import FastAPI, HTTPException

from ..index import Index
from .access import Role, allows
from .models import (
    _ERRORS,
    _WRITE_ERRORS,
    EMPTY_TEXT,
    CheckIn,
    CheckMatch,
    CheckOut,
    CommonOut,
    MatchOut,
    Passage,
    QueryIn,
    QueryOut,
    ReusedOut,
)
from .passages import passages_within, word_keys
from .state import (
    CHECK_CANDIDATES,
    CHECK_DETAILS,
    CHECK_SECONDS,
    MAX_MATCHES,
    MAX_PASSAGES,
    QUERY_SECONDS,
    Service,
    _check_size,
    _utf8_size,
)


def _passage_k(index: Index) -> int:
    sh = index.config.shingle
    return sh.k if sh.kind == "word" else 3


def add_search_routes(app: FastAPI, service: Service) -> None:
    """Add ``/query`` and ``/check`` to ``app``, searching ``service``'s index."""
    k_index = _passage_k(service.index)

    @app.post(
        "/query",
        response_model=QueryOut,
        responses=_ERRORS,
        tags=["search"],
        summary="Near-duplicates of a text",
        dependencies=[service.read, service.there],
    )
    def query(q: QueryIn) -> QueryOut:
        """Indexed documents whose similarity to `text` reaches the threshold, best first."""
        _check_size(q.text, service.max_text_bytes, "the text")
        threshold = _threshold(service, q.threshold)
        with service.heavy(q.text):
            matches, complete = service.index.query_within(
                q.text, QUERY_SECONDS, threshold=threshold, top_k=q.top_k
            )
        capped = len(matches) > MAX_MATCHES
        matches = matches[:MAX_MATCHES]
        return QueryOut(
            matches=[MatchOut(id=m.id, similarity=m.similarity) for m in matches],
            unique=not matches and complete,
            threshold=threshold,
            matches_capped=capped,
            incomplete=not complete,
        )

    @app.post(
        "/check",
        response_model=CheckOut,
        responses=_WRITE_ERRORS,
        tags=["search"],
        summary="Is this text new? With the passages it shares",
        dependencies=[service.there],
    )
    def check(c: CheckIn, role: Role = service.read) -> CheckOut:
        """Whether `text` repeats indexed documents: the matches, and for the best
        10 their text and the passages shared with `text`. With `add=true` and an
        `id`, a unique text is added (409 if the id is taken; a write key)."""
        with service.heavy(c.text):
            return _check(service, c, role, k_index)


def _threshold(service: Service, asked: float | None) -> float:
    """The request's threshold, or the index's; one below the index's is refused: its LSH
    finds pairs under its own threshold only by chance, and an answer would be false."""
    if asked is None:
        return service.index.threshold
    if asked < service.index.threshold:
        raise HTTPException(
            422,
            f"threshold: {asked:g} is below this index's threshold "
            f"({service.index.threshold:g}), under which it does not find "
            "every near-duplicate; use a threshold of at least "
            f"{service.index.threshold:g} (an index finds texts from the "
            "similarity it was created with)",
        )
    return asked


def _texts(service: Service, ids: list[str], have: dict[str, str]) -> dict[str, str | None]:
    """The texts of ``ids``: those in ``have``, the others read from the index."""
    missing = [i for i in ids if i not in have]
    got = service.index.get_texts(missing) if missing else {}
    return {i: have[i] if i in have else got[i] for i in ids if i in have or i in got}


def _check(service: Service, c: CheckIn, role: Role, k_index: int) -> CheckOut:
    if c.add and not allows(role, "write"):
        raise HTTPException(
            403,
            "adding a text (add=true) needs an API key with the "
            f"write role; the key sent has the {role} role (a check "
            "without add=true needs only a read key)",
        )
    deadline = time.monotonic() + CHECK_SECONDS  # passages too are found within it
    _check_size(c.text, service.max_text_bytes, "the text")
    threshold = _threshold(service, c.threshold)
    added = False
    reused: list = []
    capped = incomplete = False
    found = None  # whole-text matches and reused passages, where the index finds both
    if service.index.passages is not None:
        # at most check_slots searches at once: cheaper requests are not held up by
        # several of them taking turns; one that waits its whole budget is told to retry
        if not service.check_gate.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
            raise HTTPException(
                503,
                f"{service.check_slots} uniqueness check"
                f"{'s are' if service.check_slots > 1 else ' is'} being made "
                f"and this one waited {CHECK_SECONDS:g} s for its "
                "turn; try again in a moment",
                headers={"Retry-After": "1"},
            )
        try:
            found = service.index.check(
                c.text,
                threshold=threshold,
                max_passages=MAX_PASSAGES,
                max_candidates=CHECK_CANDIDATES,
                time_budget=max(deadline - time.monotonic(), 0.01),
            )
        finally:
            service.check_gate.release()
        reused = [m for m in found.reused if m.id != c.id]
        capped = found.capped
        incomplete = found.incomplete
    if c.add:
        if c.id is None:
            raise HTTPException(422, "id: required with add=true (the id to add the text under)")
        if not c.text.strip():
            raise HTTPException(422, f"text: {EMPTY_TEXT} (it cannot be added)")
        if c.id in service.index:
            raise HTTPException(409, f"id {c.id!r} is already in the index")
    if (
        c.add
        and not reused
        and not incomplete  # copies passages, or not known: kept out
        and not (found is not None and found.common)
    ):
        service.room(1)
        matches = service.batches.call("check_and_add", c.id, c.text, threshold=threshold)
        added = not matches
    else:
        matches = (
            found.matches if found is not None else service.index.query(c.text, threshold=threshold)
        )
        if c.id is not None:
            matches = [m for m in matches if m.id != c.id]
    matches_capped = len(matches) > MAX_MATCHES
    matches = matches[:MAX_MATCHES]
    top = matches[:CHECK_DETAILS]
    # the texts the check compared are at hand; only the others are read
    have = found.texts if found is not None else {}
    texts = _texts(service, [m.id for m in top], have)
    rtexts = _texts(service, [m.id for m in reused[:CHECK_DETAILS]], have)
    room = [service.check_text_bytes]  # bytes of texts the answer may still carry
    cut = {"texts": False, "passages": False}
    keys = word_keys(c.text) if texts else None

    def carried(text: str | None) -> str | None:
        """``text`` if the answer has room for it, else None (and the answer says so)."""
        if text is None:
            return None
        size = _utf8_size(text)
        if size > room[0]:
            cut["texts"] = True
            return None
        room[0] -= size
        return text

    out = []
    for i, m in enumerate(matches):
        text = carried(texts.get(m.id)) if i < CHECK_DETAILS else None
        passages: list = []
        if text and not cut["passages"]:
            passages, complete = passages_within(
                c.text, text, k_index, deadline=deadline, keys_a=keys
            )
            cut["passages"] = not complete
        out.append(CheckMatch(id=m.id, similarity=m.similarity, text=text, passages=passages))
    rout = [
        ReusedOut(
            id=m.id,
            share=round(m.share_query, 4),
            share_source=round(m.share_source, 4),
            text=carried(rtexts.get(m.id)) if i < CHECK_DETAILS else None,
            passages=[Passage(a=p.a_chars, b=p.b_chars, words=p.words) for p in m.passages],
        )
        for i, m in enumerate(reused)
    ]
    common = [
        CommonOut(a=p.a_chars, words=p.words, texts=p.texts, example=p.example, b=p.b_chars)
        for p in (found.common if found is not None else [])
    ]
    return CheckOut(
        unique=not matches and not reused and not common and not incomplete,
        common=common,
        threshold=threshold,
        matches=out,
        added=added,
        reused=rout,
        reused_capped=capped,
        reuse_incomplete=incomplete,
        passages_incomplete=cut["passages"],
        texts_capped=cut["texts"],
        matches_capped=matches_capped,
        passages_indexed=service.index.passages is not None,
        min_passage_words=(service.index.passages.shortest if service.index.passages else None),
    )
