"""The service's memory: a budget for the request bodies it holds at once, and a ceiling on the
process's own memory above which new requests that bring work are refused.

Every request that carries a body is read whole before it is handled (its size and encoding are
checked first), so the bodies held at once are bounded by :class:`BodyBudget`: a request whose
body would take the total over the budget is answered 503 with ``Retry-After`` before its body
is read. :class:`MemoryCeiling` is the backstop for everything else (uploads being
deduplicated, large checks, caches): while the process's anonymous resident memory (its heap,
not the index file mapped into it, which the kernel can drop at will) is over the ceiling, after
freed memory has been handed back to the system, requests with a body are answered 503 too,
and the operator is told in the log. Reads without a body go on.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time

from .._log import get_logger

log = get_logger("neardup.server")

#: Bytes of request bodies held at once, by default.
BODY_MEMORY_BYTES = 64_000_000


class BodyBudget:
    """Bytes of request bodies held at once, at most ``limit`` (thread- and task-safe)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.held = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Reserve ``n`` bytes; False (nothing reserved) if that would go over the limit."""
        with self._lock:
            if self.held + n > self.limit:
                return False
            self.held += n
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self.held -= n


def anonymous_resident_bytes() -> int | None:
    """This process's anonymous resident memory (``RssAnon`` of ``/proc/self/status``), or
    None where the system does not say."""
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def release_free_memory() -> None:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). Freed memory otherwise stays with the process, and counts against its
    ceiling, until it is used again."""
    if not sys.platform.startswith("linux"):
        return
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim.argtypes = [ctypes.c_size_t]
    trim(0)


class MemoryCeiling:
    """Whether the process is over ``limit`` bytes of anonymous resident memory, read at most
    every ``every`` seconds; over it, freed memory is first handed back to the system (at most
    once a second) and the memory read again."""

    def __init__(self, limit: int | None, every: float = 0.1):
        self.limit = limit
        self.every = every
        self._read_at = 0.0
        self._trimmed_at = 0.0
        self._over = False
        self.refused = 0
        self._lock = threading.Lock()

    def over(self) -> bool:
        if self.limit is None:
            return False
        now = time.monotonic()
        with self._lock:
            if now - self._read_at < self.every:
                return self._over
            self._read_at = now
            used = anonymous_resident_bytes()
            if used is not None and used > self.limit and now - self._trimmed_at >= 1.0:
                self._trimmed_at = now
                release_free_memory()
                used = anonymous_resident_bytes()
            was, self._over = self._over, used is not None and used > self.limit
            if self._over and not was:
                log.warning(
                    "the service's memory (%d MB) is over its limit of %d MB "
                    "(--max-memory-mb): requests that bring work are answered 503 "
                    "until it falls",
                    (used or 0) // 1_000_000,
                    self.limit // 1_000_000,
                )
            elif was and not self._over:
                log.info(
                    "the service's memory is under its limit again (%d MB): requests "
                    "are taken again",
                    (used or 0) // 1_000_000,
                )
            return self._over
