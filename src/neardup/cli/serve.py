"""``neardup serve``: the HTTP service and its web page over an index (see
:mod:`neardup.server`). The index is opened as ``neardup index`` opens it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import OutputError
from .common import (
    EXIT_OK,
    INDEX_HELP,
    _add_redis_password,
    _is_url,
    _say,
    _shown,
    _storage_options,
)

#: The top-level commands of this module and their help.
COMMANDS = {
    "serve": "HTTP service and web page over an index",
}


def cmd_serve(a: argparse.Namespace) -> int:
    import logging
    import os

    from ..server import logs, run
    from ..server.access import ApiKeys
    from ..server.serve import check_binding

    try:  # first, so that what follows is logged where the operator asked
        logs.configure(a.log_level, a.log_file)
    except OSError as e:
        raise OutputError(f"--log-file {a.log_file}: {e.strerror or e}") from None
    try:
        keys_log = logging.getLogger("neardup.server.access")
        keys = ApiKeys.configured(
            a.api_keys_file,
            os.environ,
            log=lambda m: keys_log.warning(m) if "not reloaded" in m else keys_log.info(m),
        )
        # before an index is created
        check_binding(a.host, keys, a.allow_unauthenticated, a.allowed_host or ())
        from ..index import Index, IndexNotFoundError

        options = _storage_options(a, a.index, "serve")
        if not _is_url(a.index) and not Path(a.index).exists() and not a.create:
            raise IndexNotFoundError(
                f"{a.index}: no such index; create it with `neardup "
                f"index create {a.index}` or pass --create"
            )
        if a.create:
            try:
                Index(a.index, create=False, storage_options=options).close()
            except IndexNotFoundError:
                # a new index for the uniqueness check: it finds copied passages too (adding
                # is slower, which a page that adds one text at a time does not feel)
                Index(a.index, passages=True, storage_options=options).close()
                _say("serve", f"created a new, empty index: {_shown(a.index)}")
        run(
            a.index,
            host=a.host,
            port=a.port,
            max_upload_bytes=a.max_upload_bytes,
            max_text_bytes=a.max_text_bytes,
            max_batch=a.max_batch,
            api_keys=keys,
            body_seconds=a.body_timeout,
            max_documents=a.max_documents,
            header_seconds=a.header_timeout,
            check_text_bytes=a.check_text_bytes,
            collection_memory_bytes=a.collection_memory_mb * 1_000_000,
            collection_disk_bytes=a.collection_disk_mb * 1_000_000,
            collection_folder=a.collection_folder,
            max_collections=a.max_collections,
            concurrent_uploads=a.concurrent_uploads,
            storage_options=options,
            max_memory_bytes=a.max_memory_mb * 1_000_000,
            threads=a.threads,
            body_memory_bytes=(
                max(64_000_000, a.max_upload_bytes)
                if a.body_memory_mb is None
                else a.body_memory_mb * 1_000_000
            ),
            max_requests=a.max_requests,
            max_connections=a.max_connections,
            workers=a.workers,
            check_slots=a.check_slots,
            log_level=a.log_level,
            writer_nice=a.writer_nice,
            log_file=a.log_file,
            allow_unauthenticated=a.allow_unauthenticated,
            allowed_hosts=a.allowed_host or (),
            allowed_origins=a.allowed_origin or (),
            cors_origins=a.cors_origin or (),
        )
    finally:
        logs.reset()
    return EXIT_OK


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``serve`` to the CLI's sub-parsers."""
    sv = sub.add_parser(
        "serve",
        help=COMMANDS["serve"],
        description="Serve an index over HTTP (FastAPI): JSON API, OpenAPI "
        "schema at /docs, and a web page at / for uniqueness checks and "
        "collection uploads.",
    )
    sv.add_argument("--index", required=True, metavar="INDEX", help=INDEX_HELP)
    sv.add_argument(
        "--create",
        action="store_true",
        help="create the index if missing, with "
        "default parameters and passage fingerprints (so that the page finds "
        "copied passages too); without it, a missing SQLite file or a Redis "
        "prefix that holds no index (a Redis server that lost its data) is an "
        "error",
    )
    _add_redis_password(sv)
    sv.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default: 127.0.0.1, this machine only); another "
        "address needs API keys, or --allow-unauthenticated",
    )
    sv.add_argument("--port", type=int, default=8000, help="port to listen on (default: 8000)")
    sv.add_argument(
        "--max-upload-bytes",
        type=int,
        default=10_000_000,
        metavar="N",
        help="largest request body accepted (default: 10 MB)",
    )
    sv.add_argument(
        "--max-text-bytes",
        type=int,
        default=1_000_000,
        metavar="N",
        help="largest single text accepted (default: 1 MB)",
    )
    sv.add_argument(
        "--max-batch",
        type=int,
        default=10_000,
        metavar="N",
        help="most documents in one batch request (default: 10000)",
    )
    sv.add_argument(
        "--max-documents",
        type=int,
        default=None,
        metavar="N",
        help="the most documents the index may hold: adding beyond is refused "
        "with 507 (default: no limit)",
    )
    sv.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="time a client has to send a request's headers; a slower one gets 408 "
        "and the connection is closed (default: 10)",
    )
    sv.add_argument(
        "--body-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="time a client has to send a whole request body; a slower one gets 408 (default: 30)",
    )
    sv.add_argument(
        "--check-text-bytes",
        type=int,
        default=4_000_000,
        metavar="N",
        help="most bytes of matched texts one /check answer carries; the other "
        "matches come without their text (default: 4 MB)",
    )
    co = sv.add_argument_group(
        "uploaded collections",
        "The page's uploads (POST /collections) are deduplicated a "
        "few at a time and kept for the side-by-side view: the most recently used in memory, "
        "older ones in a private temporary folder (removed when the service stops), the "
        "least recently used dropped beyond the limits (a client is then told to upload the "
        "file again).",
    )
    co.add_argument(
        "--collection-memory-mb",
        type=int,
        default=256,
        metavar="MB",
        help="memory for the collections kept (default: 256); the service's peak "
        "is about this plus the work of the uploads being deduplicated "
        "(--concurrent-uploads)",
    )
    co.add_argument(
        "--collection-disk-mb",
        type=int,
        default=2000,
        metavar="MB",
        help="disk space for the collections moved out of memory (default: "
        "2000; 0: keep none on disk)",
    )
    co.add_argument(
        "--collection-folder",
        default=None,
        metavar="DIR",
        help="where the private folder of the collections on disk is made "
        "(default: the system's temporary folder, TMPDIR)",
    )
    co.add_argument(
        "--max-collections",
        type=int,
        default=8,
        metavar="N",
        help="collections kept at most, in memory and on disk (default: 8)",
    )
    co.add_argument(
        "--concurrent-uploads",
        type=int,
        default=2,
        metavar="N",
        help="uploads deduplicated at once; more get 503 with Retry-After (default: 2)",
    )
    sv.add_argument(
        "--max-memory-mb",
        type=int,
        default=1000,
        metavar="MB",
        help="the service's memory limit: while its own memory (not counting the "
        "index file it reads) is over it, requests that bring work (adds, "
        "checks, uploads) get 503 with Retry-After, and reads go on "
        "(default: 1000)",
    )
    sv.add_argument(
        "--body-memory-mb",
        type=int,
        default=None,
        metavar="MB",
        help="request bodies held in memory at once; a body beyond gets 503 with "
        "Retry-After (default: 64, or --max-upload-bytes if larger)",
    )
    sv.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="processes serving the index side by side, on one port: a process "
        "runs Python on one core at a time, so on a machine of N cores N "
        "workers answer more requests at once and sooner. The limits below "
        "(requests, connections, memory, uploads, threads) hold per worker; "
        "uploaded collections are shared. An SQLite file or Redis index "
        "(default: 1)",
    )
    sv.add_argument(
        "--check-slots",
        type=int,
        default=1,
        metavar="N",
        help="uniqueness checks (/check) searched at once by a worker; the others "
        "wait for their turn within the check's 2 s (then 503 with "
        "Retry-After), so that queries and adds are not held up by several "
        "of them (default: 1)",
    )
    sv.add_argument(
        "--writer-nice",
        type=int,
        default=3,
        metavar="N",
        help="batches of documents (POST /documents:batch) are added by a process "
        "beside each worker, at this much lower priority (0-19, as nice(1)), "
        "so that queries and checks are answered first when the processors "
        "are busy; -1: by the worker itself (default: 3)",
    )
    sv.add_argument(
        "--threads",
        type=int,
        default=16,
        metavar="N",
        help="threads that run requests' work at once, each with its own "
        "connection to an SQLite index; other requests wait for one "
        "(default: 16)",
    )
    sv.add_argument(
        "--max-requests",
        type=int,
        default=64,
        metavar="N",
        help="requests handled at once, counted once their headers have "
        "arrived; more get 503 with Retry-After (default: 64)",
    )
    sv.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        metavar="N",
        help="connections kept open at once; beyond, the one that has waited "
        "longest without sending a whole request (half-open or idle) is "
        "closed to make room. The open-file limit is raised to fit if it "
        "can be (default: 1000)",
    )
    lg = sv.add_argument_group(
        "log",
        "The service logs its start and stop (address, index, limits; never a key), "
        "its errors with the request ID the client was given, the index's backend faults, "
        "and one line per request (client, method, path without its query string, status, "
        "time, request ID). Keys, passwords and document texts are never logged.",
    )
    lg.add_argument(
        "--log-file",
        metavar="PATH",
        help="append the log to this file instead of stderr; it is reopened when "
        "moved or removed, so logrotate needs no copytruncate",
    )
    lg.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="least severe records logged: 'warning' leaves out "
        "the request lines and the start and stop (default: info)",
    )
    ac = sv.add_argument_group(
        "access",
        "API keys have a role: read (query, check, get, list, stats) or write "
        "(also add, delete and upload). They come from a key file and from the environment "
        "variables NEARDUP_API_KEY_READ and NEARDUP_API_KEY_WRITE (several keys: separated by "
        "commas), never from the command line. Clients send 'Authorization: Bearer KEY' or "
        "'X-API-Key: KEY'; the web page asks for a key when one is needed.",
    )
    ac.add_argument(
        "--api-keys-file",
        metavar="PATH",
        help="a file of keys, one 'read:KEY' or 'write:KEY' a line (# comments); "
        "read again on SIGHUP and when it changes, so keys are rotated "
        "without a restart",
    )
    ac.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="serve a non-loopback --host without API keys (anyone who reaches "
        "the port may read, add and delete documents)",
    )
    ac.add_argument(
        "--allowed-host",
        action="append",
        metavar="NAME[:PORT]",
        help="a Host name clients use to reach the service, besides the bound "
        "address, localhost, 127.0.0.1 and [::1]; '*' for any (behind a "
        "proxy that checks it; needs API keys or --allow-unauthenticated); "
        "repeatable",
    )
    ac.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help="a web origin (https://app.example.com) whose pages may send "
        "requests that change something (the service's own page always "
        "may); repeatable",
    )
    ac.add_argument(
        "--cors-origin",
        action="append",
        metavar="ORIGIN",
        help="a web origin whose scripts may call the API (CORS; off by default); repeatable",
    )
    sv.set_defaults(func=cmd_serve)
