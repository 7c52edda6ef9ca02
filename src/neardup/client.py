"""A Python client for ``neardup serve``.

>>> import neardup
>>> with neardup.Client("http://127.0.0.1:8000", key=API_KEY) as service:
...     service.add("sku-1", "Stainless steel electric kettle, 1.7 litres, rapid boil.")
...     service.query("stainless steel electric kettle, 1.7 litres, rapid boil")
[Match(id='sku-1', similarity=1.0)]

:class:`Client` speaks the service's JSON API over HTTP (it needs ``httpx``: ``pip install
'neardup[client]'``) and answers with the library's own types: :class:`neardup.Match` for
near-duplicates, :class:`neardup.DuplicateIdError` for an id already taken. The API key goes in
``Authorization: Bearer KEY``; it is never shown in a message or a ``repr``.

Errors are :class:`ServiceError` (``status``, ``detail``, ``request_id``), or one of its
subclasses for the answers a program acts on: :class:`AuthError` (401, 403),
:class:`IdTakenError` (409, also a :class:`~neardup.DuplicateIdError`),
:class:`InvalidRequestError` (400, 413, 415, 422), :class:`ServiceFullError` (507, also an
:class:`~neardup.index.IndexFullError`), :class:`ServiceUnavailableError` (503 after the
retries) and :class:`ServiceUnreachableError` (no answer at all).

Retries. A 503 (the service busy, at one of its limits, or its index briefly out of reach) and
a 408 (the request did not arrive in time) are tried again after the ``Retry-After`` seconds the
service sends (at most ``max_wait``; without one, after 0.5 s, 1 s, 2 s, ...), up to
``retries`` times, for every request: the service gives these answers before it acts on the
request. A connection that fails before the request is sent is tried again too; one that fails
once the request is on its way is tried again only for requests that change nothing (reads,
``query``, ``check`` without ``add``), since an add may have been kept.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple
from urllib.parse import quote, urlsplit, urlunsplit

from ._extras import require
from .errors import ConfigError, NeardupError
from .index import DuplicateIdError, IndexFullError, Match

__all__ = [
    "Client",
    "QueryAnswer",
    "CheckAnswer",
    "CheckMatch",
    "Reused",
    "Common",
    "Passage",
    "ServiceError",
    "AuthError",
    "IdTakenError",
    "InvalidRequestError",
    "ServiceFullError",
    "ServiceUnavailableError",
    "ServiceUnreachableError",
]

#: documents one ``POST /documents:batch`` carries where the service does not say its limit
DEFAULT_MAX_BATCH = 1000
#: request body bytes where the service does not say its limit (its default)
DEFAULT_MAX_BODY = 10_000_000
#: seconds an idle connection is kept for the next request: under the service's 5 s, so that
#: a request is never sent on a connection the service is closing at that moment
KEEPALIVE_SECONDS = 2.0
#: first wait of the exponential backoff, where the service sends no ``Retry-After``
BACKOFF_SECONDS = 0.5

_KEY_CHARS = re.compile(r"[\x21-\x7e]+")


# ---------------------------------------------------------------------------------------------
# Errors


class ServiceError(NeardupError):
    """The service refused a request, or could not be reached.

    ``status``: the HTTP status (None where no answer came); ``detail``: what the service said
    was wrong (its JSON ``detail``); ``request_id``: the request's ``X-Request-ID``, under which
    the service's log has it; ``retry_after``: the seconds the service asked to wait, if it
    did. ``added``: where :meth:`Client.add_many` stopped on this error, the documents of the
    batches before, which were added."""

    def __init__(
        self,
        status: int | None,
        detail: str,
        request_id: str | None = None,
        retry_after: float | None = None,
    ):
        self._set(status, detail, request_id, retry_after)

    def _set(
        self, status: int | None, detail: str, request_id: str | None, retry_after: float | None
    ) -> None:
        what = f"HTTP {status}" if status is not None else "no answer"
        rid = f", request ID {request_id}" if request_id else ""
        self.args = (f"{detail} ({what}{rid})",)
        self.status = status
        self.detail = detail
        self.request_id = request_id
        self.retry_after = retry_after
        self.added: int | None = None


class AuthError(ServiceError):
    """401: no API key, or one the service does not know; 403: the key's role may not do this
    (a read key that adds or deletes)."""


class InvalidRequestError(ServiceError):
    """400, 413, 415, 422: the request is wrong (an invalid id or text, a threshold below the
    index's own, a text over the service's limit); ``detail`` names the field."""


class IdTakenError(ServiceError, DuplicateIdError):
    """409: the id is already in the index; nothing was added. Also a
    :class:`neardup.DuplicateIdError`, as the library raises (``doc_id``: the id)."""

    def __init__(
        self,
        status: int | None,
        detail: str,
        request_id: str | None = None,
        retry_after: float | None = None,
        doc_id: str = "",
    ):
        DuplicateIdError.__init__(self, doc_id)
        self._set(status, detail, request_id, retry_after)


class ServiceFullError(ServiceError, IndexFullError):
    """507: the index holds the most documents the service keeps, or its disk is full;
    nothing was added."""


class ServiceUnavailableError(ServiceError):
    """503: the service was busy or at one of its limits through every retry."""


class ServiceUnreachableError(ServiceError):
    """No answer: the connection failed or timed out (``status`` is None; ``request_id`` is
    the one the request was sent with)."""


_ERRORS: dict[int, type[ServiceError]] = {
    400: InvalidRequestError,
    401: AuthError,
    403: AuthError,
    409: IdTakenError,
    413: InvalidRequestError,
    415: InvalidRequestError,
    422: InvalidRequestError,
    503: ServiceUnavailableError,
    507: ServiceFullError,
}


# ---------------------------------------------------------------------------------------------
# Answers


class Passage(NamedTuple):
    """A passage two texts share: ``[start, end)`` character offsets in the checked text
    (``a``) and in the indexed one (``b``), and its length in words."""

    a: tuple[int, int]
    b: tuple[int, int]
    words: int


@dataclass(frozen=True)
class CheckMatch(Match):
    """A near-duplicate found by :meth:`Client.check`: a :class:`neardup.Match` with, for the
    best ones, the indexed text (None for the others, or where the answer had no room for it)
    and the passages it shares with the checked text."""

    text: str | None = None
    passages: tuple[Passage, ...] = ()


@dataclass(frozen=True)
class Reused:
    """An indexed text that the checked text copies passages from: the share of the checked
    text's words in them (``share``) and of the indexed text's (``share_source``), the indexed
    text (for the most reused ones) and the passages."""

    id: str
    share: float
    share_source: float
    text: str | None
    passages: tuple[Passage, ...]


@dataclass(frozen=True)
class Common:
    """A passage of the checked text that many indexed texts hold (a template sentence, a
    widely quoted text), reported once: ``a``, its character range in the checked text,
    ``words``, about how many indexed ``texts`` hold it, and one of them, ``example``, with
    the passage's range there, ``b``."""

    a: tuple[int, int]
    words: int
    texts: int
    example: str
    b: tuple[int, int]


