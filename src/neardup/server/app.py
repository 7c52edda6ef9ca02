"""The HTTP service of a :class:`neardup.Index` and its web page.

``create_app(index)`` returns a FastAPI application: JSON endpoints to add, query, check and
remove documents, an upload endpoint that deduplicates a CSV or JSONL collection in memory, and
the web page at ``/``. Every client error is a JSON ``{"detail": "message"}`` with a 4xx status;
blocking work runs in sync endpoints, which FastAPI runs in its thread pool, so concurrent
clients are served at once.

Access (:mod:`.access`): with ``api_keys`` every endpoint but the page, its files, ``/health``
and the API documentation needs a key (``Authorization: Bearer KEY`` or ``X-API-Key: KEY``), of
the ``write`` role to add, delete or upload; requests whose ``Host`` is not allowed are refused,
and so are state-changing requests from web pages of other origins.

Run it with ``neardup serve --index shop.db --port 8000`` or :func:`run`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import sqlite3
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import (
    Depends,
    FastAPI,
    File,
    Form,
    HTTPException,
    Query,
    Request,
    Security,
    UploadFile,
)
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.security import APIKeyHeader, HTTPBearer
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.cors import CORSMiddleware

from .._log import get_logger
from .._records import record
from .._threads import available_cpus
from ..errors import ConfigError, InputError, NeardupError, SkipReason
from ..index import DuplicateIdError, Index, IndexBusyError, IndexChangedError, IndexFullError
from ..index.core import COMMON_TEXTS
from ..index.redact import redact_location
from ..validate import check_int
from .access import (
    LOOPBACK_NAMES,
    ApiKeys,
    HostRules,
    Role,
    allows,
    check_origins,
    host_entry,
    is_loopback,
    origin_allowed,
)
from .collections import (
    COLLECTION_DISK_BYTES,
    COLLECTION_MEMORY_BYTES,
    COLLECTION_SHINGLE,
    CONCURRENT_UPLOADS,
    MAX_COLLECTIONS,
    Collection,
    CollectionStore,
    UploadSlots,
    known_pairs,
    read_upload,
    summary_json,
    upload_format,
)
from .front import LOGGED_SCOPE_KEY, MAX_CONNECTIONS, MAX_REQUESTS, add_headers, request_id
from .ids import id_problem, normal_id
from .memory import (
    BODY_MEMORY_BYTES,
    BodyBudget,
    MemoryCeiling,
    release_free_memory,
)
from .passages import passages_within, word_keys

STATIC = Path(__file__).parent / "static"
#: Passages that one ``/check`` answer carries at most (``reused_capped`` says when more were
#: found).
MAX_PASSAGES = 200
#: Indexed texts one ``/check`` compares its text with at most, and the seconds it may spend
#: comparing them (``reuse_incomplete`` says when either stopped it).
CHECK_CANDIDATES = 1000
CHECK_SECONDS = 2.0
#: ``/check`` searches for reused passages made at once by a process, by default; the others
#: wait for one (within their CHECK_SECONDS). A search compares hundreds of texts; several at
#: once take turns at the interpreter with each other and with every cheaper request: over an
#: index of a million texts, one at a time gave /query p99 38 ms instead of 67 and 1,517 adds a
#: second instead of 700 beside four readers (benchmarks/service_scale.py).
CHECK_SLOTS = 1
#: seconds one ``/query`` may spend reading and verifying its candidates (``incomplete`` says
#: when it stopped)
QUERY_SECONDS = 2.0

#: Threads that run the endpoints' work, by default (Starlette's default is 40: as many SQLite
#: connections, each with a page cache of up to 64 MB, and as many threads taking turns at the
#: interpreter on a machine with a few cores).
THREADS = 16
#: Matches of ``/check`` that come with their text and shared passages.
CHECK_DETAILS = 10
#: Matches one ``/query`` or ``/check`` answer carries at most, best first (``matches_capped``
#: says when more reached the threshold).
MAX_MATCHES = 1000
#: UTF-8 bytes of matched texts one ``/check`` answer carries at most (``texts_capped`` says
#: when a match comes without its text).
CHECK_TEXT_BYTES = 4_000_000
#: seconds ``/collections/{cid}/pair`` may spend finding the shared passages (``incomplete``
#: says when it stopped)
PAIR_SECONDS = 0.8

_JSON_ENDPOINTS = frozenset({"/documents", "/documents:batch", "/query", "/check"})
_UPLOAD_ENDPOINTS = frozenset({"/collections"})
#: The endpoints that read a request body (POST only).
_BODY_ENDPOINTS = _JSON_ENDPOINTS | _UPLOAD_ENDPOINTS
#: What anyone may fetch without a key: the page and its files, liveness, the API's
#: documentation (the page asks for a key when the API answers 401).
PUBLIC_PATHS = frozenset({"/", "/health", "/docs", "/openapi.json"})
PUBLIC_PREFIXES = ("/static/",)
#: Methods that change nothing: no Origin check.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Where the middleware leaves the role of the request's key for the endpoints.
ROLE_SCOPE_KEY = "neardup.role"


# ---------------------------------------------------------------------------------------------
# Request and response models


def _valid_unicode(s: str) -> str:
    # JSON can carry lone surrogates ("\ud800"), which are not text and cannot be stored as UTF-8.
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError as e:
            raise ValueError(
                f"contains a lone surrogate (U+{ord(s[e.start]):04X}) at "
                f"character {e.start}; send valid Unicode text"
            ) from None
    return s


def _valid_id(s: str) -> str:
    problem = id_problem(s)
    if problem is not None:
        raise ValueError(problem)
    return normal_id(s)


#: Why an empty text is refused, the same words on every path.
EMPTY_TEXT = "is empty or only white space; a document needs at least one word"


def _not_empty(s: str) -> str:
    if not s.strip():
        raise ValueError(EMPTY_TEXT)
    return s


Text = Annotated[str, AfterValidator(_valid_unicode)]
#: A text to add to the index: not empty (as the upload path, which skips such records).
DocText = Annotated[str, AfterValidator(_valid_unicode), AfterValidator(_not_empty)]
DocId = Annotated[
    str,
    Field(min_length=1, max_length=1024),
    AfterValidator(_valid_unicode),
    AfterValidator(_valid_id),
]
ThresholdParam = Annotated[
    float | None,
    Field(
        default=None,
        gt=0,
        le=1,
        description="Minimum Jaccard similarity of the word-shingle sets, in (0, 1], at least the "
        "index's own threshold (below it the index cannot find every near-duplicate, "
        "so a lower one is refused with 422); default: the index's threshold.",
    ),
]


class _Strict(BaseModel):
    # strict: "yes" is not true, true is not 1, "5" is not 5 (JSON numbers are still floats)
    model_config = ConfigDict(extra="forbid", strict=True)


class DocumentIn(_Strict):
    id: DocId = Field(
        description="Your id of the document: a non-empty string of characters "
        "that print (no control, zero-width or other format "
        "characters, no bidirectional marks), kept in Unicode NFC "
        "form."
    )
    text: DocText = Field(description="The document's text (not empty or only white space).")


class DocumentOut(BaseModel):
    id: str = Field(description="The document's id.")
    text: str | None = Field(description="Its stored text (null if the index keeps no texts).")


class IdPage(BaseModel):
    ids: list[str] = Field(description="Ids in code-point order, all after `after`.")
    next: str | None = Field(description="Pass as `after` for the next page; null on the last.")


class Created(BaseModel):
    id: str = Field(description="The id of the document added.")


class BatchIn(_Strict):
    documents: list[DocumentIn] = Field(
        description="Documents to add, all or none: if any id is already in the index, "
        "nothing is added."
    )


class BatchOut(BaseModel):
    added: int = Field(description="Number of documents added.")


class QueryIn(_Strict):
    text: Text = Field(description="The text to look up.")
    threshold: ThresholdParam
    top_k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MATCHES,
        description=(f"Return at most this many matches (best first; at most {MAX_MATCHES})."),
    )


class MatchOut(BaseModel):
    id: str = Field(description="Id of an indexed near-duplicate.")
    similarity: float = Field(
        description="Verified Jaccard similarity of the shingle sets, 0 to 1."
    )


class QueryOut(BaseModel):
    matches: list[MatchOut] = Field(description="Near-duplicates, highest similarity first.")
    unique: bool = Field(description="True if nothing in the index reaches the threshold.")
    threshold: float = Field(description="The threshold used.")
    common: list[CommonOut] = Field(
        default_factory=list,
        description=(
            f"Passages of the checked text that {COMMON_TEXTS} indexed texts or more hold "
            "(template sentences, widely quoted text), each once: the texts that share nothing "
            "else with it are counted here, not listed in `reused`."
        ),
    )
    matches_capped: bool = Field(
        default=False,
        description=(
            f"True if more than {MAX_MATCHES} documents reach the threshold: the answer holds the "
            "best ones."
        ),
    )
    incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every candidate was verified within {QUERY_SECONDS:g} s: the answer may "
            "miss near-duplicates, and `unique` is false."
        ),
    )


class Passage(BaseModel):
    a: tuple[int, int] = Field(
        description="[start, end) character offsets in the first text "
        "(the checked text, or document a)."
    )
    b: tuple[int, int] = Field(
        description="[start, end) character offsets in the second text (the match, or document b)."
    )
    words: int = Field(description="Number of words in the passage.")


class CheckIn(_Strict):
    text: Text = Field(description="The new text to check against the index.")
    id: DocId | None = Field(
        default=None,
        description=("Its id: left out of the matches if already indexed; required with add=true."),
    )
    threshold: ThresholdParam
    add: bool = Field(
        default=False,
        description=(
            "Add the text under `id` if it is unique (atomically: two near-duplicates checked at "
            "once cannot both be added)."
        ),
    )


class CheckMatch(MatchOut):
    text: str | None = Field(
        default=None,
        description=(
            f"The match's stored text (for the {CHECK_DETAILS} best matches only, while the "
            "answer's texts stay within its byte budget: see `texts_capped`)."
        ),
    )
    passages: list[Passage] = Field(
        default_factory=list,
        description=(
            "Passages the checked text shares with the match (offsets into the checked text, "
            "`a`, and into the match's text, `b`); for the matches that come with their text, "
            "as far as the time budget allows (see `passages_incomplete`)."
        ),
    )


class ReusedOut(BaseModel):
    id: str = Field(description="Id of an indexed text that shares passages with the checked one.")
    share: float = Field(description="Share of the checked text's words in those passages, 0 to 1.")
    share_source: float = Field(description="Share of the indexed text's words in them.")
    text: str | None = Field(
        default=None, description=(f"The indexed text (for the {CHECK_DETAILS} most reused only).")
    )
    passages: list[Passage] = Field(
        description=(
            "The passages: offsets into the checked text, `a`, and into the indexed text, `b`."
        )
    )


class CommonOut(BaseModel):
    a: tuple[int, int] = Field(description="[start, end) character offsets in the checked text.")
    words: int = Field(description="Number of words in the passage.")
    texts: int = Field(
        description=(
            "About how many indexed texts hold it: at most this many (the fewest texts that hold "
            "one of its fingerprints, counted up to the index's bucket cap)."
        )
    )
    example: str = Field(description="Id of an indexed text that holds it.")
    b: tuple[int, int] = Field(description="[start, end) character offsets in that text.")


class CheckOut(BaseModel):
    unique: bool = Field(
        description="True if nothing in the index reaches the threshold, "
        "no indexed text shares a passage with the text (reused "
        "or common), and every candidate was compared."
    )
    threshold: float = Field(description="The threshold used.")
    matches: list[CheckMatch] = Field(description="Near-duplicates, highest similarity first.")
    added: bool = Field(description="True if the text was added to the index.")
    reused: list[ReusedOut] = Field(
        default_factory=list,
        description=(
            "Indexed texts the checked text shares passages with (copied text inside otherwise "
            "different texts), most reused first; empty where the index does not find passages "
            "(see `passages_indexed`)."
        ),
    )
    common: list[CommonOut] = Field(
        default_factory=list,
        description=(
            f"Passages of the checked text that {COMMON_TEXTS} indexed texts or more hold "
            "(template sentences, widely quoted text), each once: the texts that share nothing "
            "else with it are counted here, not listed in `reused`."
        ),
    )
    matches_capped: bool = Field(
        default=False,
        description=(
            f"True if more than {MAX_MATCHES} documents reach the threshold: the answer holds the "
            "best ones."
        ),
    )
    reused_capped: bool = Field(
        default=False, description=("True if more passages were found than the response carries.")
    )
    passages_incomplete: bool = Field(
        default=False,
        description=(
            f"True if the passages of some of the best matches were not found within the "
            f"{CHECK_SECONDS:g} s the check may take: those matches come with their text and "
            "without passages (or with the passages found so far)."
        ),
    )
    texts_capped: bool = Field(
        default=False,
        description=(
            f"True if some of the best matches or reused texts come with `text` null because the "
            f"answer carries at most {CHECK_TEXT_BYTES:,} bytes of matched texts (UTF-8) in all; "
            "fetch them with GET /documents/{id}."
        ),
    )
    reuse_incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every indexed text that may share a passage was compared (more than "
            f"{CHECK_CANDIDATES}, or {CHECK_SECONDS:g} s spent): the answer may miss some, and "
            "`unique` is false."
        ),
    )
    passages_indexed: bool = Field(
        default=False,
        description=(
            "Whether this index finds reused passages (an index built without them finds "
            "whole-text near-duplicates only)."
        ),
    )
    min_passage_words: int | None = Field(
        default=None, description=("The shortest passage the index reports, in words.")
    )


class HealthOut(BaseModel):
    status: Literal["ok"] = Field(description="Always 'ok' when the service answers.")
    documents: int | None = Field(
        description="Documents in the index (null for a client "
        "without a key, where the service needs one)."
    )


class ErrorOut(BaseModel):
    detail: str = Field(description="What was wrong with the request.")


class Member(BaseModel):
    id: str = Field(description="Document id (the id field, or the line number of the record).")
    similarity_to_representative: float = Field(
        description="Jaccard similarity to the cluster's representative (1 for itself)."
    )
    title: str | None = Field(
        default=None,
        description=("The first line of its text (at most 80 characters), to recognise it by."),
    )


class ClusterOut(BaseModel):
    cluster: int = Field(description="Cluster number.")
    size: int = Field(description="Number of documents in the cluster.")
    representative: str = Field(description="Id of the document kept from the cluster.")
    members: list[Member] = Field(description="Every document of the cluster.")


#: The reasons a record of an upload is left out for (a whole file is a 415 or a 422).
_RECORD_REASONS = (
    SkipReason.MALFORMED_JSON,
    SkipReason.NOT_OBJECT,
    SkipReason.UNDECODABLE,
    SkipReason.BAD_ROW,
    SkipReason.MISSING_FIELD,
    SkipReason.NON_STRING_FIELD,
    SkipReason.BAD_ID,
    SkipReason.DUPLICATE_ID,
    SkipReason.EMPTY_TEXT,
    SkipReason.TEXT_TOO_LARGE,
)


class SkipExample(BaseModel):
    line: int = Field(description="Line of the file where the record starts.")
    reason: str = Field(
        description=(
            "Why it was skipped, a reason of `skipped`: "
            + "; ".join(f"`{r}`: {r.description}" for r in _RECORD_REASONS)
            + "."
        )
    )
    message: str = Field(description="What was wrong, in words.")


class CollectionOut(BaseModel):
    collection_id: str = Field(description="Use it with GET /collections/{collection_id}.")
    filename: str | None = Field(description="Name of the uploaded file, as sent.")
    format: Literal["csv", "jsonl", "parquet"] = Field(description="How the file was read.")
    id_field: str | None = Field(
        description="Field of the ids (given, or the field id found in "
        "every record); null: ids are line numbers."
    )
    documents: int = Field(description="Records deduplicated.")
    skipped: dict[str, int] = Field(description="Records left out, counted by reason.")
    skipped_examples: list[SkipExample] = Field(description="The first few records left out.")
    threshold: float = Field(description="Jaccard threshold used.")
    cluster_method: str = Field(description="'components' or 'strict'.")
    clusters: list[ClusterOut] = Field(
        description="Clusters of two or more near-duplicates, largest first."
    )
    pairs: int = Field(
        description=(
            "Pairs of documents known to be near-duplicates: the verified pairs of distinct texts "
            "and those their exact copies imply (every two copies of a text, and every copy of "
            "one text with every copy of a near-duplicate of it), counted, not listed."
        )
    )
    duplicates: int = Field(description="Documents that repeat a representative.")


class PairOut(BaseModel):
    collection_id: str
    a: DocumentOut = Field(description="The first document.")
    b: DocumentOut = Field(description="The second document.")
    similarity: float | None = Field(
        description=(
            "Their Jaccard similarity where the run knows it exactly: 1 for two copies of one "
            "text (after normalisation), the verified similarity of their texts where the run "
            "compared them (a pair, or a member and its representative); null otherwise."
        )
    )
    same_cluster: bool = Field(description="Whether they are in the same cluster.")
    passages: list[Passage] = Field(description="Passages the two texts share.")
    incomplete: bool = Field(
        default=False,
        description=(
            f"True if not every shared passage was found within {PAIR_SECONDS:g} s: `passages` "
            "holds those found."
        ),
    )


#: What each error status means for a client (every error body is an :class:`ErrorOut`).
_STATUS_MEANING = {
    400: "A malformed request: a bad header, an unknown Host name, invalid UTF-8, more than "
    "one API key.",
    401: "No API key, or one the service does not know (see `WWW-Authenticate`).",
    403: "The key's role may not do this, or a web page of another origin sent it.",
    404: "No such document, collection or endpoint.",
    408: "The request's headers or body did not arrive in time; send it again at once.",
    409: "The id is already in the index (nothing was added).",
    413: "The body, a text or a batch is over the service's limit.",
    415: "The wrong content type (JSON bodies, multipart uploads).",
    422: "Invalid fields: `detail` names each one.",
    500: "An error of the service: nothing is shown of it; the service's log has it under "
    "the request's id.",
    503: "The service or its index cannot answer right now (busy, too many requests, the "
    "backend unreachable or changed): try again after `Retry-After` seconds where it is "
    "given.",
    507: "No room: the index holds the most documents the service keeps, or its disk is full.",
}
_RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "integer"},
    }
}


def _error_responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {
        c: {
            "model": ErrorOut,
            "description": _STATUS_MEANING[c],
            **({"headers": _RETRY_AFTER} if c == 503 else {}),
        }
        for c in codes
    }


#: The errors every endpoint of the API may answer, and those of the endpoints that add
_ERRORS = _error_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 500, 503)
_WRITE_ERRORS = _error_responses(400, 401, 403, 404, 408, 409, 413, 415, 422, 500, 503, 507)

#: How keys are sent, for the OpenAPI schema (the middleware reads them; see ``_key_of``).
_BEARER = HTTPBearer(
    auto_error=False, scheme_name="bearer", description="An API key: `Authorization: Bearer KEY`."
)
_X_API_KEY = APIKeyHeader(
    name="X-API-Key",
    auto_error=False,
    scheme_name="apiKey",
    description="An API key: `X-API-Key: KEY`.",
)
_WHAT_WRITE_DOES = "to add or delete documents and to upload collections"


def _role_dependencies(api_keys: ApiKeys | None) -> tuple[Any, Any]:
    """The dependencies of endpoints that need a read key and a write key; each gives the
    role of the request's key (``write`` for everyone where the service has no keys)."""

    def need(needed: Role) -> Any:
        if api_keys is None:

            def everyone() -> Role:
                return "write"

            return Depends(everyone)

        def dep(
            request: Request,
            _bearer: Annotated[Any, Security(_BEARER)],
            _key: Annotated[Any, Security(_X_API_KEY)],
        ) -> Role:
            role = request.scope.get(ROLE_SCOPE_KEY)
            if role is None:  # the middleware refuses these first; kept as a guard
                raise HTTPException(
                    401,
                    "this service needs an API key: send it as 'Authorization: Bearer KEY'",
                    headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
                )
            if not allows(role, needed):
                raise HTTPException(
                    403,
                    f"this needs an API key with the {needed} role "
                    f"({_WHAT_WRITE_DOES}); the key sent has the "
                    f"{role} role",
                )
            return role

        return Depends(dep)

    return need("read"), need("write")


