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
) -> dict[str, Any]:
    """Bucket ``s`` of a map task's output written by :func:`write_buckets`."""
    b = np.load(f"{prefix}.bounds.npy")
    a, z = int(b[s]), int(b[s + 1])
    out: dict[str, Any] = {
        k: np.array(np.load(f"{prefix}.{k}.npy", mmap_mode="r")[a:z]) for k in cols
    }
    for k in (*strs, *ragged):
        off = np.array(np.load(f"{prefix}.{k}.o.npy", mmap_mode="r")[a : z + 1])
        v = np.array(np.load(f"{prefix}.{k}.v.npy", mmap_mode="r")[off[0] : off[-1]])
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
    if len(left) == 0:
        return left.astype(np.int64), right.astype(np.int64)
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
