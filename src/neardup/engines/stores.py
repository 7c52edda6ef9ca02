"""What the local engine keeps between chunks, in memory or, past a memory budget, on disk.

The bulk of a run's state is the shingle fingerprints of each distinct text (~1.6 KB for a text
of 2 KB) and its band keys (8 bytes per band). :class:`SpillingArray` holds one such array: in
memory (a :class:`~neardup._arrays.Growable`) while the stores together stay within the run's
:class:`Budget`; once they pass it, every store moves to a file of the run's :class:`Scratch`
folder and takes further chunks there. What was spilled is read back in order (a band's keys
whole, one band at a time) or by ranges (the fingerprints of the texts a batch of candidate
pairs needs: :meth:`SpilledArray.ranges`), so that memory stays bounded and the answers are
those of the run in memory.
"""

from __future__ import annotations

import errno
import mmap
import os
import shutil
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np

from .._arrays import Growable, read_ranges
from ..errors import ConfigError

__all__ = [
    "physical_memory",
    "Budget",
    "Scratch",
    "ScratchWriter",
    "SpillingArray",
    "SpilledArray",
    "parse_size",
    "default_budget",
]

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(value: str | int, name: str = "memory_budget") -> int:
    """Bytes from ``"512M"``, ``"4G"``, ``"1.5G"`` or a number of bytes."""
    if isinstance(value, bool):
        raise ConfigError(f"{name}={value!r} is invalid: a size such as 4G, 512M or bytes")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{name}={value!r} is invalid: at least 0")
        return value
    s = str(value).strip().upper().removesuffix("IB").removesuffix("B")
    unit = s[-1:] if s[-1:] in _UNITS and not s[-1:].isdigit() else ""
    number = s[: len(s) - len(unit)]
    try:
        n = float(number)
    except ValueError:
        raise ConfigError(
            f"{name}={value!r} is invalid: a size such as 4G, 512M or bytes"
        ) from None
    if not n >= 0:
        raise ConfigError(f"{name}={value!r} is invalid: at least 0")
    return int(n * _UNITS[unit])


def physical_memory(default: int = 8 << 30) -> int:
    """The machine's memory in bytes (``default`` where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return default


def default_budget() -> int:
    """The default memory budget of the engine's stores: a quarter of the machine's memory
    (at least 256 MB)."""
    return max(physical_memory() // 4, 256 << 20)


class Scratch:
    """A run's scratch folder: made on first use under ``parent`` (default: the system's
    temporary folder), removed by :meth:`close`. ``peak_bytes``: the most it held."""

    def __init__(self, parent: str | os.PathLike | None = None):
        self.parent = Path(parent) if parent is not None else None
        self.path: Path | None = None
        self.peak_bytes = 0
        self._bytes = 0
        self._pool: ThreadPoolExecutor | None = None
        self._copier: ThreadPoolExecutor | None = None

    def file(self, name: str) -> Path:
        if self.path is None:
            if self.parent is not None and not self.parent.is_dir():
                raise ConfigError(f"work_dir={str(self.parent)!r} is not a folder")
            self.path = Path(tempfile.mkdtemp(prefix=".neardup-scratch-", dir=self.parent))
        return self.path / name

    def wrote(self, nbytes: int) -> None:
        self._bytes += nbytes
        self.peak_bytes = max(self.peak_bytes, self._bytes)

    def pool(self) -> ThreadPoolExecutor:
        """The thread the scratch files' blocks are written on (see :class:`ScratchWriter`)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="neardup-scratch")
        return self._pool

    def copier(self) -> ThreadPoolExecutor:
        """The thread the stores' chunks are copied into their files' buffers on (see
        :meth:`SpillingArray.reserve`); one for all, so each file's chunks stay in order."""
        if self._copier is None:
            self._copier = ThreadPoolExecutor(1, thread_name_prefix="neardup-scratch-copy")
        return self._copier

    def close(self) -> None:
        for attr in ("_copier", "_pool"):  # what was queued is done (or failed) first
            pool = getattr(self, attr)
            if pool is not None:
                pool.shutdown(wait=True)
                setattr(self, attr, None)
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            self.path = None
            self._bytes = 0


class Budget:
    """The bytes the stores may hold in memory together (``None``: no limit); once past it
    they all move to the scratch folder (:meth:`SpillingArray.spill`)."""

    def __init__(self, limit: int | None):
        self.limit = limit
        self.used = 0
        self.spilled = False

    def over(self) -> bool:
        return self.limit is not None and not self.spilled and self.used > self.limit