class QueryAnswer(list):
    """What :meth:`Client.query` returns: the list of :class:`neardup.Match`, most similar
    first, with what the service says of it.

    ``unique``: nothing reaches the threshold and every candidate was verified;
    ``incomplete``: the service stopped verifying candidates at its time limit, so the list
    may miss some; ``matches_capped``: more matched than the answer carries (the best ones
    are there); ``threshold``: the threshold used."""

    unique: bool
    incomplete: bool
    matches_capped: bool
    threshold: float


@dataclass(frozen=True)
class CheckAnswer:
    """What :meth:`Client.check` returns.

    ``unique``: no near-duplicate, no indexed text it shares passages with, and every
    candidate compared. ``matches``: near-duplicates, most similar first
    (:class:`CheckMatch`); ``reused``: indexed texts it copies passages from, most reused
    first (:class:`Reused`; empty where the index finds no passages, see
    ``passages_indexed``); ``common``: its passages that many indexed texts hold, each once
    (:class:`Common`); ``added``: the text was added (``add=True``).
    ``matches_capped``, ``reused_capped``: more were found than the answer carries;
    ``texts_capped``: some matches come without their text (fetch it with
    :meth:`Client.get`); ``passages_incomplete``: the passages of some matches were not all
    found in time; ``reuse_incomplete``: not every candidate was compared (then ``unique`` is
    false). ``min_passage_words``: the shortest passage the index reports."""

    unique: bool
    threshold: float
    matches: list[CheckMatch]
    added: bool
    reused: list[Reused]
    common: list[Common] = field(default_factory=list)
    matches_capped: bool = False
    reused_capped: bool = False
    passages_incomplete: bool = False
    texts_capped: bool = False
    reuse_incomplete: bool = False
    passages_indexed: bool = False
    min_passage_words: int | None = None


