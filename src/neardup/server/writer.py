"""Writes made by a process of lower priority, so that adding never holds up the answers to
queries and checks.

A batch of a thousand texts costs a tenth of a second of work (normalising, shingling,
sketching, fingerprinting, compressing, inserting) and, every ``flush_docs`` texts, the
writing out and merging of key segments. Done by the process that answers requests, it holds
that process's interpreter meanwhile (a Python process runs one thread of Python at a time)
and competes for the processors at the same priority as the answers: measured on a service of
a million texts, queries that ran while a batch was added took twice as long at the 99th
percentile. :class:`BatchWriter` hands each batch to a process of its own (started at the
first batch, ``nice`` 3 by default: when the processors are busy, the system gives the
answers more of them than the writer), which opens the same index and adds the batch in one
transaction, as ``Index.add_many`` does; errors come back as the same exceptions. An index in
memory cannot be shared: its batches are added in process.

Measured (a million texts, 2 cores, four readers asking without a pause and one writer,
batches of 1,000): at nice 10 the writer got too little of the processors to add 2,000 texts
a second (900-1,400); at 5, 1,880-1,950 a second; at 3, 2,400 a second sending as fast as it
is answered, and 2,000 held to that rate.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Sequence
from typing import Any

from .._log import get_logger
from ..index import Index
from ..index.storage import IndexBusyError

log = get_logger(__name__)

#: how much lower the writer process's priority is (``nice``)
WRITER_NICE = 3

_INDEX: Index | None = None  # the writer process's index


def _start(target: str, storage_options: dict[str, Any], nice: int) -> None:
    global _INDEX
    import multiprocessing.util

    try:
        os.nice(nice)
    except OSError:  # pragma: no cover - a system without priorities
        pass
    _INDEX = Index(target, storage_options=storage_options, create=False)
    # closed (its merges finished) when the process stops: a pool's process skips atexit
    multiprocessing.util.Finalize(None, _INDEX.close, exitpriority=10)


def _call(method: str, args: tuple, kwargs: dict) -> Any:
    """``Index.<method>(*args, **kwargs)`` in the writer process; an exception comes back as
    the result, as itself where it crosses processes intact."""
    assert _INDEX is not None
    try:
        return getattr(_INDEX, method)(*args, **kwargs)
    except Exception as e:
        try:
            back = pickle.loads(pickle.dumps(e))
            if type(back) is type(e) and str(back) == str(e):
                return _Raised(e)
        except Exception:  # noqa: BLE001, S110 - sent as a plain error below
            pass
        return _Raised(RuntimeError(f"{type(e).__name__}: {e}"))


class _Raised:
    """An exception the writer process raised (told apart from a result)."""

    def __init__(self, error: BaseException):
        self.error = error


class BatchWriter:
    """Writes to ``index`` (batches, single adds, removals, checks that add) through a process
    of lower priority (see the module); with ``process=False``, or an index in memory, in
    this process."""

    def __init__(
        self,
        index: Index,
        target: Any,
        storage_options: dict[str, Any] | None = None,
        process: bool = True,
        nice: int | None = None,
    ):
        self.index = index
        self._target = target
        self._options = dict(storage_options or {})
        self._nice = WRITER_NICE if nice is None else nice
        self.process = (
            bool(process) and isinstance(target, (str, os.PathLike)) and str(target) != ":memory:"
        )
        self._pool: Any = None
        self._lock = threading.Lock()

    def _executor(self) -> Any:
        with self._lock:
            if self._pool is None:
                import multiprocessing as mp
                from concurrent.futures import ProcessPoolExecutor

                # a clean interpreter: this process may hold threads and connections
                self._pool = ProcessPoolExecutor(
                    1,
                    mp_context=mp.get_context("spawn"),
                    initializer=_start,
                    initargs=(str(self._target), self._options, self._nice),
                )
            return self._pool

    def add_many(self, docs: Sequence[tuple[str, str]]) -> int:
        return self.call("add_many", list(docs), batch_size=max(len(docs), 1))

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``index.<method>(*args, **kwargs)``, by the writer process: every write of the
        service goes through it (adds, removals, checks that add), so that one process
        writes and none waits on another's lock."""
        if not self.process:
            return getattr(self.index, method)(*args, **kwargs)
        pool = self._executor()
        try:
            got = pool.submit(_call, method, args, kwargs).result()
        except Exception as e:
            got = e
        return self._result(pool, got)

    async def acall(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """:meth:`call` for the event loop: waiting for the writer process holds no thread (a
        thread held by a write waiting its turn would be one a query cannot have)."""
        if not self.process:
            import functools

            import anyio.to_thread

            return await anyio.to_thread.run_sync(
                functools.partial(getattr(self.index, method), *args, **kwargs)
            )
        import asyncio

        pool = self._executor()
        try:
            got = await asyncio.wrap_future(pool.submit(_call, method, args, kwargs))
        except Exception as e:
            got = e
        return self._result(pool, got)

    def _result(self, pool: Any, got: Any) -> Any:
        from concurrent.futures.process import BrokenProcessPool

        if isinstance(got, BrokenProcessPool):
            e = got
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False)
            log.error("the writer process stopped (%s); the next write starts another", e)
            raise IndexBusyError(
                "the process that writes to the index stopped; the write was "
                "not made, or made just before it stopped: send it again (an "
                "add then gets a 409 if it is there)"
            ) from e
        if isinstance(got, BaseException):
            raise got
        if isinstance(got, _Raised):
            raise got.error
        return got

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
