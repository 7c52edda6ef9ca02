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

This module is the application factory; the application's parts are modules of their own: the
middleware (:mod:`.guard`), the exception handlers (:mod:`.handlers`), the request and response
models (:mod:`.models`), the state the routes share (:mod:`.state`) and the routes
(:mod:`.documents`, :mod:`.search`, :mod:`.collections`, :mod:`.pages`).

Run it with ``neardup serve --index shop.db --port 8000`` or :func:`run` (:mod:`.serve`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from ..errors import ConfigError
from ..index import Index
from ..validate import check_int
from .access import LOOPBACK_NAMES, ApiKeys, HostRules, check_origins
from .collections import (
    COLLECTION_DISK_BYTES,
    COLLECTION_MEMORY_BYTES,
    CONCURRENT_UPLOADS,
    MAX_COLLECTIONS,
    CollectionStore,
    UploadSlots,
    add_collection_routes,
)
from .documents import add_document_routes
from .guard import (
    PUBLIC_PATHS,
    PUBLIC_PREFIXES,
    ROLE_SCOPE_KEY,
    SAFE_METHODS,
    _Cors,
    _Counts,
    _Guard,
    _role_dependencies,
)
from .handlers import add_exception_handlers
from .memory import BODY_MEMORY_BYTES, BodyBudget, MemoryCeiling
from .models import (
    EMPTY_TEXT,
    BatchIn,
    BatchOut,
    CheckIn,
    CheckMatch,
    CheckOut,
    ClusterOut,
    CollectionOut,
    CommonOut,
    Created,
    DocId,
    DocText,
    DocumentIn,
    DocumentOut,
    ErrorOut,
    HealthOut,
    IdPage,
    MatchOut,
    Member,
    PairOut,
    Passage,
    QueryIn,
    QueryOut,
    ReusedOut,
    SkipExample,
    Text,
    ThresholdParam,
)
from .pages import STATIC, add_page, add_service_routes
from .search import add_search_routes
from .state import (
    CHECK_CANDIDATES,
    CHECK_DETAILS,
    CHECK_SECONDS,
    CHECK_SLOTS,
    CHECK_TEXT_BYTES,
    MAX_MATCHES,
    MAX_PASSAGES,
    PAIR_SECONDS,
    QUERY_SECONDS,
    THREADS,
    Service,
)

#: What this module exported before its parts became modules of their own, and exports still.
__all__ = [
    "CHECK_CANDIDATES",
    "CHECK_DETAILS",
    "CHECK_SECONDS",
    "CHECK_SLOTS",
    "CHECK_TEXT_BYTES",
    "COLLECTION_DISK_BYTES",
    "COLLECTION_MEMORY_BYTES",
    "CONCURRENT_UPLOADS",
    "EMPTY_TEXT",
    "MAX_COLLECTIONS",
    "MAX_MATCHES",
    "MAX_PASSAGES",
    "PAIR_SECONDS",
    "PUBLIC_PATHS",
    "PUBLIC_PREFIXES",
    "QUERY_SECONDS",
    "ROLE_SCOPE_KEY",
    "SAFE_METHODS",
    "STATIC",
    "THREADS",
    "BatchIn",
    "BatchOut",
    "CheckIn",
    "CheckMatch",
    "CheckOut",
    "ClusterOut",
    "CollectionOut",
    "CommonOut",
    "Created",
    "DocId",
    "DocText",
    "DocumentIn",
    "DocumentOut",
    "ErrorOut",
    "HealthOut",
    "IdPage",
    "MatchOut",
    "Member",
    "PairOut",
    "Passage",
    "QueryIn",
    "QueryOut",
    "ReusedOut",
    "SkipExample",
    "Text",
    "ThresholdParam",
    "create_app",
]


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
    read, write = _role_dependencies(api_keys)
    service = Service(
        index=index,
        batches=batches,
        collections=collections,
        uploads=uploads,
        counts=counts,
        read=read,
        write=write,
        max_upload_bytes=max_upload_bytes,
        max_text_bytes=max_text_bytes,
        max_batch=max_batch,
        max_documents=max_documents,
        large_text_bytes=large_text_bytes,
        max_large_requests=max_large_requests,
        check_text_bytes=check_text_bytes,
        check_slots=check_slots,
        max_collections=max_collections,
    )
    add_exception_handlers(app)
    # the routes, in the order of the API's documentation
    add_document_routes(app, service)
    add_search_routes(app, service)
    add_service_routes(app, service)
    add_collection_routes(app, service)
    add_page(app)
    return app


def _version() -> str:
    from .._version import __version__

    return __version__