class ScratchWriter:
    """A new file written from start to end past the page cache (``O_DIRECT``, where the system
    and the file system allow it), through aligned buffers of :attr:`BLOCK` bytes: copying
    10 GB of fingerprints into the page cache cost a processor 20-30 s on a virtual machine (a
    quarter of the run), written directly 1-2 s of copying into the buffer. With a ``pool``
    (one thread) a full block is written there while the next one fills (a direct write waits
    for the disk); without, on the calling thread. Elsewhere, or when the file system refuses,
    plain writes. :meth:`flush` makes everything written readable (the part of a block not
    yet full through a plain write); :meth:`close` does as much and closes the file."""

    BLOCK = 2 << 20

    def __init__(self, path: str | os.PathLike, pool: ThreadPoolExecutor | None = None):
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)
        self._plain = os.open(path, flags, 0o600)
        self._direct = -1
        self._pool = pool
        self._maps: list[mmap.mmap] = []
        self._buf: np.ndarray | None = None
        self._pending: Future | None = None  # the block being written on the pool
        self._refused = False  # the file system refused a direct write
        direct = getattr(os, "O_DIRECT", 0)
        if direct:
            try:
                self._direct = os.open(path, os.O_WRONLY | direct)
                for _ in range(2 if pool is not None else 1):
                    self._maps.append(mmap.mmap(-1, self.BLOCK))  # page-aligned
                self._buf = np.frombuffer(self._maps[0], np.uint8)
            except (OSError, ValueError):
                self._close_direct()
        self._fill = 0  # bytes of the buffer not yet written as a whole block
        self._done = 0  # bytes before the buffer: written, or being written
        self._tail = 0  # bytes of the buffer also written plainly (flush)

    def write(self, data: np.ndarray) -> None:
        """Append the bytes of ``data`` (``uint8``, contiguous)."""
        if self._buf is None:
            self._pwrite_plain(data, self._done)
            self._done += len(data)
            return
        pos, n = 0, len(data)
        while pos < n:
            take = min(self.BLOCK - self._fill, n - pos)
            self._buf[self._fill : self._fill + take] = data[pos : pos + take]
            self._fill += take
            pos += take
            if self._fill == self.BLOCK:
                self._write_block()
                if self._buf is None:  # refused: the rest plainly
                    self.write(data[pos:])
                    return

    def _write_block(self) -> None:
        assert self._buf is not None
        block = self._maps[0]
        if self._pool is None:
            self._block_out(block, self._done)
        else:
            self._wait()
            self._pending = self._pool.submit(self._block_out, block, self._done)
            self._maps.reverse()  # fill the other buffer meanwhile
        self._done += self.BLOCK
        self._fill = self._tail = 0
        if self._refused:
            self._wait()
            self._close_direct()
        else:
            self._buf = np.frombuffer(self._maps[0], np.uint8)

    def _block_out(self, block: mmap.mmap, at: int) -> None:
        """Write a full buffer at ``at``: directly, or plainly if the file system refuses."""
        with memoryview(block) as view:
            try:
                done = 0
                while done < self.BLOCK:
                    done += os.pwrite(self._direct, view[done:], at + done)
                return
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                self._refused = True  # a file system that takes no O_DIRECT writes
        self._pwrite_plain(np.frombuffer(block, np.uint8), at)

    def _wait(self) -> None:
        """Wait for the block being written (raising its error)."""
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def _pwrite_plain(self, data: np.ndarray, at: int) -> None:
        view = data.data.cast("B")
        done = 0
        while done < len(view):
            if hasattr(os, "pwrite"):
                done += os.pwrite(self._plain, view[done:], at + done)
            else:  # Windows: no positional writes
                os.lseek(self._plain, at + done, os.SEEK_SET)
                done += os.write(self._plain, view[done:])

    def flush(self) -> None:
        self._wait()
        if self._buf is not None and self._fill > self._tail:
            self._pwrite_plain(self._buf[self._tail : self._fill], self._done + self._tail)
            self._tail = self._fill

    def _close_direct(self) -> None:
        if self._direct >= 0:
            os.close(self._direct)
            self._direct = -1
        self._buf = None
        for m in self._maps:
            m.close()
        self._maps = []

    def close(self) -> None:
        try:
            self.flush()
        finally:
            try:
                self._wait()  # (after a failed flush)
            finally:
                self._close_direct()
                os.close(self._plain)