def _passages(items: list[dict[str, Any]]) -> tuple[Passage, ...]:
    return tuple(Passage(tuple(p["a"]), tuple(p["b"]), p["words"]) for p in items)


def _check_answer(body: dict[str, Any]) -> CheckAnswer:
    return CheckAnswer(
        unique=body["unique"],
        threshold=body["threshold"],
        added=body["added"],
        matches=[
            CheckMatch(m["id"], m["similarity"], m.get("text"), _passages(m.get("passages", [])))
            for m in body["matches"]
        ],
        reused=[
            Reused(r["id"], r["share"], r["share_source"], r.get("text"), _passages(r["passages"]))
            for r in body.get("reused", [])
        ],
        common=[
            Common(tuple(c["a"]), c["words"], c["texts"], c["example"], tuple(c["b"]))
            for c in body.get("common", [])
        ],
        matches_capped=body.get("matches_capped", False),
        reused_capped=body.get("reused_capped", False),
        passages_incomplete=body.get("passages_incomplete", False),
        texts_capped=body.get("texts_capped", False),
        reuse_incomplete=body.get("reuse_incomplete", False),
        passages_indexed=body.get("passages_indexed", False),
        min_passage_words=body.get("min_passage_words"),
    )


# ---------------------------------------------------------------------------------------------
# The client


def _doc_id(doc_id: str | int) -> str:
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)):
        raise TypeError(f"a document id is a string or an integer, not {type(doc_id).__name__}")
    return str(doc_id)


def _path_id(doc_id: str) -> str:
    # every character but letters, digits and -_~ percent-encoded; dots too, so that an id
    # "." or ".." is not taken for a path segment
    return quote(doc_id, safe="").replace(".", "%2E")


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