# ---------------------------------------------------------------------------------------------
# Request counts


@record
class _Counts:
    """Request counts for ``/stats``."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    total: int = 0
    by_endpoint: Counter = field(default_factory=Counter)
    by_status: Counter = field(default_factory=Counter)

    def add(self, endpoint: str, status: int) -> None:
        with self.lock:
            self.total += 1
            self.by_endpoint[endpoint] += 1
            self.by_status[str(status)] += 1

    def to_dict(self) -> dict[str, Any]:
        with self.lock:
            return {
                "total": self.total,
                "by_endpoint": dict(sorted(self.by_endpoint.items())),
                "by_status": dict(sorted(self.by_status.items())),
            }


# ---------------------------------------------------------------------------------------------
# Body limits, content types and request counts


class _Guard:
    """ASGI middleware, in this order: the Host allow-list, the Origin of state-changing
    requests, the API key (its role left in the scope for the endpoints), the body size limit
    (Content-Length and bytes actually sent), content type and UTF-8 of JSON bodies; and request
    counts. Refusals come before the body is read. Reads the body once and replays it."""

    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        max_upload_bytes: int,
        counts: _Counts,
        hosts: HostRules,
        origins: list[str],
        api_keys: ApiKeys | None,
        body_seconds: float = 30.0,
        bodies: BodyBudget | None = None,
        ceiling: MemoryCeiling | None = None,
    ):
        self.app = app
        self.body_seconds = body_seconds
        self.limit = max_upload_bytes
        self.bodies = bodies or BodyBudget(BODY_MEMORY_BYTES)
        self.ceiling = ceiling or MemoryCeiling(None)
        self.counts = counts
        self.hosts = hosts
        self.origins = origins
        self.api_keys = api_keys

    async def __call__(
        self, scope: MutableMapping[str, Any], receive: Callable, send: Callable
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = [500]
        keys = self.api_keys  # a key sent as the request ID is not taken (nor logged)
        rid = request_id(scope, None if keys is None else lambda v: keys.role(v) is not None)

        async def send_counting(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                add_headers(message, rid)
            await send(message)

        held = [0]  # body bytes reserved in the budget, given back when the request is done
        try:
            error = await self._check(scope, receive, held)
            if isinstance(error, JSONResponse):
                await error(scope, receive, send_counting)
            else:
                await self.app(scope, error, send_counting)
        finally:
            if held[0]:
                self.bodies.give(held[0])
            endpoint = scope.get("endpoint")
            self.counts.add(getattr(endpoint, "__name__", "other"), status[0])

    async def _check(
        self, scope: MutableMapping[str, Any], receive: Callable, held: list[int]
    ) -> JSONResponse | Callable:
        """A response refusing the request, or the ``receive`` to run it with (the bytes of
        its body reserved in the budget go into ``held``)."""
        headers = {
            k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])
        }
        method, path = scope["method"], scope["path"]
        refused = self._access(scope, headers, method, path)
        if refused is not None:
            return refused
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                return _error(400, f"Content-Length {length!r} is not a number")
            if int(length) > self.limit:
                return _error(
                    413, f"the request body is {int(length)} bytes; the limit is {self.limit} bytes"
                )
        if method == "POST" and (path in _JSON_ENDPOINTS or path in _UPLOAD_ENDPOINTS):
            ctype = headers.get("content-type", "")
            media = ctype.split(";")[0].strip().lower()
            if (
                path in _JSON_ENDPOINTS
                and ctype
                and not (media == "application/json" or media.endswith("+json"))
            ):
                return _error(
                    415,
                    f"{path} takes a JSON body: send Content-Type: "
                    f"application/json (got {ctype!r})",
                )
            if (
                path in _JSON_ENDPOINTS
                and "charset=" in ctype.lower()
                and ctype.lower().split("charset=")[1].strip(" \"'").split(";")[0]
                not in ("utf-8", "utf8")
            ):
                return _error(415, f"{path} takes UTF-8 JSON (got {ctype!r})")
            if path in _UPLOAD_ENDPOINTS and media != "multipart/form-data":
                return _error(
                    415,
                    f"{path} takes a multipart/form-data upload with a 'file' "
                    f"field (got {ctype or 'no Content-Type'!r})",
                )
        if method != "POST" or path not in _BODY_ENDPOINTS:
            # no endpoint here reads a body: none is waited for (a slow body sent to the page
            # or to /health must not hold a request slot)
            return receive
        if self.ceiling.over():
            return _error(
                503,
                "the service is at its memory limit (--max-memory-mb) and "
                "takes no new work until it falls; try again in a moment",
                {"Retry-After": "5"},
            )
        # Read the whole body (bounded) so that its size and encoding are known before parsing;
        # a client that stops sending gets a 408 instead of holding the request open. The
        # bodies held at once stay within their budget: the announced length is reserved
        # before anything is read, a body without one as it arrives.
        if length is not None and not self._reserve(int(length), held):
            return self._bodies_full()
        chunks: list[bytes] = []
        size = 0
        deadline = asyncio.get_running_loop().time() + self.body_seconds
        while True:
            left = deadline - asyncio.get_running_loop().time()
            try:
                message = await asyncio.wait_for(receive(), timeout=max(left, 0.001))
            except asyncio.TimeoutError:
                return _error(
                    408,
                    f"the request body did not arrive within "
                    f"{self.body_seconds:g} s: send it at once",
                    {"Connection": "close", "Retry-After": "1"},
                )
            if message["type"] == "http.disconnect":
                return _error(400, "the client disconnected before sending the whole body")
            body = message.get("body", b"")
            size += len(body)
            if size > self.limit:
                return _error(413, f"the request body is over the limit of {self.limit} bytes")
            if size > held[0] and not self._reserve(size - held[0], held):
                return self._bodies_full()
            chunks.append(body)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if method == "POST" and path in _JSON_ENDPOINTS and body:
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as e:
                return _error(400, f"the request body is not valid UTF-8 (byte {e.start + 1})")
        sent = False

        async def replay() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    def _reserve(self, n: int, held: list[int]) -> bool:
        if not self.bodies.take(n):
            return False
        held[0] += n
        return True

    def _bodies_full(self) -> JSONResponse:
        return _error(
            503,
            f"the service is receiving its limit of "
            f"{self.bodies.limit / 1e6:g} MB of request bodies at once "
            "(--body-memory-mb); try again in a moment",
            {"Retry-After": "2"},
        )

    def _access(
        self, scope: MutableMapping[str, Any], headers: dict[str, str], method: str, path: str
    ) -> JSONResponse | None:
        """A refusal for the Host, the Origin or the key, or None (the role is then in the
        scope)."""
        host = headers.get("host")
        if not self.hosts.allows(host):
            return _error(
                400,
                f"the Host header {host!r} is not a name this service answers "
                "to; if clients reach it under that name, start it with "
                "--allowed-host NAME (allowed_hosts)"
                if host is not None
                else "the request has no Host header; send one",
            )
        if method not in SAFE_METHODS:
            origin = headers.get("origin")
            site = headers.get("sec-fetch-site", "").strip().lower()
            if origin is not None and not origin_allowed(
                origin, scope.get("scheme", "http"), host, self.origins
            ):
                return _error(
                    403,
                    f"cross-origin request refused: a web page of {origin!r} "
                    f"may not {method} here (only the service's own page may, "
                    "and origins given with --allowed-origin or --cors-origin)",
                )
            if origin is None and site in ("cross-site", "same-site"):
                return _error(
                    403,
                    f"cross-site request refused (Sec-Fetch-Site: {site}): only "
                    "the service's own page may change something",
                )
        if self.api_keys is None:
            scope[ROLE_SCOPE_KEY] = "write"  # no keys: everyone may do everything
            return None
        self.api_keys.reload_if_changed()
        repeated = _repeated_key_headers(scope.get("headers", []))
        if repeated is not None:
            return _error(
                400,
                f"the request sends {repeated}: send one API key, in one "
                "'Authorization: Bearer KEY' or one 'X-API-Key: KEY' header",
            )
        key, how = _key_of(headers)
        role = self.api_keys.role(key) if key else None
        scope[ROLE_SCOPE_KEY] = role
        if role is not None or path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES):
            return None
        if key == "":
            return _error(
                401,
                "the Authorization header is not 'Bearer KEY': send the API "
                "key as 'Authorization: Bearer KEY' (or 'X-API-Key: KEY')",
                headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
            )
        if key is None:
            return _error(
                401,
                "this service needs an API key: send it as 'Authorization: "
                "Bearer KEY' (or 'X-API-Key: KEY'); ask its operator for a "
                "read key (to search) or a write key (to add and delete)",
                headers={"WWW-Authenticate": 'Bearer realm="neardup"'},
            )
        return _error(
            401,
            f"the API key sent ({how}) is not valid: it may have been "
            "replaced; ask the service's operator for the current one",
            headers={"WWW-Authenticate": 'Bearer realm="neardup", error="invalid_token"'},
        )


def _repeated_key_headers(raw: Sequence[tuple[bytes, bytes]]) -> str | None:
    """How a request sends more than one key, in words (never the keys), or None: two
    ``Authorization`` headers, two ``X-API-Key`` headers, or a bearer key and an ``X-API-Key``
    (an ``Authorization`` of another scheme, from a proxy's own login, is not a key)."""
    auth = [v for k, v in raw if k.lower() == b"authorization"]
    api = sum(1 for k, _ in raw if k.lower() == b"x-api-key")
    if len(auth) > 1:
        return f"{len(auth)} Authorization headers"
    if api > 1:
        return f"{api} X-API-Key headers"
    if api and auth and auth[0].strip()[:7].lower() == b"bearer ":
        return "both an Authorization: Bearer header and an X-API-Key header"
    return None


def _key_of(headers: dict[str, str]) -> tuple[str | None, str]:
    """The key a request sends and how (never logged or echoed): ``Authorization: Bearer KEY``,
    else ``X-API-Key: KEY``."""
    auth = headers.get("authorization")
    if auth is not None:
        scheme, _, value = auth.strip().partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip(), "Authorization: Bearer"
    key = headers.get("x-api-key")
    if key is not None and key.strip():
        return key.strip(), "X-API-Key"
    if auth is not None:
        return "", "Authorization"  # a header that is not Bearer KEY: no valid key
    return None, ""


log = get_logger(__name__)

#: requests the service handles at once by default (503 beyond; see front.py), and the
#: seconds an idle keep-alive connection stays open
CONCURRENCY = MAX_REQUESTS
KEEP_ALIVE_SECONDS = 5

#: seconds a request waits for another process's SQLite write lock before a 503 (the
#: library's default, 60 s, is longer than a web client waits)
SQLITE_BUSY_SECONDS = 5.0


def _busy(exc: BaseException) -> bool:
    msg = str(exc).lower()
    return "locked" in msg or "busy" in msg


def _redis_errors() -> tuple[type[BaseException], ...]:
    """The Redis client's errors that mean its server cannot be reached (none without the
    client: no Redis index either)."""
    try:
        import redis.exceptions as rex
    except ImportError:
        return ()
    return (rex.ConnectionError, rex.TimeoutError, rex.BusyLoadingError)


def _unreachable(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) says that the Redis server cannot be reached."""
    kinds = _redis_errors()
    if not kinds:
        return False
    seen = exc
    for _ in range(5):
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
        if seen is None:
            return False
    return False


def _error(status: int, detail: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"detail": detail}, status_code=status, headers=headers)


class _Cors(CORSMiddleware):
    """Starlette's CORS middleware, answering a refused preflight with a JSON error."""

    def preflight_response(self, request_headers: Any) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        what = bytes(response.body).decode("latin-1").removeprefix("Disallowed CORS ")
        headers = {
            k: v
            for k, v in response.headers.items()
            if k.lower() not in ("content-length", "content-type")
        }
        return _error(
            response.status_code,
            f"cross-origin request refused: its {what} "
            "are not allowed (--cors-origin names the web "
            "origins that may call this service)",
            headers=headers,
        )


def _loc(loc: tuple[Any, ...]) -> str:
    parts = list(loc)
    prefix = ""
    if parts and parts[0] in ("query", "path", "header", "cookie"):
        prefix = f"{parts.pop(0)} parameter "
    elif parts and parts[0] == "body":
        parts.pop(0)
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return prefix + (out or "request body")


#: What a JSON field of a strict type must be, after pydantic's message.
_JSON_TYPES = {
    "bool_type": " (JSON true or false; not a string or a number)",
    "int_type": " (a JSON integer; not true or false, a string or a fraction)",
    "float_type": " (a JSON number; not true or false or a string)",
    "string_type": " (a JSON string)",
}


def _validation_message(errors: list[dict[str, Any]]) -> str:
    msgs = []
    for e in errors[:5]:
        kind = e.get("type", "")
        if kind == "json_invalid":
            err = (e.get("ctx") or {}).get("error", "")
            loc = e.get("loc", ())
            at = f" at character {loc[1]}" if len(loc) > 1 and isinstance(loc[1], int) else ""
            msgs.append(f"the request body is not valid JSON: {err}{at}".rstrip())
        elif kind == "missing" and tuple(e.get("loc", ())) == ("body",):
            msgs.append("the request body is missing: send a JSON object")
        elif kind == "model_attributes_type" and tuple(e.get("loc", ())) == ("body",):
            msgs.append("the request body must be a JSON object")
        else:
            msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")
            msgs.append(f"{_loc(tuple(e.get('loc', ())))}: {msg}{_JSON_TYPES.get(kind, '')}")
    if len(errors) > 5:
        msgs.append(f"and {len(errors) - 5} more")
    return "; ".join(msgs)


def _utf8_size(text: str) -> int:
    """``text``'s size in UTF-8 bytes (as :func:`neardup.io.utf8_len`, which the service does
    not load before an upload)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _check_size(text: str, limit: int, what: str) -> None:
    n = _utf8_size(text)
    if n > limit:
        raise HTTPException(413, f"{what} is {n} bytes; the limit is {limit} bytes")


def _shown_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """An index's statistics as ``/stats`` shows them: a URL without its secrets, an SQLite
    file by its name only (not where the server keeps it)."""
    out = dict(stats)
    if isinstance(out.get("url"), str):
        out["url"] = redact_location(out["url"])
    if isinstance(out.get("path"), str):
        out["path"] = Path(out["path"]).name
    return out


def _passage_k(index: Index) -> int:
    sh = index.config.shingle
    return sh.k if sh.kind == "word" else 3


# ---------------------------------------------------------------------------------------------
# The application


def create_app(
    index: Index,
    *,
    max_upload_bytes: int = 10_000_000,
    max_text_bytes: int = 1_000_000,
    max_batch: int = 10_000,
    max_documents: int | None = None,
    large_text_bytes: int = 100_000,
    max_large_requests: int = 2,
    api_keys: ApiKeys | None = None,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] = (),
    cors_origins: Sequence[str] = (),
    body_seconds: float = 30.0,
    check_text_bytes: int = CHECK_TEXT_BYTES,
    max_collections: int = MAX_COLLECTIONS,
    collection_memory_bytes: int = COLLECTION_MEMORY_BYTES,
    collection_disk_bytes: int = COLLECTION_DISK_BYTES,
    concurrent_uploads: int = CONCURRENT_UPLOADS,
    collection_folder: str | None = None,
    body_memory_bytes: int = BODY_MEMORY_BYTES,
    max_memory_bytes: int | None = None,
    threads: int = THREADS,
    collections_shared: str | Path | None = None,
    check_slots: int = CHECK_SLOTS,
    writer_target: str | None = None,
    writer_options: dict[str, Any] | None = None,
    writer_nice: int | None = None,
) -> FastAPI:
    """The FastAPI application serving ``index`` (the caller opens and closes it).

    ``max_upload_bytes``: largest request body (413 beyond); ``max_text_bytes``: largest text
    of one document, in UTF-8 bytes (413); ``max_batch``: most documents in one
    ``POST /documents:batch`` (413); ``body_seconds``: time a client has to send a whole
    request body (408 beyond); ``max_documents``: the most documents the index may hold (507
    for an add beyond; None: no limit); ``max_large_requests``: ``/query`` and ``/check``
    requests with a text of ``large_text_bytes`` or more handled at once (503 beyond).

    ``api_keys``: who may do what (401 without a valid key, 403 for a read key that writes);
    None: everyone may do everything (serve it on loopback only). ``allowed_hosts``: the Host
    header values answered (``NAME`` or ``NAME:PORT``, ``*`` for all; default: localhost,
    127.0.0.1 and [::1] on any port; :func:`run` adds the bound address); other Hosts get 400.
    ``allowed_origins``: web origins (``https://app.example.com``) whose pages may send
    state-changing requests besides the service's own (403 for the others);
    ``cors_origins``: origins whose scripts may call the API cross-origin (CORS; off without
    them), allowed to change things too.

    ``check_text_bytes``: UTF-8 bytes of matched texts one ``/check`` answer carries at most
    (the others' ``text`` null, ``texts_capped``). Uploaded collections: ``max_collections``
    kept at most, the most recently used in memory up to ``collection_memory_bytes``, the
    others in a private temporary folder (under ``collection_folder``, default the system's
    temporary folder; removed when the application shuts down) up to
    ``collection_disk_bytes``, the least recently used dropped beyond (404: upload again);
    ``concurrent_uploads``: uploads deduplicated at once (503 with ``Retry-After`` beyond).
    ``check_slots``: ``/check`` searches for reused passages made at once; the others wait
    for one within the check's time budget (503 with ``Retry-After`` if it is spent waiting).
    ``collections_shared``: a folder where every collection is kept, for the other processes
    serving the same index (``neardup serve --workers``) to answer for it too; the budgets then
    hold for the folder as a whole, and the folder is left in place at shutdown.

    Memory (:mod:`.memory`): ``body_memory_bytes``, the request bodies held at once (at least
    ``max_upload_bytes``; 503 with ``Retry-After`` for a body beyond); ``max_memory_bytes``:
    while the process's own memory is over it, requests that bring a body are answered 503
    (None: no ceiling; ``neardup serve`` sets 1 GB). ``threads``: the threads that run the
    endpoints' work at once (the others wait for one); each keeps its own connection to an
    SQLite index, with its page cache.

    ``writer_target``: the index's target (an SQLite path or Redis URL, opened with
    ``writer_options``): batches of documents are then added by a process of lower priority
    (``writer_nice``, default 3) that opens it (:mod:`.writer`), so that adding does not hold
    up the answers; None: in this process.
    """
    max_upload_bytes = check_int("max_upload_bytes", max_upload_bytes, 1)
    max_text_bytes = check_int("max_text_bytes", max_text_bytes, 1)
    max_batch = check_int("max_batch", max_batch, 1)
    check_text_bytes = check_int("check_text_bytes", check_text_bytes, 0)
    collections = CollectionStore(
        check_int("collection_memory_bytes", collection_memory_bytes, 0),
        check_int("collection_disk_bytes", collection_disk_bytes, 0),
        check_int("max_collections", max_collections, 1),
        collection_folder,
        shared=collections_shared,
    )
    uploads = UploadSlots(check_int("concurrent_uploads", concurrent_uploads, 1))
    body_memory_bytes = check_int("body_memory_bytes", body_memory_bytes, 1)
    if body_memory_bytes < max_upload_bytes:
        raise ConfigError(
            f"body_memory_bytes={body_memory_bytes} is invalid: at least "
            f"max_upload_bytes ({max_upload_bytes}), or the largest body "
            "allowed could never be read"
        )
    ceiling = MemoryCeiling(check_int("max_memory_bytes", max_memory_bytes, 1, none=True))

    threads = check_int("threads", threads, 1)
    check_slots = check_int("check_slots", check_slots, 1)
    check_gate = threading.BoundedSemaphore(check_slots)
    from .writer import BatchWriter

    batches = BatchWriter(
        index, writer_target, writer_options, process=writer_target is not None, nice=writer_nice
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> Any:
        import anyio.to_thread

        # the threads the endpoints run on (each keeps its own SQLite connection and cache)
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        try:
            yield
        finally:  # the collections kept on disk go with the service
            collections.close()
            batches.close()

    hosts = HostRules(LOOPBACK_NAMES if allowed_hosts is None else allowed_hosts)
    cors = check_origins(cors_origins, "CORS origin")
    origins = sorted(set(check_origins(allowed_origins, "allowed origin")) | set(cors))
    app = FastAPI(
        docs_url=None,
        redoc_url=None,  # /docs: rendered here, nothing fetched from elsewhere
        title="neardup",
        version=_version(),
        summary="Near-duplicate search over an online index, and deduplication of uploads.",
        description=(
            "Add documents to a near-duplicate index, ask whether a new text repeats any of "
            "them (with the passages they share), and deduplicate an uploaded CSV or JSONL "
            "collection. Similarities are verified Jaccard similarities of word-shingle sets. "
            'Errors are `{"detail": "message"}` with a 4xx status.'
        ),
        lifespan=lifespan,
    )
    counts = _Counts()
    app.state.index = index
    app.state.collections = collections
    app.state.uploads = uploads
    app.state.api_keys = api_keys
    app.add_middleware(
        _Guard,
        body_seconds=body_seconds,
        max_upload_bytes=max_upload_bytes,
        counts=counts,
        hosts=hosts,
        origins=origins,
        api_keys=api_keys,
        bodies=BodyBudget(body_memory_bytes),
        ceiling=ceiling,
    )
    if cors:  # outside the guard, so that preflights (which carry no key) are answered
        app.add_middleware(
            _Cors,
            allow_origins=cors,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
            expose_headers=["WWW-Authenticate", "Retry-After"],
            max_age=600,
        )
    k_index = _passage_k(index)
    read, write = _role_dependencies(api_keys)

    def _index_there() -> None:
        """Refuse to answer from a backend that no longer holds the index opened (503)."""
        index.verify_identity()

    there = Depends(_index_there)
    large = threading.BoundedSemaphore(max_large_requests)

    def _room(adding: int) -> None:
        """507 where adding would take the index over ``max_documents``."""
        if max_documents is not None and len(index) + adding > max_documents:
            raise HTTPException(
                507,
                f"the index is full: it holds {len(index):,} documents "
                f"and this service keeps at most {max_documents:,} "
                "(--max-documents); delete some, or raise the limit",
            )

    @contextlib.contextmanager
    def _heavy(text: str) -> Iterator[None]:
        """At most ``max_large_requests`` large texts searched at once (503 beyond)."""
        if len(text) < large_text_bytes // 4 or len(text.encode()) < large_text_bytes:
            yield
            return
        if not large.acquire(blocking=False):
            raise HTTPException(
                503,
                f"{max_large_requests} requests with texts of "
                f"{large_text_bytes:,} bytes or more are being handled; "
                "try again in a moment",
                headers={"Retry-After": "2"},
            )
        try:
            yield
        finally:
            large.release()

    # -- errors ----------------------------------------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        return JSONResponse(
            {
                "detail": _validation_message(list(errors)),
                "errors": jsonable_encoder(
                    [
                        {"loc": e.get("loc"), "msg": e.get("msg"), "type": e.get("type")}
                        for e in errors
                    ]
                ),
            },
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        if exc.status_code == 404 and detail == "Not Found":
            detail = (
                f"no such endpoint: {request.method} {request.url.path} (see /docs for the API)"
            )
        elif exc.status_code == 405:
            detail = f"{request.method} is not allowed on {request.url.path}"
        return JSONResponse(
            {"detail": str(detail)},
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(DuplicateIdError)
    async def _duplicate(request: Request, exc: DuplicateIdError) -> JSONResponse:
        return _error(409, f"id {exc.doc_id!r} is already in the index")

    @app.exception_handler(InputError)
    async def _input(request: Request, exc: InputError) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(ConfigError)
    async def _config(request: Request, exc: ConfigError) -> JSONResponse:
        return _error(422, str(exc))

    @app.exception_handler(IndexBusyError)
    async def _locked(request: Request, exc: IndexBusyError) -> JSONResponse:
        return _error(503, f"the index is busy: {exc}", {"Retry-After": "1"})

    @app.exception_handler(IndexChangedError)
    async def _changed(request: Request, exc: IndexChangedError) -> JSONResponse:
        log.error(
            "the index is not there as opened (%s %s): %s", request.method, request.url.path, exc
        )
        return _error(
            503,
            f"{exc}: this service will not answer from it; restart the "
            "service to serve the backend as it is now",
        )

    @app.exception_handler(IndexFullError)
    async def _full(request: Request, exc: IndexFullError) -> JSONResponse:
        log.error("the index has no room (%s %s): %s", request.method, request.url.path, exc)
        return _error(
            507,
            f"the index has no room: {exc}; the operator must free disk space "
            "(or raise the index's size limit)",
        )

    @app.exception_handler(sqlite3.OperationalError)
    async def _sqlite(request: Request, exc: sqlite3.OperationalError) -> JSONResponse:
        rid = request_id(request.scope)
        if _busy(exc):
            log.warning(
                "the index is busy (another process holds its SQLite write lock): "
                "503 to %s %s, request ID %s",
                request.method,
                request.url.path,
                rid,
            )
            return _error(
                503,
                "the index is busy: another process holds its write lock; try again in a moment",
                {"Retry-After": "1"},
            )
        code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code
        if code == sqlite3.SQLITE_FULL:  # outside a write transaction (the library's own)
            log.error("the index has no room (%s %s): %s", request.method, request.url.path, exc)
            return _error(
                507,
                "the index has no room: the disk is full, or the index file "
                "reached its size limit; nothing was written; the operator "
                "must free disk space (or raise the index's size limit)",
            )
        if code == sqlite3.SQLITE_READONLY:
            log.error(
                "the index cannot be written (%s %s): %s", request.method, request.url.path, exc
            )
            return _error(
                503,
                "the index's SQLite file cannot be written (a read-only file "
                "system, or no write permission); nothing was written; the "
                "operator must make it writable",
            )
        msg = str(exc).lower()
        if "unable to open" in msg or "disk i/o" in msg:
            log.error(
                "index error on %s %s, request ID %s: %s",
                request.method,
                request.url.path,
                rid,
                exc,
            )
            return _error(
                503,
                "the index's SQLite file cannot be used right now (a disk "
                f"error, see the service's log, request ID {rid}); nothing was "
                "written; try again later",
                {"Retry-After": "5"},
            )
        return _internal_error(request, exc)

    def _internal_error(request: Request, exc: Exception) -> JSONResponse:
        rid = request_id(request.scope)
        log.error(
            "internal error on %s %s, request ID %s",
            request.method,
            request.url.path,
            rid,
            exc_info=exc,
        )
        request.scope[LOGGED_SCOPE_KEY] = True
        return _error(
            500,
            f"internal error (reported in the service's log as request ID {rid})",
            {"X-Request-ID": rid},
        )

    async def _redis_down(request: Request, exc: Exception) -> JSONResponse:
        rid = request_id(request.scope)
        log.warning(
            "the index's Redis server cannot be reached (%s): 503 to %s %s, request ID %s",
            type(exc).__name__,
            request.method,
            request.url.path,
            rid,
        )
        return _error(
            503,
            "the index's Redis server cannot be reached; try again in a "
            "moment (the service reconnects by itself)",
            {"Retry-After": "5", "X-Request-ID": rid},
        )

    for kind in _redis_errors():
        app.add_exception_handler(kind, _redis_down)

    @app.exception_handler(Exception)
    async def _internal(request: Request, exc: Exception) -> JSONResponse:
        if _unreachable(exc):  # a Redis error under another one
            return await _redis_down(request, exc)
        return _internal_error(request, exc)

    # -- the index -------------------------------------------------------------------------
    @app.post(
        "/documents",
        status_code=201,
        response_model=Created,
        responses=_WRITE_ERRORS,
        tags=["index"],
        summary="Add one document",
        dependencies=[write, there],
    )
    async def add_document(doc: DocumentIn) -> Created:
        """Add a document; 409 if its id is already in the index."""
        _check_size(doc.text, max_text_bytes, "the text")
        _room(1)
        await batches.acall("add", doc.id, doc.text)
        return Created(id=doc.id)

    @app.post(
        "/documents:batch",
        status_code=201,
        response_model=BatchOut,
        responses=_WRITE_ERRORS,
        tags=["index"],
        summary="Add many documents, all or none",
        dependencies=[write, there],
    )
    async def add_documents(batch: BatchIn) -> BatchOut:
        """Add documents in one transaction; 409 naming an id already present (nothing added)."""
        docs = batch.documents
        if len(docs) > max_batch:
            raise HTTPException(
                413, f"a batch holds at most {max_batch} documents; got {len(docs)}: split it"
            )
        first: dict[str, int] = {}
        for i, d in enumerate(docs):
            _check_size(d.text, max_text_bytes, f"documents[{i}].text")
            if d.id in first:
                raise HTTPException(
                    422,
                    f"id {d.id!r} appears twice in the batch "
                    f"(documents[{first[d.id]}] and documents[{i}])",
                )
            first[d.id] = i
        if not docs:
            return BatchOut(added=0)
        _room(len(docs))
        added = await batches.acall(
            "add_many", [(d.id, d.text) for d in docs], batch_size=len(docs)
        )
        return BatchOut(added=added)

    @app.get(
        "/documents",
        response_model=IdPage,
        responses=_ERRORS,
        tags=["index"],
        summary="List the ids in the index, a page at a time",
        dependencies=[read, there],
    )
    def list_documents(
        after: Annotated[
            str | None,
            Query(
                max_length=1024,
                description="Start after this id (the `next` of the previous page).",
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=1000, description="Ids per page.")] = 100,
    ) -> IdPage:
        """Ids in code-point order, `limit` at a time; follow `next` until it is null."""
        ids = index.list_ids(None if after is None else normal_id(after), limit)
        return IdPage(ids=ids, next=ids[-1] if len(ids) == limit else None)

    @app.get(
        "/documents/{doc_id:path}",
        response_model=DocumentOut,
        responses=_ERRORS,
        tags=["index"],
        summary="Get a document's text",
        dependencies=[read, there],
    )
    def get_document(doc_id: str) -> DocumentOut:
        """The stored text of a document; 404 if the id is unknown. Percent-encode the id; an id
        `.` or `..` must be sent as `%2E` or `%2E%2E` (clients drop dot segments from paths)."""
        doc_id = normal_id(doc_id)
        try:
            return DocumentOut(id=doc_id, text=index.get(doc_id))
        except KeyError:
            raise HTTPException(404, f"no document with id {doc_id!r}") from None

    @app.delete(
        "/documents/{doc_id:path}",
        status_code=204,
        responses=_ERRORS,
        tags=["index"],
        summary="Remove a document",
        dependencies=[write, there],
    )
    async def delete_document(doc_id: str) -> Response:
        """Remove a document; 404 if the id is unknown."""
        doc_id = normal_id(doc_id)
        if not await batches.acall("remove", doc_id):
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return Response(status_code=204)

    def _threshold(asked: float | None) -> float:
        """The request's threshold, or the index's; one below the index's is refused: its LSH
        finds pairs under its own threshold only by chance, and an answer would be false."""
        if asked is None:
            return index.threshold
        if asked < index.threshold:
            raise HTTPException(
                422,
                f"threshold: {asked:g} is below this index's threshold "
                f"({index.threshold:g}), under which it does not find "
                "every near-duplicate; use a threshold of at least "
                f"{index.threshold:g} (an index finds texts from the "
                "similarity it was created with)",
            )
        return asked

    @app.post(
        "/query",
        response_model=QueryOut,
        responses=_ERRORS,
        tags=["search"],
        summary="Near-duplicates of a text",
        dependencies=[read, there],
    )
    def query(q: QueryIn) -> QueryOut:
        """Indexed documents whose similarity to `text` reaches the threshold, best first."""
        _check_size(q.text, max_text_bytes, "the text")
        threshold = _threshold(q.threshold)
        with _heavy(q.text):
            matches, complete = index.query_within(
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
        dependencies=[there],
    )
    def check(c: CheckIn, role: Role = read) -> CheckOut:
        """Whether `text` repeats indexed documents: the matches, and for the best
        10 their text and the passages shared with `text`. With `add=true` and an
        `id`, a unique text is added (409 if the id is taken; a write key)."""
        with _heavy(c.text):
            return _check(c, role)

    def _texts(ids: list[str], have: dict[str, str]) -> dict[str, str | None]:
        """The texts of ``ids``: those in ``have``, the others read from the index."""
        missing = [i for i in ids if i not in have]
        got = index.get_texts(missing) if missing else {}
        return {i: have[i] if i in have else got[i] for i in ids if i in have or i in got}

    def _check(c: CheckIn, role: Role) -> CheckOut:
        if c.add and not allows(role, "write"):
            raise HTTPException(
                403,
                "adding a text (add=true) needs an API key with the "
                f"write role; the key sent has the {role} role (a check "
                "without add=true needs only a read key)",
            )
        deadline = time.monotonic() + CHECK_SECONDS  # passages too are found within it
        _check_size(c.text, max_text_bytes, "the text")
        threshold = _threshold(c.threshold)
        added = False
        reused: list = []
        capped = incomplete = False
        found = None  # whole-text matches and reused passages, where the index finds both
        if index.passages is not None:
            # at most check_slots searches at once: cheaper requests are not held up by
            # several of them taking turns; one that waits its whole budget is told to retry
            if not check_gate.acquire(timeout=max(deadline - time.monotonic(), 0.0)):
                raise HTTPException(
                    503,
                    f"{check_slots} uniqueness check"
                    f"{'s are' if check_slots > 1 else ' is'} being made "
                    f"and this one waited {CHECK_SECONDS:g} s for its "
                    "turn; try again in a moment",
                    headers={"Retry-After": "1"},
                )
            try:
                found = index.check(
                    c.text,
                    threshold=threshold,
                    max_passages=MAX_PASSAGES,
                    max_candidates=CHECK_CANDIDATES,
                    time_budget=max(deadline - time.monotonic(), 0.01),
                )
            finally:
                check_gate.release()
            reused = [m for m in found.reused if m.id != c.id]
            capped = found.capped
            incomplete = found.incomplete
        if c.add:
            if c.id is None:
                raise HTTPException(
                    422, "id: required with add=true (the id to add the text under)"
                )
            if not c.text.strip():
                raise HTTPException(422, f"text: {EMPTY_TEXT} (it cannot be added)")
            if c.id in index:
                raise HTTPException(409, f"id {c.id!r} is already in the index")
        if (
            c.add
            and not reused
            and not incomplete  # copies passages, or not known: kept out
            and not (found is not None and found.common)
        ):
            _room(1)
            matches = batches.call("check_and_add", c.id, c.text, threshold=threshold)
            added = not matches
        else:
            matches = (
                found.matches if found is not None else index.query(c.text, threshold=threshold)
            )
            if c.id is not None:
                matches = [m for m in matches if m.id != c.id]
        matches_capped = len(matches) > MAX_MATCHES
        matches = matches[:MAX_MATCHES]
        top = matches[:CHECK_DETAILS]
        # the texts the check compared are at hand; only the others are read
        have = found.texts if found is not None else {}
        texts = _texts([m.id for m in top], have)
        rtexts = _texts([m.id for m in reused[:CHECK_DETAILS]], have)
        room = [check_text_bytes]  # bytes of texts the answer may still carry
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
            passages_indexed=index.passages is not None,
            min_passage_words=(index.passages.shortest if index.passages else None),
        )

    @app.get(
        "/stats",
        tags=["service"],
        summary="Index and service statistics",
        responses=_ERRORS,
        dependencies=[read, there],
    )
    def stats() -> dict[str, Any]:
        """The index's statistics (backend, documents, threshold, bands, ...), request counts
        and the number of collections kept."""
        return jsonable_encoder(
            {
                **_shown_stats(index.stats()),
                "requests": counts.to_dict(),
                "collections": len(collections),
                "process": os.getpid(),
                "collections_kept": collections.usage(),
                "limits": {
                    "max_upload_bytes": max_upload_bytes,
                    "max_text_bytes": max_text_bytes,
                    "max_batch": max_batch,
                },
            }
        )

    @app.get("/docs", include_in_schema=False)
    def docs() -> Response:
        """The API's documentation, rendered from its OpenAPI schema (works offline)."""
        from .apidoc import render

        return Response(render(app.openapi()), media_type="text/html; charset=utf-8")

    @app.get("/health", response_model=HealthOut, tags=["service"], summary="Liveness")
    def health(request: Request) -> HealthOut:
        """'ok' and the number of indexed documents (null without a key where the service
        needs one). Needs no key."""
        known = request.scope.get(ROLE_SCOPE_KEY) is not None
        return HealthOut(status="ok", documents=len(index) if known else None)

    # -- collections -----------------------------------------------------------------------
    @app.post(
        "/collections",
        status_code=201,
        response_model=CollectionOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="Deduplicate an uploaded CSV, JSONL or Parquet file",
        dependencies=[write],
    )
    def upload_collection(
        file: Annotated[
            UploadFile,
            File(
                description="A CSV file with a header row, a JSON "
                "Lines file (one object per line) or a "
                "Parquet file."
            ),
        ],
        text_field: Annotated[
            str,
            Form(
                min_length=1,
                description=(
                    "Field or column holding the text; several separated by commas "
                    "('title,description'), whose texts are joined with a newline."
                ),
            ),
        ] = "text",
        id_field: Annotated[
            str | None,
            Form(
                description=(
                    "Field or column holding the id (default: the field 'id' where every record has "
                    "one and they are distinct, else the line number)."
                )
            ),
        ] = None,
        threshold: Annotated[
            float, Form(gt=0, le=1, description="Jaccard threshold, (0, 1].")
        ] = 0.8,
        cluster: Annotated[
            Literal["components", "strict"],
            Form(
                description="'components' (transitive) or 'strict' (every member verified against "
                "its representative)."
            ),
        ] = "components",
    ) -> CollectionOut:
        """Parse the file in memory, deduplicate it with `neardup.dedup` and keep the result
        for `GET /collections/{collection_id}` and the side-by-side view (the most recent
        uploads, within the service's memory and disk limits). Records that cannot be read are
        counted in `skipped`. 503 with `Retry-After` while other uploads are being
        deduplicated."""
        with uploads.take():
            try:
                body = _upload(file, text_field, id_field or None, threshold, cluster)
            finally:
                # the upload's working memory (its texts, the dedup's arrays) is free now:
                # handed back, so that the process's memory stays that of what it keeps
                release_free_memory()
        return Response(body, status_code=201, media_type="application/json")

    def _upload(
        file: UploadFile, text_field: str, id_field: str | None, threshold: float, cluster: str
    ) -> bytes:
        data = file.file.read(max_upload_bytes + 1)
        if len(data) > max_upload_bytes:
            raise HTTPException(413, f"the file is over the limit of {max_upload_bytes} bytes")
        fmt = upload_format(file.filename, file.content_type, data[:64])
        parsed = read_upload(data, file.filename, fmt, text_field, id_field, max_text_bytes)
        del data
        if not parsed.texts:
            why = "; ".join(f"line {e['line']}: {e['message']}" for e in parsed.examples)
            raise HTTPException(
                422,
                f"no usable record in {file.filename or 'the file'!r}"
                f" (text field {text_field!r})" + (f": {why}" if why else ": it is empty"),
            )
        from ..engines.local import dedup

        # the compared pairs only: a group of g copies is g - 1 pairs, not g (g - 1) / 2
        result = dedup(
            parsed.texts,
            parsed.ids,
            threshold=threshold,
            cluster=cluster,
            shingle=COLLECTION_SHINGLE,
            pairs="edges",
        )
        cid = secrets.token_hex(8)
        col = Collection.build(parsed.ids, parsed.texts, result, b"")
        meta = {
            "collection_id": cid,
            "filename": file.filename,
            "format": fmt,
            "id_field": parsed.id_field,
            "documents": len(parsed.ids),
            "skipped": dict(sorted(parsed.skipped.items())),
            "skipped_examples": [SkipExample(**e).model_dump() for e in parsed.examples],
            "threshold": threshold,
            "cluster_method": cluster,
            "clusters": None,
            "pairs": known_pairs(col),
            "duplicates": int(len(result.duplicate_rows)),
        }
        col.summary = summary_json(meta, parsed.ids, result, parsed.texts)
        del parsed, result
        collections.put(cid, col)
        return col.summary

    def _collection(cid: str) -> Collection:
        got = collections.get(cid)
        if got is None:
            raise HTTPException(
                404,
                f"no collection {cid!r}: this service keeps the most "
                f"recent uploads only (at most {max_collections}, within "
                "its memory and disk limits); upload the file again",
            )
        return got

    @app.get(
        "/collections/{cid}",
        response_model=CollectionOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="A deduplicated collection again",
        dependencies=[read],
    )
    def get_collection(cid: str) -> Response:
        """The result of an earlier upload; 404 once it has been dropped."""
        return Response(_collection(cid).summary, media_type="application/json")

    @app.get(
        "/collections/{cid}/export",
        responses={
            **_ERRORS,
            200: {
                "description": "The file (CSV or JSON Lines).",
                "content": {"text/csv": {}, "application/x-ndjson": {}},
            },
        },
        tags=["collections"],
        summary="The deduplicated list or the groups, as a file",
        dependencies=[read],
    )
    def export_collection(
        cid: str,
        what: Annotated[
            Literal["kept", "groups"],
            Query(
                description=(
                    "'kept': the deduplicated list (id, text of each cluster's representative and "
                    "of every document in no cluster); 'groups': every document with its cluster, "
                    "representative, similarity to it and whether it is kept."
                )
            ),
        ] = "kept",
        format: Annotated[
            Literal["csv", "jsonl"],
            Query(  # noqa: A002 - the API's word
                description="'csv' (with a header row) or 'jsonl'."
            ),
        ] = "csv",
    ) -> Response:
        """An uploaded collection's result as a file to download."""
        from fastapi.responses import StreamingResponse

        col = _collection(cid)
        media = "text/csv; charset=utf-8" if format == "csv" else "application/x-ndjson"
        name = f"{cid}-{what}.{format}"
        return StreamingResponse(
            col.export(what, format),
            media_type=media,
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.get(
        "/collections/{cid}/pair",
        response_model=PairOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="Two documents side by side",
        dependencies=[read],
    )
    def get_pair(
        cid: str,
        a: Annotated[str, Query(min_length=1, description="Id of the first document.")],
        b: Annotated[str, Query(min_length=1, description="Id of the second document.")],
    ) -> PairOut:
        """Both texts, their similarity where the run knows it, and the passages they share
        (offsets into each), found within a time budget (`incomplete` says when cut)."""
        deadline = time.monotonic() + PAIR_SECONDS
        col = _collection(cid)
        rows = []
        for name, x in (("a", a), ("b", b)):
            r = col.row_of(x)
            if r is None:
                raise HTTPException(404, f"{name}: no document {x!r} in collection {cid!r}")
            rows.append(r)
        ra, rb = rows
        sim = col.similarity(ra, rb)
        ta, tb = col.text(ra), col.text(rb)
        passages, complete = passages_within(ta, tb, int(COLLECTION_SHINGLE[5:]), deadline=deadline)
        return PairOut(
            collection_id=cid,
            a=DocumentOut(id=a, text=ta),
            b=DocumentOut(id=b, text=tb),
            similarity=None if sim is None else round(sim, 6),
            same_cluster=col.same_cluster(ra, rb),
            passages=passages,
            incomplete=not complete,
        )

    # -- the web page ----------------------------------------------------------------------
    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    return app


def _version() -> str:
    from .._version import __version__

    return __version__


def check_binding(
    host: str,
    api_keys: ApiKeys | None,
    allow_unauthenticated: bool,
    allowed_hosts: Sequence[str] = (),
) -> None:
    """Refuse to serve without keys on an address other machines reach, or under any Host
    name (``*`` in ``allowed_hosts``), unless asked to."""
    if (
        api_keys is None
        and not allow_unauthenticated
        and any(h.strip() == "*" for h in allowed_hosts)
    ):
        raise ConfigError(
            "--allowed-host '*' without API keys would let any web page that a browser on "
            "this machine opens use the service under its own name (DNS rebinding): it could "
            "read, add and delete documents. Give keys (--api-keys-file PATH, or the "
            "environment variables NEARDUP_API_KEY_READ / NEARDUP_API_KEY_WRITE), name the "
            "hosts instead of '*', or pass --allow-unauthenticated if every client is trusted"
        )
    if api_keys is None and not allow_unauthenticated and not is_loopback(host):
        raise ConfigError(
            f"--host {host} makes the service reachable from other machines, and no API key "
            "is configured: anyone who reaches the port could read, add and delete documents. "
            "Give keys (--api-keys-file PATH, or the environment variables "
            "NEARDUP_API_KEY_READ / NEARDUP_API_KEY_WRITE), or pass --allow-unauthenticated if "
            "the network is trusted"
        )


def _named(index_target: str) -> str:
    """The index as the log names it: a URL without its password, a file by its name."""
    target = str(index_target)
    if target.startswith(("redis://", "rediss://", "unix://")):
        return redact_location(target)
    return target if target in ("", ":memory:") else Path(target).name


def _open_files_for(connections: int) -> int:
    """Raise the soft limit of open files toward the hard one so that ``connections`` sockets
    fit beside the index's files and the log; the connections that fit (all, or fewer)."""
    spare = 64
    try:
        import resource
    except ImportError:  # no such limit here
        return connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = connections + spare
    if soft != resource.RLIM_INFINITY and soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < need:
        fit = max(soft - spare, 1)
        log.warning(
            "open files are limited to %d (ulimit -n): at most %d connections instead "
            "of %d (--max-connections)",
            soft,
            fit,
            connections,
        )
        return fit
    return connections


def run(
    index_target: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    api_keys: ApiKeys | None = None,
    allow_unauthenticated: bool = False,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    cors_origins: Sequence[str] = (),
    header_seconds: float = 10.0,
    max_requests: int = CONCURRENCY,
    max_connections: int = MAX_CONNECTIONS,
    log_level: str = "info",
    log_file: str | Path | None = None,
    storage_options: dict[str, Any] | None = None,
    workers: int = 1,
    writer_nice: int = 3,
    **limits: Any,
) -> None:
    """Open ``Index(index_target, create=False)`` (an existing index only, with the backend's
    ``storage_options``), serve it with uvicorn until interrupted, then close it.

    ``limits``: the keyword limits of :func:`create_app`; ``header_seconds``: time a client
    has to send a request's headers (408 and the connection closed beyond);
    ``max_requests``: requests handled at once, counted from the arrival of their headers
    (JSON 503 with Retry-After beyond); ``max_connections``: connections open at once (beyond,
    the one waiting longest for a request, half-open or idle, is closed to make room). Without
    ``api_keys`` the service binds to a loopback address only (:class:`~neardup.ConfigError`
    otherwise), unless ``allow_unauthenticated``. The Host names answered are the bound
    address, localhost, 127.0.0.1 and [::1] with ``port``, and ``allowed_hosts``. A key file is
    read again on SIGHUP and whenever it changes. The service logs (:mod:`.logs`) to stderr,
    or to ``log_file``, from ``log_level`` up: its start and stop, its errors, and a line per
    request; never a key or a document's text.

    ``workers``: processes serving the index side by side (see :func:`_serve_workers`), each
    with its own limits (``max_requests``, ``max_connections``, the memory and upload limits
    and threads are per worker), its own connections to the index and its own interpreter, so
    that requests do not wait for one another's Python code: a Python process runs one thread
    of Python at a time. Uploaded collections are kept in a folder they share.

    ``writer_nice``: batches of documents (``POST /documents:batch``) are added by a process
    beside each worker, at this much lower priority (0-19, see :mod:`.writer`); -1: by the
    worker itself."""
    import signal

    from . import logs

    max_requests = check_int("max_requests", max_requests, 1)
    max_connections = check_int("max_connections", max_connections, 1)
    workers = check_int("workers", workers, 1, 256)
    memory_index = index_target in (None, ":memory:")
    if workers > 1 and memory_index:
        raise ConfigError(
            f"workers={workers}: an index in memory cannot be shared by several "
            "processes; serve an SQLite file or a Redis index, or one worker"
        )
    if workers > 1 and not hasattr(os, "fork"):
        raise ConfigError(
            f"workers={workers}: worker processes are forked from the service, "
            "which this system cannot do; serve with one worker"
        )
    check_binding(host, api_keys, allow_unauthenticated, allowed_hosts)
    logs.configure(log_level, log_file)
    hosts = HostRules.for_binding(host, port, allowed_hosts)
    app_options = {
        "api_keys": api_keys,
        "allowed_hosts": hosts.entries,
        "allowed_origins": allowed_origins,
        "cors_origins": cors_origins,
        **limits,
    }
    writer_nice = check_int("writer_nice", writer_nice, -1, 19)
    sqlite_target = not str(index_target).startswith(("redis://", "rediss://", "unix://"))
    # an index that is there only: a missing one (a deleted file, a Redis server that lost its
    # data) is an IndexNotFoundError, never a new, empty index served as if nothing happened
    options = dict(storage_options or {})
    if sqlite_target and not memory_index:
        options.setdefault("timeout", SQLITE_BUSY_SECONDS)

    def open_index() -> Index:
        return Index(index_target, storage_options=options, create=memory_index)

    if writer_nice >= 0 and not memory_index:  # batches added by a process of lower priority
        app_options.update(
            writer_target=str(index_target), writer_options=options, writer_nice=writer_nice
        )

    index = open_index()
    url = f"http://{host_entry(host, port)}"
    try:
        # its options checked before the log says more (with workers, each makes its own)
        app = create_app(index, **app_options)
        if api_keys is None:
            log.warning(
                "%s: no API key configured: anyone who can reach this address can "
                "read, add and delete documents%s",
                url,
                " (it is reachable from this machine only)" if is_loopback(host) else "",
            )
        else:
            log.info("%s: API keys needed: %s", url, api_keys.describe())
        if not is_loopback(host) and not allowed_hosts and not hosts.any:
            log.warning(
                "answers to the Host names %s only: add the names clients use to reach "
                "it with --allowed-host NAME",
                ", ".join(hosts.entries),
            )
        max_connections = _open_files_for(max_connections)
        cpus = available_cpus()
        if workers == 1 and cpus > 1 and not memory_index:
            log.info(
                "one worker process on a machine of %d processors: --workers %d answers "
                "more requests at once and sooner",
                cpus,
                cpus,
            )
        log.info(
            "serving the index %s (%s documents) at %s%s: at most %d requests handled at "
            "once and %d connections open%s, request headers within %g s, idle "
            "connections closed after %d s",
            _named(index_target),
            f"{len(index):,}",
            url,
            f" with {workers} worker processes" if workers > 1 else "",
            max_requests,
            max_connections,
            " per worker" if workers > 1 else "",
            header_seconds,
            KEEP_ALIVE_SECONDS,
        )

        def serve(app: FastAPI, sockets: list | None = None, shares: Any = None) -> None:
            import uvicorn

            from .front import Front
            from .protocol import BoundedH11Protocol

            if api_keys is not None and api_keys.file is not None and hasattr(signal, "SIGHUP"):
                # read on a thread of its own: the handler interrupts the main thread, which
                # may hold the keys' lock at that moment
                signal.signal(
                    signal.SIGHUP,
                    lambda *_: threading.Thread(
                        target=api_keys.reload, name="neardup-reload-keys", daemon=True
                    ).start(),
                )
            # bounded: at most max_requests requests at once (Front: 503 beyond),
            # max_connections connections (the protocol closes the one waiting longest for a
            # request to make room), idle connections closed after KEEP_ALIVE_SECONDS, request
            # headers within header_seconds (protocol.py), request bodies within body_seconds
            # (create_app)
            protocol = type(
                "Protocol",
                (BoundedH11Protocol,),
                {
                    "header_seconds": header_seconds,
                    "max_connections": max_connections,
                    "shares": shares,
                },
            )
            keys = api_keys
            front = Front(
                app,
                max_requests=max_requests,
                refused_id=None if keys is None else lambda v: keys.role(v) is not None,
                close_after=None if shares is None else shares.over,
            )
            with contextlib.suppress(ValueError):  # not on the main thread: left as it is
                # uvicorn stops gracefully on SIGTERM, then raises it again: exit through the
                # callers' `finally` (the index closed, the stop logged) rather than die at once
                signal.signal(signal.SIGTERM, _exit_quietly)
            options = {
                "host": host,
                "port": port,
                "limit_concurrency": None,
                "timeout_keep_alive": KEEP_ALIVE_SECONDS,
                "h11_max_incomplete_event_size": 65536,
                "http": protocol,
                "log_config": None,
                "access_log": False,
            }
            if sockets is None:
                uvicorn.run(front, **options)
            else:  # a worker: on the sockets made for it
                uvicorn.Server(uvicorn.Config(front, **options)).run(sockets=sockets)

        if workers == 1:
            serve(app)
        else:
            del app
            index.close()  # each worker opens its own (a connection must not cross a fork)
            _serve_workers(
                workers, host, port, open_index, serve, app_options, limits.get("collection_folder")
            )
    finally:
        index.close()
        log.info("%s: stopped, the index closed", url)
        logs.reset()


#: a worker that exits this soon after its start WORKER_EARLY_EXITS times in a row is not
#: started again (it would only fail again: a broken index, memory short): the service stops
WORKER_MIN_SECONDS = 10.0
WORKER_EARLY_EXITS = 3
#: seconds the workers have to finish their requests once asked to stop, then killed
WORKER_STOP_SECONDS = 30.0


def _serve_workers(
    workers: int,
    host: str,
    port: int,
    open_index: Callable[[], Index],
    serve: Callable[..., None],
    app_options: dict[str, Any],
    collection_folder: str | None,
) -> None:
    """Serve with ``workers`` processes forked from this one, on one port (the system hands
    each new connection to one of them), until SIGTERM or SIGINT; then each finishes its
    requests (``WORKER_STOP_SECONDS`` at most) and the collections' folder is removed. A
    worker that dies is started again, unless it died within ``WORKER_MIN_SECONDS`` of its
    start ``WORKER_EARLY_EXITS`` times in a row (then the service stops). SIGHUP is passed on
    to the workers (each reads the key file again)."""
    import multiprocessing
    import shutil
    import signal
    import socket
    import tempfile

    from . import logs
    from .front import ConnectionShares

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # A socket per worker on the same port where the system balances new connections among
    # them (SO_REUSEPORT: Linux); elsewhere one socket, whose connections go to the worker
    # that accepts first (a busy one rarely does).
    balanced = sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")

    def listen() -> socket.socket:
        # IPPROTO_TCP named: asyncio turns Nagle's algorithm off (TCP_NODELAY) only on
        # connections of a socket that says it is TCP; with it on, a response written in two
        # parts waits for the client's delayed acknowledgement (40 ms a request)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if balanced:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((host, port))
        except OSError as e:
            sock.close()
            raise ConfigError(
                f"cannot listen on {host_entry(host, port)}: {e.strerror or e}"
            ) from None
        sock.set_inheritable(True)
        return sock

    socks = [listen()]  # here: a port taken is said before any worker starts
    if balanced:
        socks += [listen() for _ in range(workers - 1)]
    # mkdtemp: mode 0700, a name no one else can take; every worker keeps its collections there
    shared = tempfile.mkdtemp(prefix="neardup-collections-", dir=collection_folder)
    ctx = multiprocessing.get_context("fork")
    # the workers' open connections, in shared memory: one over its share closes a connection
    # after a response, so that few long-lived clients do not all stay on one worker
    counts = ctx.Array("i", workers, lock=False)

    def main(k: int) -> None:  # in the worker, just forked
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        if hasattr(signal, "SIGHUP"):  # the supervisor's handler is not the worker's; serve()
            signal.signal(signal.SIGHUP, signal.SIG_IGN)  # sets one where keys are reloaded
        logs.name_process(f"worker {k}")
        try:
            index = open_index()
            try:
                serve(
                    create_app(index, collections_shared=shared, **app_options),
                    [socks[k] if balanced else socks[0]],
                    ConnectionShares(counts, k),
                )
            finally:
                index.close()
        except Exception as e:  # said in the service's log, not only on stderr
            log.error("worker %d stopped: %s", k, e, exc_info=e)
            raise SystemExit(1) from None

    def start(k: int) -> tuple[Any, float]:
        counts[k] = 0  # a worker started again has no connection yet
        proc = ctx.Process(target=main, args=(k,), name=f"neardup-worker-{k}", daemon=False)
        proc.start()
        log.debug("worker %d started (pid %d)", k, proc.pid)
        return proc, time.monotonic()

    stop = threading.Event()
    procs: list[tuple[Any, float]] = []
    failed: str | None = None
    old = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    hup = signal.getsignal(signal.SIGHUP) if hasattr(signal, "SIGHUP") else None
    try:
        for sig in old:
            signal.signal(sig, lambda *_: stop.set())
        if hup is not None:
            signal.signal(
                signal.SIGHUP,
                lambda *_: [os.kill(p.pid, signal.SIGHUP) for p, _ in procs if p.is_alive()],
            )
        procs.extend(start(k) for k in range(workers))
        early = [0] * workers  # exits soon after a start, in a row, per worker
        while not stop.wait(0.2):
            for k, (proc, began) in enumerate(procs):
                if proc.is_alive():
                    continue
                lived = time.monotonic() - began
                early[k] = early[k] + 1 if lived < WORKER_MIN_SECONDS else 0
                if early[k] >= WORKER_EARLY_EXITS:
                    failed = (
                        f"worker {k} (pid {proc.pid}) exited {lived:.1f} s after its start "
                        f"(exit code {proc.exitcode}), {early[k]} times in a row: the "
                        "service stops"
                    )
                    stop.set()
                    break
                log.error(
                    "worker %d (pid %d) exited (exit code %s); starting another",
                    k,
                    proc.pid,
                    proc.exitcode,
                )
                procs[k] = start(k)
        if failed:
            log.error(failed)
    finally:
        for proc, _ in procs:
            if proc.is_alive():
                proc.terminate()  # SIGTERM: uvicorn finishes the requests in hand
        deadline = time.monotonic() + WORKER_STOP_SECONDS
        for proc, _ in procs:
            proc.join(max(deadline - time.monotonic(), 0.1))
            if proc.is_alive():
                log.warning(
                    "worker pid %d did not stop within %g s: killed", proc.pid, WORKER_STOP_SECONDS
                )
                proc.kill()
                proc.join()
        for sock in socks:
            sock.close()
        shutil.rmtree(shared, ignore_errors=True)
        for sig, handler in old.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
        if hup is not None:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGHUP, hup)
    if failed:
        raise NeardupError(failed)


def _exit_quietly(*_: Any) -> None:
    raise SystemExit(0)
