"""The keep flags of the deduplicated corpus: :class:`KeepStream` (flags decided in record
order while the corpus is being written) and :class:`_Keep` (the writers' view of either)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...errors import ConfigError


class KeepStream:
    """Keep flags decided in record order while the corpus is being written.

    The deciding side (a deduplication's verification and clustering, batch by batch) calls
    :meth:`decide` with the flags of the next records, in order, or :meth:`fail` if it cannot
    go on. :func:`write_deduplicated` given a ``KeepStream`` copies the kept lines of a large
    uncompressed JSONL input as their flags arrive, so that the disk works while the rest is
    decided; for every other input it waits until all flags are decided."""

    def __init__(self, n: int):
        self.array = np.zeros(n, np.bool_)
        self.n = n
        self._decided = 0
        self._error: BaseException | None = None
        self._cond = threading.Condition()

    @property
    def decided(self) -> int:
        """The number of records whose flag is decided (the first ones)."""
        return self._decided

    def decide(self, flags: Any) -> None:
        """The flags of the next records."""
        flags = np.asarray(flags, np.bool_).reshape(-1)
        with self._cond:
            a = self._decided
            if a + len(flags) > self.n:
                raise ValueError(f"{a + len(flags)} flags decided for {self.n} records")
            self.array[a : a + len(flags)] = flags
            self._decided = a + len(flags)
            self._cond.notify_all()

    def fail(self, error: BaseException) -> None:
        """The deciding side stopped: whoever waits gets an error instead of flags."""
        with self._cond:
            self._error = error
            self._cond.notify_all()

    def wait(self, end: int) -> int:
        """Wait until at least the first ``end`` flags (at most all) are decided and return
        how many are: raises if the deciding side stopped before."""
        end = min(end, self.n)
        with self._cond:
            while self._decided < end and self._error is None:
                self._cond.wait()
            if self._decided < end:
                raise ConfigError(
                    "the deduplication stopped before it decided which records to keep"
                ) from self._error
            return self._decided


class _Keep:
    def __init__(self, keep: Any):
        self.stream = keep if isinstance(keep, KeepStream) else None
        if self.stream is not None:
            self.array = self.stream.array
            self.n = self.stream.n
            self._flags: list[bool] | None = None
            return
        arr = np.asarray(keep)
        if arr.ndim != 1 or arr.dtype != np.bool_:
            raise ConfigError(
                f"keep must be a one-dimensional bool array, got dtype {arr.dtype} "
                f"and shape {arr.shape}"
            )
        self.array = arr
        self._flags = arr.tolist()
        self.n = len(self._flags)

    def ready(self) -> None:
        """Wait until every flag is decided (a :class:`KeepStream`'s)."""
        if self.stream is not None:
            self.stream.wait(self.n)

    @property
    def flags(self) -> list[bool]:
        if self._flags is None:
            self.ready()
            self._flags = self.array.tolist()
        return self._flags

    def __call__(self, index: int) -> bool:
        if index >= self.n:
            raise ConfigError(
                f"keep has {self.n} flags but the inputs hold more records: keep "
                "must come from reading the same inputs with the same options"
            )
        return self.flags[index]