def _shown_url(url: str) -> str:
    """``url`` without a user name or password."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class Client:
    """A client of a ``neardup serve`` service at ``url`` (``http://host:port``), with the API
    ``key`` it gave you (None where the service needs none).

    ``timeout``: seconds to wait for each answer; ``retries``: how many times a request the
    service answered 503 or 408, or that could not be sent, is tried again; ``max_wait``: the
    most seconds waited before one retry (the service's ``Retry-After`` is cut to it).

    Use it in a ``with`` block, or call :meth:`close` when done; one client may be shared by
    threads. Every method raises :class:`ServiceError` (or a subclass) when the service
    refuses the request.
    """

    def __init__(
        self,
        url: str,
        key: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        max_wait: float = 30.0,
    ):
        httpx = require("httpx", "client", "the neardup client")
        if (
            not isinstance(url, str)
            or urlsplit(url).scheme not in ("http", "https")
            or not urlsplit(url).hostname
        ):
            raise ConfigError(
                f"url {url!r} is not an http:// or https:// address of the "
                "service (such as http://127.0.0.1:8000)"
            )
        if key is not None:
            if not isinstance(key, str):
                raise ConfigError(f"key must be a string (or None), not {type(key).__name__}")
            key = key.strip()
            if not _KEY_CHARS.fullmatch(key):  # the key itself is never shown
                raise ConfigError(
                    "the API key is empty or holds characters that are not "
                    "printable ASCII (a space, a line break): pass the key as "
                    "the service's operator gave it"
                )
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"retries={retries!r} is invalid: a whole number, 0 or more")
        for name, value, least in (
            ("timeout", timeout, "more than 0"),
            ("max_wait", max_wait, "0 or more"),
        ):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or value < 0
                or (value == 0 and name == "timeout")
            ):
                raise ConfigError(f"{name}={value!r} is invalid: a number of seconds, {least}")
        self.url = url.rstrip("/")
        self.timeout = float(timeout)
        self.retries = retries
        self.max_wait = float(max_wait)
        self._key = key
        self._httpx = httpx
        headers = {"Accept": "application/json", "User-Agent": f"neardup-client/{_version()}"}
        if key is not None:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=self.timeout,
            limits=httpx.Limits(keepalive_expiry=KEEPALIVE_SECONDS),
        )
        self._limits: tuple[int, int] | None = None

    def __repr__(self) -> str:
        key = "key=***" if self._key is not None else "no key"
        return f"Client({_shown_url(self.url)!r}, {key})"

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client's connections. Calling it again does nothing."""
        self._http.close()

    # -- the index ---------------------------------------------------------------------------

    def add(self, id: str | int, text: str) -> None:  # noqa: A002 - the API's own name
        """Add a document. Raises :class:`IdTakenError` (a
        :class:`neardup.DuplicateIdError`) if the id is already in the index,
        :class:`InvalidRequestError` for an invalid id or an empty text,
        :class:`ServiceFullError` where the service keeps no more documents."""
        doc = {"id": _doc_id(id), "text": text}
        r = self._send(
            "POST",
            "/documents",
            body=_json_bytes(doc),
            idempotent=False,
            confirm=[(doc["id"], text)],
        )
        if r is not None:
            self._raise(r, ids=[doc["id"]])

    def add_many(self, docs: Iterable[tuple[str | int, str]] | Mapping[str | int, str]) -> int:
        """Add documents, ``(id, text)`` pairs or a mapping of id to text; return how many were
        added.

        They are sent in batches as large as the service takes (its ``max_batch`` and body
        limit, read once from ``/stats``); each batch is added all or none. If a batch is
        refused (an id already in the index: :class:`IdTakenError`), the batches before it stay
        added, and the error's ``added`` says how many documents they held."""
        max_batch, max_body = self._batch_limits()
        items = docs.items() if isinstance(docs, Mapping) else docs
        added = 0
        batch: list[tuple[str, str]] = []
        parts: list[bytes] = []
        size = 0
        # the JSON around the documents: {"documents":[...]} and the commas between them
        room = max_body - len(b'{"documents":[]}')
        for pair in items:
            doc_id, text = pair
            doc_id = _doc_id(doc_id)
            part = _json_bytes({"id": doc_id, "text": text})
            if batch and (len(batch) >= max_batch or size + 1 + len(part) > room):
                added += self._add_batch(batch, parts, added)
                batch, parts, size = [], [], 0
            batch.append((doc_id, text))
            parts.append(part)
            size += len(part) + 1
        if batch:
            added += self._add_batch(batch, parts, added)
        return added

    def _add_batch(self, batch: list[tuple[str, str]], parts: list[bytes], before: int) -> int:
        body = b'{"documents":[' + b",".join(parts) + b"]}"
        ids = [i for i, _ in batch]
        try:
            r = self._send("POST", "/documents:batch", body=body, idempotent=False, confirm=batch)
            if r is None:  # kept by the first try (see _send)
                return len(batch)
            self._raise(r, ids=ids)
            return int(r.json()["added"])
        except ServiceError as e:
            e.added = before
            raise

    def get(self, id: str | int) -> str | None:  # noqa: A002
        """The stored text of a document, or None if the id is not in the index (or the index
        keeps no texts)."""
        r = self._send("GET", f"/documents/{_path_id(_doc_id(id))}")
        if r.status_code == 404:
            return None
        self._raise(r)
        return r.json()["text"]

    def delete(self, id: str | int) -> bool:  # noqa: A002
        """Remove a document; False if the id was not in the index."""
        r = self._send("DELETE", f"/documents/{_path_id(_doc_id(id))}", idempotent=False)
        if r.status_code == 404:
            return False
        self._raise(r)
        return True

    def ids(self, after: str | None = None, limit: int = 100) -> list[str]:
        """A page of at most ``limit`` ids (1 to 1,000), in code-point order, all after
        ``after``. A page shorter than ``limit`` is the last; pass the last id of a page as
        ``after`` for the next (:meth:`iter_ids` does it for you)."""
        params: dict[str, Any] = {"limit": limit}
        if after is not None:
            params["after"] = _doc_id(after)
        r = self._send("GET", "/documents", params=params)
        self._raise(r)
        return list(r.json()["ids"])

    def iter_ids(self, after: str | None = None, page: int = 1000) -> Iterator[str]:
        """Every id in the index after ``after``, in code-point order, fetched ``page`` at a
        time. Ids added or removed meanwhile may or may not be seen."""
        while True:
            got = self.ids(after, page)
            yield from got
            if len(got) < page:
                return
            after = got[-1]

    # -- search ------------------------------------------------------------------------------

    def query(
        self, text: str, *, threshold: float | None = None, top_k: int | None = None
    ) -> QueryAnswer:
        """The indexed near-duplicates of ``text``: a list of :class:`neardup.Match`, most
        similar first, whose similarity reaches ``threshold`` (the index's own by default; a
        lower one is refused), at most ``top_k`` of them. The list is a :class:`QueryAnswer`:
        its ``unique``, ``incomplete`` and ``matches_capped`` say what the service knows of
        it."""
        body: dict[str, Any] = {"text": text}
        if threshold is not None:
            body["threshold"] = float(threshold)
        if top_k is not None:
            body["top_k"] = top_k
        r = self._send("POST", "/query", body=_json_bytes(body))
        self._raise(r)
        got = r.json()
        answer = QueryAnswer(Match(m["id"], m["similarity"]) for m in got["matches"])
        answer.unique = got["unique"]
        answer.incomplete = got.get("incomplete", False)
        answer.matches_capped = got.get("matches_capped", False)
        answer.threshold = got["threshold"]
        return answer

    def check(
        self,
        text: str,
        *,
        threshold: float | None = None,
        id: str | int | None = None,
        add: bool = False,
    ) -> CheckAnswer:  # noqa: A002
        """Whether ``text`` repeats indexed documents, whole or in passages: a
        :class:`CheckAnswer`. ``id``: the text's own id, left out of the matches if already
        indexed. With ``add=True`` (and an ``id``; a write key) the text is added if it is
        unique, atomically: of two near-duplicates checked at once, one only is added
        (``added`` says whether); :class:`IdTakenError` if the id is taken."""
        body: dict[str, Any] = {"text": text}
        if threshold is not None:
            body["threshold"] = float(threshold)
        if id is not None:
            body["id"] = _doc_id(id)
        if add:
            body["add"] = True
        r = self._send("POST", "/check", body=_json_bytes(body), idempotent=not add)
        self._raise(r, ids=[body["id"]] if id is not None else None)
        return _check_answer(r.json())

    # -- the service -------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The service's statistics: the index's (backend, documents, threshold, ...), request
        counts, and its ``limits`` (``max_batch``, ``max_text_bytes``, ``max_upload_bytes``)."""
        r = self._send("GET", "/stats")
        self._raise(r)
        return r.json()

    def health(self) -> dict[str, Any]:
        """``{"status": "ok", "documents": N}`` while the service answers (``documents`` is
        None without a key where the service needs one). Needs no key."""
        r = self._send("GET", "/health")
        self._raise(r)
        return r.json()

    # -- requests ----------------------------------------------------------------------------

    def _batch_limits(self) -> tuple[int, int]:
        """The most documents and body bytes one batch may carry, asked once of the service."""
        if self._limits is None:
            try:
                limits = self.stats().get("limits") or {}
            except (AuthError, InvalidRequestError):  # a service that does not say: defaults
                limits = {}
            except ServiceError as e:
                if e.status != 404:
                    raise
                limits = {}
            self._limits = (
                int(limits.get("max_batch", DEFAULT_MAX_BATCH)),
                int(limits.get("max_upload_bytes", DEFAULT_MAX_BODY)),
            )
        return self._limits

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = True,
        confirm: list[tuple[str, str]] | None = None,
    ) -> Any:
        """The service's answer to a request, after the retries; None where ``confirm`` (the
        documents an add sends) was found kept by an earlier try (see below)."""
        httpx = self._httpx
        rid = secrets.token_hex(8)  # one ID for every try, to find them in the service's log
        headers = {"X-Request-ID": rid}
        if body is not None:
            headers["Content-Type"] = "application/json"
        attempt = 0
        unsure = False  # an earlier try of this write may have been kept
        while True:
            try:
                r = self._http.request(method, path, content=body, params=params, headers=headers)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as e:
                # the request was never sent: safe to send again, whatever it does
                if attempt >= self.retries:
                    raise self._unreachable(e, rid) from None
                self._sleep(None, attempt)
                attempt += 1
                continue
            except httpx.TransportError as e:
                # sent, and then no answer: an add or a delete may have been done
                if not idempotent or attempt >= self.retries:
                    raise self._unreachable(e, rid) from None
                self._sleep(None, attempt)
                attempt += 1
                continue
            if r.status_code not in (503, 408) or attempt >= self.retries:
                break
            # The service answers 408 before it reads the request (the headers or the body
            # came too late), and 503 before it does any work: requests over --max-requests
            # (front.py), bodies over the body budget or the memory ceiling (app.py _Guard,
            # memory.py), large texts over their limit, an SQLite write lock held by another
            # process, a file that cannot be written or went away: "nothing was written". So
            # sending a write again is safe. The one exception: a Redis server that stops
            # answering while a write's last step is under way may have kept it; the write
            # sent again then finds its own documents (409), which ``confirm`` recognises.
            if r.status_code == 503 and not idempotent:
                unsure = True
            self._sleep(r, attempt)
            attempt += 1
        if r.status_code == 409 and unsure and confirm and self._kept(confirm):
            return None
        return r

    def _kept(self, docs: list[tuple[str, str]]) -> bool:
        """Whether every one of ``docs`` is in the index with that very text."""
        try:
            return all(self.get(i) == text for i, text in docs)
        except ServiceError:
            return False

    def _sleep(self, r: Any, attempt: int) -> None:
        wait = None
        if r is not None:
            wait = _retry_after(r)
        if wait is None:  # exponential backoff, with jitter so that clients do not align
            wait = BACKOFF_SECONDS * 2**attempt * random.uniform(0.8, 1.2)
        time.sleep(min(wait, self.max_wait))

    def _unreachable(self, exc: Exception, rid: str) -> ServiceUnreachableError:
        what = type(exc).__name__
        return ServiceUnreachableError(
            None,
            self._clean(f"the service at {_shown_url(self.url)} did not answer ({what}: {exc})"),
            rid,
        )

    def _clean(self, text: str) -> str:
        """``text`` without the key (the service never sends it back; kept out all the same)."""
        if self._key:
            text = text.replace(self._key, "***")
        return text

    def _raise(self, r: Any, ids: list[str] | None = None) -> None:
        """Raise the error the answer ``r`` says, if it is one."""
        if r.status_code < 400:
            return
        try:
            got = r.json()
            detail = got.get("detail") if isinstance(got, dict) else None
        except ValueError:
            detail = None
        if not isinstance(detail, str):
            detail = r.reason_phrase or f"HTTP {r.status_code}"
        detail = self._clean(detail)
        rid = r.headers.get("x-request-id")
        cls = _ERRORS.get(r.status_code, ServiceError)
        if cls is IdTakenError:
            taken = next(
                (i for i in ids or () if detail.startswith(f"id {i!r} ")),
                (ids or [""])[0] if ids and len(ids) == 1 else "",
            )
            raise IdTakenError(r.status_code, detail, rid, None, taken)
        raise cls(r.status_code, detail, rid, _retry_after(r))


def _retry_after(r: Any) -> float | None:
    value = r.headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:  # an HTTP date: not sent by the service
        return None


def _version() -> str:
    from ._version import __version__

    return __version__
