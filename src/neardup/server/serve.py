"""Serving an index: :func:`run` (uvicorn, bounded: requests, connections, header time), with
worker processes forked from the service where asked (:func:`_serve_workers`), and
:func:`check_binding`, which refuses to serve without keys where other machines reach it."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from .._log import get_logger
from .._threads import available_cpus
from ..errors import ConfigError, NeardupError
from ..index import Index
from ..index.redact import redact_location
from ..validate import check_int
from .access import ApiKeys, HostRules, host_entry, is_loopback
from .front import MAX_CONNECTIONS, MAX_REQUESTS

#: the logger of the service (named as the module that served it)
log = get_logger(f"{__package__}.app")

#: requests the service handles at once by default (503 beyond; see front.py), and the
#: seconds an idle keep-alive connection stays open
CONCURRENCY = MAX_REQUESTS
KEEP_ALIVE_SECONDS = 5

#: seconds a request waits for another process's SQLite write lock before a 503 (the
#: library's default, 60 s, is longer than a web client waits)
SQLITE_BUSY_SECONDS = 5.0


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
    from .app import create_app

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
            options: dict[str, Any] = {
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
    from .app import create_app
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

            def forward_hup(*_: Any) -> None:
                for p, _began in procs:
                    if p.is_alive():
                        os.kill(p.pid, signal.SIGHUP)

            signal.signal(signal.SIGHUP, forward_hup)
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