class SpilledArray:
    """An array written to a file: read back whole (:meth:`load`) or by ranges
    (:meth:`ranges`), never mapped (reading copies what is asked for, so the process holds only
    that): whole past the page cache where the system allows it (the file was written so
    too), by ranges so too when the file is large (:attr:`direct`)."""

    def __init__(self, path: Path, dtype: np.dtype, n: int):
        self.path, self.dtype, self.n = path, np.dtype(dtype), n
        # Ranges are read past the page cache from a file too large to stay there (more than
        # half the machine's memory): read once, filling the cache would only cost processor
        # time. A smaller one is read through the cache, which keeps what several batches
        # read again.
        self.direct = n * self.dtype.itemsize > physical_memory(1 << 62) // 2

    def __len__(self) -> int:
        return self.n

    def load(self) -> np.ndarray:
        if self.n == 0:
            return np.zeros(0, self.dtype)
        return read_ranges(self.path, self.dtype, np.zeros(1), np.full(1, self.n), 4 << 20, True)[0]

    def take(self, idx: np.ndarray) -> np.ndarray:
        """The values at the positions ``idx`` (a copy)."""
        idx = np.asarray(idx, np.int64)
        order = np.argsort(idx, kind="stable")
        out = np.empty(len(idx), self.dtype)
        out[order] = self.ranges(idx[order], idx[order] + 1)[0]
        return out

    def ranges(self, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The values of the ranges ``[starts[i], ends[i])`` one after another, and where
        each begins (``offsets``, one more than the ranges); neighbouring ranges are read
        together (ranges in increasing order read fastest)."""
        return read_ranges(self.path, self.dtype, starts, ends, direct=self.direct)


class SpillingArray:
    """An append-only array of the engine's stores: in memory within the run's budget, in a
    scratch file once the stores pass it. :meth:`reserve`/:meth:`commit` let a kernel write
    a chunk in place, as :class:`~neardup._arrays.Growable` does; :meth:`take` gives the
    whole array (in memory) or a :class:`SpilledArray`."""

    def __init__(self, dtype, name: str, budget: Budget, scratch: Scratch):
        self.dtype = np.dtype(dtype)
        self.name, self.budget, self.scratch = name, budget, scratch
        self._mem: Growable | None = Growable(self.dtype)
        self._file: ScratchWriter | None = None
        self._path: Path | None = None
        # spilled: two chunk buffers in turn, each written out on the scratch folder's copying
        # thread while the other takes the next chunk (see reserve)
        self._bufs: list[np.ndarray | None] = [None, None]
        self._writing: list[Future | None] = [None, None]
        self._turn = 0
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def reserve(self, m: int) -> np.ndarray:
        if self._mem is not None:
            return self._mem.reserve(m)
        # Two buffers for all the chunks, in turn: their pages are faulted in once, not for
        # each chunk of a spilled run, and one is copied out and written (on the copying
        # thread, off the caller's) while the other takes the next chunk.
        i = self._turn
        self._settle(i)
        buf = self._bufs[i]
        if buf is None or len(buf) < m:
            self._bufs[i] = buf = None
            buf = self._bufs[i] = np.empty(m + m // 8 + 1, self.dtype)  # room for more
        return buf[:m]

    def _settle(self, i: int) -> None:
        """Wait until buffer ``i`` is written out (raising the write's error)."""
        writing, self._writing[i] = self._writing[i], None
        if writing is not None:
            writing.result()

    def commit(self, m: int) -> None:
        if self._mem is not None:
            self._mem.commit(m)
            self.budget.used += m * self.dtype.itemsize
        else:
            i = self._turn
            buf = self._bufs[i]
            assert buf is not None and self._file is not None and self._writing[i] is None
            self._writing[i] = self.scratch.copier().submit(self._write, buf[:m])
            self.scratch.wrote(m * self.dtype.itemsize)
            self._turn = 1 - i
        self._n += m

    def append(self, part: np.ndarray) -> None:
        part = part.reshape(-1)
        view = self.reserve(len(part))
        view[:] = part
        del view
        self.commit(len(part))

    def _write(self, values: np.ndarray) -> None:
        assert self._file is not None
        values = np.ascontiguousarray(values, self.dtype)
        self._file.write(values.reshape(-1).view(np.uint8))

    def spill(self) -> None:
        """Move what is held in memory to a scratch file; take further chunks there."""
        if self._mem is None:
            return
        self._path = self.scratch.file(self.name)
        self._file = ScratchWriter(self._path, self.scratch.pool())
        held = self._mem.take()
        self._mem = None
        self._write(held)
        self.scratch.wrote(held.nbytes)
        self.budget.used -= held.nbytes
        del held

    def read(self, idx: np.ndarray) -> np.ndarray:
        """A copy of the values at the positions ``idx``."""
        if self._mem is not None:
            return self._mem.read(idx)
        return self._spilled().take(idx)

    def _spilled(self) -> SpilledArray:
        assert self._file is not None and self._path is not None
        self._settle(0)
        self._settle(1)
        self._file.flush()
        return SpilledArray(self._path, self.dtype, self._n)

    def take(self) -> np.ndarray | SpilledArray:
        """Everything appended: an array (in memory) or the file it was written to."""
        if self._mem is not None:
            out = self._mem.take()
            self._mem = None
            self.budget.used -= out.nbytes
            return out
        spilled = self._spilled()
        assert self._file is not None
        self._file.close()
        self._file = None
        self._bufs = [None, None]
        return spilled
