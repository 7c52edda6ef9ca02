"""Threads for the compiled kernels.

The kernels of :mod:`neardup._kernels` release the GIL and work on a range ``[lo, hi)`` of their
items; :func:`parallel` cuts the items into parts of about equal work and runs the parts on a
shared pool of threads, the calling thread taking its share. :func:`set_num_threads` sets how
many threads the kernels called from the calling thread may use (default: the processors this
process may run on), so that one thread of a program can keep a core for other work.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ["available_cpus", "get_num_threads", "set_num_threads", "parallel"]

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_local = threading.local()


def available_cpus() -> int:
    """Processors this process may run on (its CPU affinity where the platform tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def get_num_threads() -> int:
    """Threads a kernel called from this thread may use."""
    n = getattr(_local, "threads", None)
    return n if n is not None else available_cpus()


def set_num_threads(n: int | None) -> None:
    """Let the kernels called from this thread use ``n`` threads (``None``: every available
    processor). Other threads keep their own setting."""
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"threads={n!r} is invalid: expected an integer >= 1")
    _local.threads = n


def _get_pool(size: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < size:
            # an older, smaller pool finishes what it has and its threads end
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(size, thread_name_prefix="neardup-kernel")
            _pool_size = size
        return _pool


def parallel(
    fn: Callable[[int, int], object],
    n: int,
    weights: np.ndarray | None = None,
    min_weight: float = 1 << 16,
) -> None:
    """Call ``fn(lo, hi)`` over ranges that together cover ``[0, n)`` exactly once.

    ``weights`` (``n`` values, e.g. bytes per document) balance the parts; without them each
    item weighs 1. Work below ``min_weight`` per thread is not worth a thread: small calls run
    in one piece on the calling thread. With several threads the work is cut into about four
    parts per thread, which the threads take in turn (a part of long documents does not hold
    the others up); ``fn`` must release the GIL to run in parallel.
    """
    t = get_num_threads()
    if n <= 0:
        return
    if weights is None:
        total = float(n)
        cum = None
    else:
        cum = np.cumsum(weights, dtype=np.float64)
        total = float(cum[-1]) if len(cum) else 0.0
    t = int(min(t, n, max(1, total // min_weight)))
    if t <= 1:
        fn(0, n)
        return
    parts = 4 * t
    if cum is None:
        bounds = np.linspace(0, n, parts + 1).astype(np.int64)
    else:
        bounds = np.searchsorted(cum, np.linspace(0, total, parts + 1)[1:-1], side="left")
        bounds = np.concatenate(([0], bounds, [n])).astype(np.int64)
    ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
    turn = itertools.count()  # next() on a count is atomic under the GIL

    def worker() -> None:
        while True:
            i = next(turn)
            if i >= len(ranges):
                return
            fn(*ranges[i])

    pool = _get_pool(t - 1)
    futures = [pool.submit(worker) for _ in range(t - 1)]
    try:
        worker()
    finally:
        # wait for every part even if one failed, then raise the first failure
        errors = [f.exception() for f in futures]
    for e in errors:
        if e is not None:
            raise e
