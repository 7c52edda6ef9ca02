"""The scratch folder: each partition's arrays and each shuffle's pieces, as ``.npy`` files.

Per-partition state lives on disk, not in worker memory: one sub-folder per partition (its
arrays, written once and never changed) and one per shuffle. Tasks pass only small handles
(:class:`Part`) and load the arrays they need (the shingle fingerprints memory-mapped). A
shuffle's map task writes its items sorted by bucket, one file per column plus the bucket
bounds; each reducer reads only its slice of each map file. Files are written under a temporary
name and renamed, so a task that Dask runs again after losing a worker rewrites the same bytes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...io.writers import arrow_table


def atomic_save(path: str, arr: np.ndarray) -> None:
    """Write ``arr`` to ``path`` (.npy) under a temporary name, then rename it: a task run again
    (a lost worker's) rewrites the same bytes, and no reader ever sees half a file."""
    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        with open(tmp, "wb") as f:
            np.save(f, np.ascontiguousarray(arr), allow_pickle=False)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def encode_strs(strs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as UTF-8 bytes ``uint8[total]`` and offsets ``int64[n+1]``."""
    joined = "".join(strs)
    if joined.isascii():  # a byte per character: encoded at once
        off = np.zeros(len(strs) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, strs), np.int64, len(strs)), out=off[1:])
        return np.frombuffer(joined.encode("ascii"), np.uint8), off
    enc = [s.encode("utf-8", "surrogatepass") for s in strs]
    off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, enc), np.int64, len(enc)), out=off[1:])
    return np.frombuffer(b"".join(enc), np.uint8), off


def decode_strs(buf: np.ndarray, off: np.ndarray) -> list[str]:
    b = bytes(buf)
    o = (off - off[0]).tolist()
    if b.isascii():  # a character per byte: decoded at once, then cut
        t = b.decode("ascii")
        return [t[o[i] : o[i + 1]] for i in range(len(o) - 1)]
    return [b[o[i] : o[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(o) - 1)]


Ragged = tuple[np.ndarray, np.ndarray]  # strings as UTF-8 bytes uint8[total], offsets int64[n+1]


def take_ragged(v: np.ndarray, off: np.ndarray, idx: np.ndarray) -> Ragged:
    """Strings ``idx`` of ``(v, off)`` (offsets from 0), gathered as bytes: no Python string."""
    idx = np.asarray(idx, np.int64)
    starts = off[:-1][idx]
    sizes = off[1:][idx] - starts
    noff = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(sizes, out=noff[1:])
    return v[np.repeat(starts - noff[:-1], sizes) + np.arange(noff[-1])], noff


def concat_ragged(pieces: Sequence[Ragged]) -> Ragged:
    """Ragged strings one after another."""
    if not pieces:
        return np.zeros(0, np.uint8), np.zeros(1, np.int64)
    sizes = [int(o[-1] - o[0]) for _, o in pieces]
    base = np.cumsum([0, *sizes])
    off = np.concatenate(
        [o[:-1] - o[0] + b for (_, o), b in zip(pieces, base[:-1].tolist(), strict=True)]
        + [np.asarray([base[-1]], np.int64)]
    )
    v = np.concatenate([np.asarray(x[o[0] : o[-1]], np.uint8) for x, o in pieces])
    return v, off.astype(np.int64)


def arrow_strs(v: np.ndarray, off: np.ndarray) -> Any:
    """Ragged strings as an Arrow string array (its buffers: no Python string)."""
    import pyarrow as pa

    n = len(off) - 1
    off = off - off[0]
    if int(off[-1]) <= np.iinfo(np.int32).max:
        typ, o = pa.string(), off.astype(np.int32)
    else:
        typ, o = pa.large_string(), off.astype(np.int64)
    return pa.Array.from_buffers(
        typ, n, [None, pa.py_buffer(o), pa.py_buffer(np.ascontiguousarray(v))]
    )


def number_strs(values: np.ndarray) -> Ragged:
    """Non-negative integers written in decimal, as ragged strings (vectorised)."""
    x = np.asarray(values, np.int64)
    digits = np.ones(len(x), np.int64)
    t = x // 10
    while np.any(t):
        digits += t > 0
        t //= 10
    off = np.zeros(len(x) + 1, np.int64)
    np.cumsum(digits, out=off[1:])
    v = np.empty(int(off[-1]), np.uint8)
    # the last digit of each number at its end, then the ones before it
    pos = off[1:] - 1
    t = x.copy()
    left = np.ones(len(x), bool)
    while np.any(left):
        i = np.flatnonzero(left)
        v[pos[i]] = (t[i] % 10 + 48).astype(np.uint8)
        t[i] //= 10
        pos[i] -= 1
        left[i] = pos[i] >= off[:-1][i]
    return v, off


def ragged_hash(v: np.ndarray, off: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each ragged string's bytes (vectorised; equal strings, equal hashes):
    what a shuffle by string uses to send equal strings to one reducer."""
    n = len(off) - 1
    off = np.asarray(off, np.int64) - off[0]
    sizes = np.diff(off)
    out = np.zeros(n, np.uint64)
    nonempty = np.flatnonzero(sizes)
    if len(nonempty) == 0:
        return out
    with np.errstate(over="ignore"):
        width = int(sizes.max())
        weights = np.cumprod(np.full(width, 0x100000001B3, np.uint64))  # powers, wrapping
        pos = np.arange(int(off[-1]), dtype=np.int64) - np.repeat(off[:-1], sizes)
        terms = (np.asarray(v[: off[-1]], np.uint64) + np.uint64(1)) * weights[pos]
        h = np.add.reduceat(terms, off[:-1][nonempty]) + sizes[nonempty].astype(np.uint64)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    out[nonempty] = h
    return out


def write_buckets(
    prefix: str,
    bucket: np.ndarray,
    S: int,
    cols: dict[str, np.ndarray],
    strs: dict[str, list[str]] | None = None,
    ragged: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> None:
    """One map task's output of a shuffle: its items sorted by ``bucket`` (stable), one file per
    column (``prefix.COL.npy``; strings and CSR columns as values + offsets) and
    ``prefix.bounds.npy`` (``int64[S+1]``, where each bucket starts). A reducer reads only its
    slice of each file (memory-mapped), so no piece is held in any worker's memory."""
    bucket = np.asarray(bucket, np.int64)
    # stable, so equal keys keep their order; 16-bit keys are sorted by radix (linear time)
    order = np.argsort(bucket.astype(np.int16) if S < 2**15 else bucket, kind="stable")
    atomic_save(f"{prefix}.bounds.npy", np.searchsorted(bucket[order], np.arange(S + 1)))
    for k, a in cols.items():
        atomic_save(f"{prefix}.{k}.npy", np.asarray(a)[order])
    for k, lst in (strs or {}).items():
        buf, off = encode_strs([lst[i] for i in order.tolist()])
        atomic_save(f"{prefix}.{k}.v.npy", buf)
        atomic_save(f"{prefix}.{k}.o.npy", off)
    for k, (v, off) in (ragged or {}).items():
        sizes = np.diff(off)[order]
        noff = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=noff[1:])
        atomic_save(
            f"{prefix}.{k}.v.npy",
            v[np.repeat(off[:-1][order] - noff[:-1], sizes) + np.arange(noff[-1])],
        )
        atomic_save(f"{prefix}.{k}.o.npy", noff)


def read_bucket(
    prefix: str,
    s: int,
    cols: Sequence[str] = (),
    strs: Sequence[str] = (),
    ragged: Sequence[str] = (),
    mapped: bool = False,
) -> dict[str, Any]:
    """Bucket ``s`` of a map task's output written by :func:`write_buckets`; ``mapped``: the
    values of the ``ragged`` columns as views of the file's memory map (read once, by whatever
    copies them next), not copies."""
    b = np.load(f"{prefix}.bounds.npy")
    a, z = int(b[s]), int(b[s + 1])
    out: dict[str, Any] = {
        k: np.array(np.load(f"{prefix}.{k}.npy", mmap_mode="r")[a:z]) for k in cols
    }
    for k in (*strs, *ragged):
        off = np.array(np.load(f"{prefix}.{k}.o.npy", mmap_mode="r")[a : z + 1])
        v = np.load(f"{prefix}.{k}.v.npy", mmap_mode="r")[off[0] : off[-1]]
        if not (mapped and k in ragged):
            v = np.array(v)
        out[k] = decode_strs(v, off) if k in strs else (v, off - off[0])
    return out


def concat(arrs: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrs) if arrs else np.zeros(0, dtype)


_ROW_ARRAYS = ("lines", "tbytes", "lgroup", "ids", "paths")


@dataclass
class Part:
    """A partition's handle: its folder in the scratch space and a few numbers; only this
    travels between client and workers. The arrays stay in the folder, and each task loads
    only those it needs. Per row (``n``): ``lines`` (the record's line, row or file number in
    its file), ``tbytes`` (UTF-8 bytes of the text), ``lgroup`` (the row's distinct text, -1 for
    an empty text), ``ids`` (strings, unless ids are the global row numbers), ``paths``
    (textdir). Per distinct text of the partition (G): ``glen`` (normalised length), ``ghi``,
    ``glo`` (fingerprint halves), ``keys`` (``uint64[bands, G]``), ``shoff`` (``int64[G+1]``)
    into ``sh.u32`` (the 32-bit shingle fingerprints, unsorted). After the exact groups:
    ``gfirst`` (global first row of the text, -1 if no row uses it), ``gtotal`` (copies in
    the whole corpus), ``gfirst_id``, ``is_first`` (this partition holds the global first
    row). After clustering: the ``fa_*`` row arrays and ``keep``."""

    dir: str
    n: int
    G: int
    has_ids: bool
    has_paths: bool
    fmt: str
    name: str
    info: dict  # the read's error, skips, skip counts and records
    rowv: str = ""  # ".d" once rows with ids repeated from earlier partitions are dropped
    offset: int = 0  # global row of the partition's first row
    ginfo: dict = field(default_factory=dict)  # set by the exact step

    def file(self, name: str, ext: str = ".npy") -> str:
        v = self.rowv if name in _ROW_ARRAYS else ""
        return os.path.join(self.dir, f"{name}{v}{ext}")

    def load(self, name: str, mmap: bool = False) -> np.ndarray:
        return np.load(self.file(name), mmap_mode="r" if mmap else None)

    def save(self, name: str, arr: np.ndarray) -> None:
        atomic_save(self.file(name), arr)

    def save_strs(self, name: str, strs: Sequence[str]) -> None:
        buf, off = encode_strs(strs)
        atomic_save(self.file(name, ".v.npy"), buf)
        atomic_save(self.file(name, ".o.npy"), off)

    def strs(self, name: str) -> list[str]:
        return decode_strs(np.load(self.file(name, ".v.npy")), np.load(self.file(name, ".o.npy")))

    @property
    def sh_path(self) -> str:
        """The file of the shingle fingerprints (``uint32``, unsorted, by ``shoff``)."""
        return os.path.join(self.dir, "sh.u32")

    def ragged(self, name: str) -> Ragged:
        """Strings saved by :meth:`save_strs`, as ragged bytes."""
        return np.load(self.file(name, ".v.npy")), np.load(self.file(name, ".o.npy"))

    def save_ragged(self, name: str, r: Ragged) -> None:
        atomic_save(self.file(name, ".v.npy"), r[0])
        atomic_save(self.file(name, ".o.npy"), r[1])

    def id_bytes(self, rows: np.ndarray | None = None) -> Ragged:
        """The ids of local rows (all with ``None``) as ragged bytes: those read, or the global
        row numbers."""
        if not self.has_ids:
            r = np.arange(self.n, dtype=np.int64) if rows is None else np.asarray(rows, np.int64)
            return number_strs(r + self.offset)
        v, off = self.ragged("ids")
        return (v, off) if rows is None else take_ragged(v, off, rows)

    def row_ids(self, rows: Sequence[int] | np.ndarray, ids: list[str] | None = None) -> list[str]:
        """Ids of local rows (``ids``: all of them, decoded; else only those asked for are)."""
        if not self.has_ids:
            return list(map(str, (np.asarray(rows, np.int64) + self.offset).tolist()))
        if ids is None:
            buf = np.load(self.file("ids", ".v.npy"), mmap_mode="r")
            off = np.load(self.file("ids", ".o.npy"), mmap_mode="r")
            rows = np.asarray(rows, np.int64)
            a, z = off[rows], off[rows + 1]
            b = bytes(np.asarray(buf))
            return [
                b[x:y].decode("utf-8", "surrogatepass")
                for x, y in zip(a.tolist(), z.tolist(), strict=True)
            ]
        return [ids[int(r)] for r in rows]


def owner(offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.searchsorted(offsets, rows, side="right") - 1


def unique_pairs(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs ``(left[i], right[i])``, sorted by left, then right."""
    if len(left) == 0:
        return left.astype(np.int64), right.astype(np.int64)
    if min(int(left.min()), int(right.min())) >= 0 and max(int(left.max()), int(right.max())) < (
        1 << 32
    ):  # both in one 64-bit key: one sort of integers
        key = np.sort((left.astype(np.uint64) << np.uint64(32)) | right.astype(np.uint64))
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]
        return (key >> np.uint64(32)).astype(np.int64), (key & np.uint64(0xFFFFFFFF)).astype(
            np.int64
        )
    order = np.lexsort((right, left))
    left, right = left[order], right[order]
    keep = np.concatenate(([True], (left[1:] != left[:-1]) | (right[1:] != right[:-1])))
    return left[keep], right[keep]


def write_parquet(columns: dict, path: str) -> None:
    import pyarrow.parquet as pq

    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        pq.write_table(arrow_table(columns), tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, outermost first."""
    out = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out[::-1]


def remove_tree(path: Path) -> None:
    """Remove the scratch folder; retried briefly, as a task cancelled on error may still be
    writing a file into it."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.1)
