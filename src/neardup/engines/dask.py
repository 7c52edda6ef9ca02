"""The dedup job on a Dask cluster: the local engine's stages, run per partition on workers.

Results are those of :func:`neardup.job.dedup_files` on the same inputs and parameters: the same
clusters (labels included), representatives, similarities and pairs. Only the orchestration
differs; every stage calls the local engine's pure functions (``normalize``, ``fingerprints``,
``FingerprintTable``, ``shingle_sketch``, ``band_keys``, ``candidates_from_keys``,
``sort_unique_segments``/``overlap_pairs``, ``connected_components``/``strict_clusters``,
``preference_rank``). The stages, with P partitions (and P shuffle buckets):

0. **Scratch folder.** Per-partition state lives on disk, not in worker memory: a folder
   ``.neardup-work-XXXXXXXX`` under ``work_dir`` (default ``outdir``) holds one sub-folder per
   partition (its arrays as ``.npy`` files, written once and never changed) and one per shuffle.
   Tasks return only small handles (:class:`_Part`, counts); each task loads the arrays it needs
   (the shingle fingerprints memory-mapped) and drops them when it ends. A shuffle's map task
   writes its items sorted by bucket, one file per column plus the bucket bounds; each reducer
   reads only its slice of each map file. Files are written under a temporary name and renamed,
   so a task that Dask runs again after losing a worker rewrites the same bytes. The folder is
   removed at the end, also on error (pending tasks are cancelled first).

1. **Read** each partition on a worker with the same reader. A partition is one input (a file;
   a directory of text files), or a part of a large one: an uncompressed JSONL file of more
   than ~1.5 x ``partition_docs`` records (estimated from its first 1 MB) is cut into
   line-aligned byte ranges of ~``partition_docs`` records; a Parquet file of more than 1.5 x
   ``partition_docs`` rows (counted in its footer) into contiguous runs of row groups of about
   ``partition_docs`` rows each (a row group is never cut, so a file of one huge row group stays
   one partition; a short last run joins the one before), read with
   ``ParquetFile.iter_batches(row_groups=...)``. Compressed files (``.gz``/``.zst``) and CSV/TSV
   are one partition each. A part's rows are numbered across its file (line numbers of a JSONL
   range from the lines before it, counted in parallel; row numbers of a Parquet run from the
   footer), and errors about the whole file (missing columns, ...) come from its first part
   only, so every message and skip count is the local engine's. Normalise, fingerprint and
   shingle+sketch the first copy of each text *within the partition*; write the band keys and
   the 32-bit shingle fingerprints (streamed chunk by chunk) per distinct text to the
   partition's folder. Row numbers need the records of all earlier partitions: each partition
   counts its valid records while it reads, and the client turns the counts into global row
   offsets that the later stages take as arguments (no second read, no guessing). Errors come
   back as values, so the client raises the one the local engine would raise first (global
   record order).
2. **Ids**: repeated ids across partitions are found by shuffling ``(id, partition, row)`` by a
   hash of the id.
3. **Exact groups**: ``(fingerprint, first row, copies)`` of each distinct text of each partition
   is shuffled by fingerprint; the bucket finds the global first row of each text (the local
   engine's group) and sends it back. A text is identified by its global first row everywhere
   after this (its order is the local engine's group order).
4. **LSH**: ``(band, key, row)`` of every global-first text is shuffled by a hash of (band, key)
   — the key masked to the bits the local engine compares — so equal keys meet; a bucket sorts
   each band and emits pairs within runs with :func:`~neardup.lsh.candidates_from_keys` (the same
   bucket cap: a run over the cap is a star around its first row). Pairs go to the partition
   that holds their left text.
5. **Verify next to the data**: each partition asks the owners of the right texts for their
   shingle sets (only those), computes exact Jaccard and keeps pairs over the threshold.
6. **Cluster**: the verified pairs (and, per text in them, its length and fingerprint for
   ``keep``) are gathered on the client for union-find or strict clustering — the one step that
   is not distributed; it scales with the verified pairs, not with the corpus. For connected
   components each member's similarity to its representative is computed like step 5. The
   cluster map (texts in verified pairs -> representative) is broadcast to the partitions.
7. **Write**: each partition labels its rows (labels by first appearance need a prefix sum of
   "new" rows per partition and one more small broadcast) and writes its rows of ``clusters``
   and of ``pairs`` as Parquet parts in the scratch folder; the client appends them to one
   ``clusters`` / ``pairs`` file (parquet, jsonl or csv) in row order, one part at a time (the
   output layout is that of the local engine); each partition re-reads its input (its byte
   range or row groups only) and writes the kept documents to
   ``deduplicated/part-NNNNN.parquet`` (columns ``id``, ``text``), one part per partition.

Growth. With N documents, P partitions and B bands: reading, sketching and verification are
O(N/P) per partition and parallel. Memory per worker is that of one task (about one
partition's arrays, or one shuffle bucket), not of the corpus: at 1M documents in 21
partitions of 50,000, 2 workers peak at ~430 MB each, as at 100k (``benchmarks/dask_scale.py``).
The scratch folder holds ~1.5 GB per million documents of ~2 KB (mostly the 32-bit shingle
fingerprints). The band-key shuffle writes B * U * 20 bytes (U distinct texts), the exact-group
shuffle ~40 bytes per distinct text of each partition; the shingle shuffle moves only the sets
of right texts held elsewhere, O(candidates). Each shuffle is P map and P reduce tasks (P * P
small slices read from P files per reducer). The client holds the verified pairs (with the
length, fingerprint and id of each text in them), the rows that start a group or cluster
(labels), the per-partition counts, and one output part at a time.

Assumptions: inputs, ``outdir`` and ``work_dir`` are on a file system every worker sees (a shared disk, or a
``LocalCluster``). ``verify="estimate"`` is not supported yet (exact verification only).
A text repeated in two partitions is sketched in both (the second sketch is dropped after the
exact-group stage). Textdir ids and row-number ids of other inputs are not cross-checked for
collisions across partitions (the local engine does; it needs a file named like a row number).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._version import __version__
from ..cluster import cluster_representatives, preference_rank
from ..config import DedupConfig
from ..errors import ConfigError, InputError, OutputError, SkipReason
from ..exact import FingerprintTable, fingerprints
from ..io import (
    FilePart,
    OutputOptions,
    ReadOptions,
    SkipReport,
    Staged,
    TableStream,
    format_of_name,
    prepare_outdir,
    record_stream,
    split_compression,
    total_input_bytes,
    utf8_len,
    write_json_atomic,
)
from ..io.writers import arrow_table
from ..job import _NoProgress
from ..lsh import CandidateStats, band_keys, candidates_from_keys, lsh_params, s_curve
from ..result import METHOD_NAMES
from ..sketch import shingle_sketch
from ..text.normalize import normalize
from ..validate import check_int
from ..verify import overlap_pairs, sort_unique_segments

_CHUNK = 10_000
_FINGERPRINT, _JACCARD = METHOD_NAMES.index("fingerprint"), METHOD_NAMES.index("jaccard")




# ---------------------------------------------------------------------------------------------
# The scratch folder: each partition's arrays and each shuffle's pieces, as .npy files


def _atomic_save(path: str, arr: np.ndarray) -> None:
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


def _encode_strs(strs: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Strings as UTF-8 bytes ``uint8[total]`` and offsets ``int64[n+1]``."""
    enc = [s.encode("utf-8", "surrogatepass") for s in strs]
    off = np.zeros(len(enc) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, enc), np.int64, len(enc)), out=off[1:])
    return np.frombuffer(b"".join(enc), np.uint8), off


def _decode_strs(buf: np.ndarray, off: np.ndarray) -> list[str]:
    b = bytes(buf)
    o = (off - off[0]).tolist()
    return [b[o[i]:o[i + 1]].decode("utf-8", "surrogatepass") for i in range(len(o) - 1)]


def _write_buckets(prefix: str, bucket: np.ndarray, S: int, cols: dict[str, np.ndarray],
                   strs: dict[str, list[str]] | None = None,
                   ragged: dict[str, tuple[np.ndarray, np.ndarray]] | None = None) -> None:
    """One map task's output of a shuffle: its items sorted by ``bucket`` (stable), one file per
    column (``prefix.COL.npy``; strings and CSR columns as values + offsets) and
    ``prefix.bounds.npy`` (``int64[S+1]``, where each bucket starts). A reducer reads only its
    slice of each file (memory-mapped), so no piece is held in any worker's memory."""
    bucket = np.asarray(bucket, np.int64)
    order = np.argsort(bucket, kind="stable")
    _atomic_save(f"{prefix}.bounds.npy", np.searchsorted(bucket[order], np.arange(S + 1)))
    for k, a in cols.items():
        _atomic_save(f"{prefix}.{k}.npy", np.asarray(a)[order])
    for k, lst in (strs or {}).items():
        buf, off = _encode_strs([lst[i] for i in order.tolist()])
        _atomic_save(f"{prefix}.{k}.v.npy", buf)
        _atomic_save(f"{prefix}.{k}.o.npy", off)
    for k, (v, off) in (ragged or {}).items():
        sizes = np.diff(off)[order]
        noff = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=noff[1:])
        _atomic_save(f"{prefix}.{k}.v.npy",
                     v[np.repeat(off[:-1][order] - noff[:-1], sizes) + np.arange(noff[-1])])
        _atomic_save(f"{prefix}.{k}.o.npy", noff)


def _read_bucket(prefix: str, s: int, cols: Sequence[str] = (), strs: Sequence[str] = (),
                 ragged: Sequence[str] = ()) -> dict[str, Any]:
    """Bucket ``s`` of a map task's output written by :func:`_write_buckets`."""
    b = np.load(f"{prefix}.bounds.npy")
    a, z = int(b[s]), int(b[s + 1])
    out: dict[str, Any] = {k: np.array(np.load(f"{prefix}.{k}.npy", mmap_mode="r")[a:z])
                           for k in cols}
    for k in (*strs, *ragged):
        off = np.array(np.load(f"{prefix}.{k}.o.npy", mmap_mode="r")[a:z + 1])
        v = np.array(np.load(f"{prefix}.{k}.v.npy", mmap_mode="r")[off[0]:off[-1]])
        out[k] = _decode_strs(v, off) if k in strs else (v, off - off[0])
    return out


def _concat(arrs: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrs) if arrs else np.zeros(0, dtype)


# ---------------------------------------------------------------------------------------------
# Partitions and what a worker writes of one


@dataclass(frozen=True)
class _Spec:
    """One partition: a whole input (``start == 0, end is None``), a byte range of a JSONL file
    (``split``) or a run of row groups ``[start, end)`` of a Parquet file (``row_groups``)."""

    path: str
    fmt: str | None
    start: int = 0
    end: int | None = None
    split: bool = False  # a range of a split JSONL file (the file's first range included)
    row_groups: bool = False  # a run of row groups of a split Parquet file (the first too)


_ROW_ARRAYS = ("lines", "tbytes", "lgroup", "ids", "paths")


@dataclass
class _Part:
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
    info: dict          # the read's error, skips, skip counts and records
    rowv: str = ""      # ".d" once rows with ids repeated from earlier partitions are dropped
    offset: int = 0     # global row of the partition's first row
    ginfo: dict | None = None

    def file(self, name: str, ext: str = ".npy") -> str:
        v = self.rowv if name in _ROW_ARRAYS else ""
        return os.path.join(self.dir, f"{name}{v}{ext}")

    def load(self, name: str, mmap: bool = False) -> np.ndarray:
        return np.load(self.file(name), mmap_mode="r" if mmap else None)

    def save(self, name: str, arr: np.ndarray) -> None:
        _atomic_save(self.file(name), arr)

    def save_strs(self, name: str, strs: Sequence[str]) -> None:
        buf, off = _encode_strs(strs)
        _atomic_save(self.file(name, ".v.npy"), buf)
        _atomic_save(self.file(name, ".o.npy"), off)

    def strs(self, name: str) -> list[str]:
        return _decode_strs(np.load(self.file(name, ".v.npy")), np.load(self.file(name, ".o.npy")))

    def sh(self) -> np.ndarray:
        """The shingle fingerprints, memory-mapped (a task touches only the sets it reads)."""
        path = os.path.join(self.dir, "sh.u32")
        if os.path.getsize(path) == 0:
            return np.zeros(0, np.uint32)
        return np.memmap(path, np.uint32, mode="r")

    def row_ids(self, rows: Sequence[int] | np.ndarray, ids: list[str] | None = None
                ) -> list[str]:
        """Ids of local rows."""
        if not self.has_ids:
            return [str(self.offset + int(r)) for r in rows]
        ids = self.strs("ids") if ids is None else ids
        return [ids[int(r)] for r in rows]


class _PosReport(SkipReport):
    """A skip report that remembers where in the partition each skip happened."""

    def __init__(self) -> None:
        super().__init__()
        self.stream: Any = None
        self.pos: list[tuple[int, int, str]] = []

    def add(self, err: InputError) -> None:
        super().add(err)
        if len(self.pos) < 20:
            self.pos.append((self.stream.count, len(self.pos), str(err)))


def _open_stream(spec: _Spec, read_opts: ReadOptions, report: SkipReport, first_line: int):
    part = (FilePart(spec.start, spec.end, first_line, row_groups=spec.row_groups)
            if spec.split or spec.row_groups else None)
    return record_stream([spec.path], replace(read_opts, chunk_size=_CHUNK), report, part=part)


def _set_threads(threads: int | None) -> None:
    if threads:
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))


def _read_partition(spec: _Spec, read_opts: ReadOptions, cfg: DedupConfig, bands: int, rows: int,
                    auto_ids: bool, threads: int | None, line_counts: list[int],
                    pdir: str) -> _Part:
    """Read one partition, run normalise, fingerprint and shingle+sketch on it, and write its
    arrays to ``pdir`` (the shingle fingerprints chunk by chunk, as they are made)."""
    _set_threads(threads)
    report = _PosReport()
    stream = _open_stream(spec, read_opts, report, sum(line_counts))
    report.stream = stream
    fail = read_opts.fail
    table = FingerprintTable()
    ids: list[str] = []
    lines: list[int] = []
    tbytes: list[int] = []
    paths: list[str] | None = [] if stream.sources[0].fmt == "textdir" else None
    lgroup, glen, ghi, glo, keys, sizes = [], [], [], [], [], []
    texts: list[str] = []
    error = None
    sh_path = os.path.join(pdir, "sh.u32")
    sh_tmp = f"{sh_path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    shf = open(sh_tmp, "wb")  # noqa: SIM115 (closed below, also on error)

    def flush() -> None:
        batch = normalize(texts, cfg.normalize)
        hi, lo = fingerprints(batch.data, batch.offsets)
        empty = batch.offsets[1:] == batch.offsets[:-1]
        group, first = table.add(hi, lo, skip=empty)
        docs = np.flatnonzero(first).astype(np.int64)
        lgroup.append(group)
        glen.append(batch.lengths[docs])
        ghi.append(hi[docs])
        glo.append(lo[docs])
        sigs, h32, off = shingle_sketch(batch, cfg.shingle, cfg.sketch, docs)
        keys.append(band_keys(sigs, bands, rows))
        np.ascontiguousarray(h32, np.uint32).tofile(shf)
        sizes.append(np.diff(off))
        texts.clear()

    try:
        try:
            for rec in stream:
                ids.append(rec.id)
                lines.append(rec.line)
                tbytes.append(utf8_len(rec.text))
                if paths is not None:
                    paths.append(str(rec.raw))
                texts.append(rec.text)
                if len(texts) >= _CHUNK:
                    flush()
        except InputError as e:
            if not fail:
                raise
            error = (stream.count, e)
        if texts or not lgroup:
            flush()
        shf.close()
        os.replace(sh_tmp, sh_path)
    finally:
        if not shf.closed:
            shf.close()
        with contextlib.suppress(OSError):
            os.unlink(sh_tmp)
    n = len(ids)
    sizes_all = np.concatenate(sizes)
    shoff = np.zeros(len(sizes_all) + 1, np.int64)
    np.cumsum(sizes_all, out=shoff[1:])
    part = _Part(dir=pdir, n=n, G=len(sizes_all), has_ids=not auto_ids,
                 has_paths=paths is not None, fmt=stream.sources[0].fmt,
                 name=stream.sources[0].name,
                 info={"n": n, "error": error, "skips": report.pos,
                       "skip_counts": dict(report.counts),
                       "records": n + report.total + (error is not None)})
    part.save("lines", np.asarray(lines, np.int64))
    part.save("tbytes", np.asarray(tbytes, np.int64))
    part.save("lgroup", np.concatenate(lgroup).astype(np.int64))
    part.save("glen", np.concatenate(glen).astype(np.int64))
    part.save("ghi", np.concatenate(ghi))
    part.save("glo", np.concatenate(glo))
    part.save("keys", np.concatenate(keys, axis=1))
    part.save("shoff", shoff)
    if not auto_ids:
        part.save_strs("ids", ids)
    if paths is not None:
        part.save_strs("paths", paths)
    return part


def _dup_messages(client, parts, dups, id_field, sub) -> list[InputError]:
    """The reader's error for each repeated id ``(p, row, first p, first row, id)``."""
    need: dict[int, set[int]] = {}
    for p, i, fp, fi, _x in dups:
        need.setdefault(p, set()).add(i)
        need.setdefault(fp, set()).add(fi)
    locs = {}
    for p, idx in need.items():
        idx_l = sorted(idx)
        res = client.gather(sub(_locate, parts[p], idx_l, name="locate", i=p))
        locs.update({(p, i): r for i, r in zip(idx_l, res)})
    out = []
    for p, i, fp, fi, x in dups:
        _, path, line = locs[(p, i)]
        out.append(InputError(f"duplicate id {x!r} (first seen at {locs[(fp, fi)][0]})",
                              path=path, line=line, field=id_field,
                              reason=SkipReason.DUPLICATE_ID))
    return out


def _count_lines(path: str, start: int, end: int) -> int:
    """Newlines in bytes [start, end) of a file."""
    count = 0
    with open(path, "rb") as f:
        f.seek(start)
        left = end - start
        while left > 0:
            block = f.read(min(left, 1 << 24))
            if not block:
                break
            count += block.count(b"\n")
            left -= len(block)
    return count


def _locate(d: _Part, idx: list[int]) -> list[tuple[str, str, int | None]]:
    """For rows of a partition (before drops): where the reader says a record is, and the path
    and line an error about it names."""
    lines = d.load("lines")
    paths = d.strs("paths") if d.fmt == "textdir" else []
    out = []
    for i in idx:
        line = int(lines[i])
        if d.fmt == "textdir":
            p = paths[i]
            out.append((p, p, None))
        elif d.fmt == "parquet":
            out.append((f"{d.name}: row {line}", d.name, line))
        else:
            out.append((f"{d.name}:{line}", d.name, line))
    return out


def _drop(d: _Part, idx: np.ndarray) -> _Part:
    """The partition without the rows ``idx`` (ids repeated from earlier partitions), written
    as new files (``NAME.d.npy``): files are never changed once written."""
    keep = np.ones(d.n, bool)
    keep[idx] = False
    k = np.flatnonzero(keep)
    out = replace(d, n=len(k), rowv=".d")
    for name in ("lines", "tbytes", "lgroup"):
        out.save(name, d.load(name)[k])
    for name, has in (("ids", d.has_ids), ("paths", d.has_paths)):
        if has:
            xs = d.strs(name)
            out.save_strs(name, [xs[i] for i in k.tolist()])
    return out


def _hash_str(s: str) -> int:
    from xxhash import xxh3_64_intdigest

    return xxh3_64_intdigest(s.encode("utf-8", "surrogatepass"))


def _id_map(d: _Part, S: int, prefix: str) -> int:
    ids = d.strs("ids") if d.has_ids else []
    h = np.fromiter((_hash_str(x) for x in ids), np.uint64, len(ids)) % np.uint64(S)
    _write_buckets(prefix, h.astype(np.int64), S, {"idx": np.arange(len(ids), dtype=np.int64)},
                   {"ids": ids})
    return len(ids)


def _id_reduce(prefixes: list[str], s: int, *_deps) -> list[tuple[int, int, int, int, str]]:
    """Ids seen in an earlier partition: ``(p, row, first p, first row, id)``."""
    first: dict[str, tuple[int, int]] = {}
    dups = []
    for p, pre in enumerate(prefixes):
        b = _read_bucket(pre, s, ("idx",), ("ids",))
        for i, x in zip(b["idx"].tolist(), b["ids"]):
            prev = first.setdefault(x, (p, i))
            if prev[0] != p:
                dups.append((p, i, prev[0], prev[1], x))
    return dups


# ---------------------------------------------------------------------------------------------
# Exact groups


def _fp_entries(lgroup: np.ndarray, G: int):
    valid = lgroup >= 0
    rows = np.flatnonzero(valid)
    g = lgroup[valid]
    used, at = np.unique(g, return_index=True)
    cnt = np.bincount(g, minlength=G)[used]
    first = rows[at]
    return used, first, cnt


def _fp_map(d: _Part, S: int, prefix: str) -> int:
    used, first, cnt = _fp_entries(d.load("lgroup"), d.G)
    ghi, glo = d.load("ghi"), d.load("glo")
    _write_buckets(prefix, (glo[used] % np.uint64(S)).astype(np.int64), S,
                   {"hi": ghi[used], "lo": glo[used], "row": d.offset + first, "cnt": cnt},
                   {"ids": d.row_ids(first)})
    return len(used)


def _fp_reduce(prefixes: list[str], s: int, out: str, *_deps) -> int:
    """Global first row, copies and first id of each text in bucket ``s``, written for the
    partitions its entries came from (in their order), and the bucket's groups (first row,
    copies) for the cluster counts."""
    P = len(prefixes)
    parts = [_read_bucket(pre, s, ("hi", "lo", "row", "cnt"), ("ids",)) for pre in prefixes]
    hi = _concat([p["hi"] for p in parts], np.uint64)
    lo = _concat([p["lo"] for p in parts], np.uint64)
    row = _concat([p["row"] for p in parts], np.int64)
    cnt = _concat([p["cnt"] for p in parts], np.int64)
    ids = [x for p in parts for x in p["ids"]]
    src_len = [len(p["hi"]) for p in parts]
    m = len(hi)
    first_row = np.empty(m, np.int64)
    total = np.empty(m, np.int64)
    first_id: list[str] = [""] * m
    order = np.lexsort((row, lo, hi))
    if m:
        h, l_ = hi[order], lo[order]
        start = np.flatnonzero(np.concatenate(([True], (h[1:] != h[:-1]) | (l_[1:] != l_[:-1]))))
        run = np.cumsum(np.isin(np.arange(m), start)) - 1
        head = order[start]
        tot = np.add.reduceat(cnt[order], start)
        first_row[order] = row[head][run]
        total[order] = tot[run]
        for j, i in enumerate(order.tolist()):
            first_id[i] = ids[head[run[j]]]
        grows, gtot = row[head], tot
    else:
        grows, gtot = np.zeros(0, np.int64), np.zeros(0, np.int64)
    _write_buckets(f"{out}/r{s}", np.repeat(np.arange(P), src_len), P,
                   {"first": first_row, "total": total}, {"id": first_id})
    _atomic_save(f"{out}/g{s}.rows.npy", grows.astype(np.int64))
    _atomic_save(f"{out}/g{s}.tot.npy", gtot.astype(np.int64))
    return m


def _fp_apply(d: _Part, S: int, red: str, p: int, *_deps) -> _Part:
    """Tie the partition's distinct texts to the global ones (the local engine's groups, named
    by their first global row)."""
    lgroup = d.load("lgroup")
    used, first, cnt = _fp_entries(lgroup, d.G)
    bucket = d.load("glo")[used] % np.uint64(S)
    G = d.G
    gfirst = np.full(G, -1, np.int64)
    gtotal = np.zeros(G, np.int64)
    gid: list[str] = [""] * G
    for s in range(S):
        m = used[bucket == s]
        b = _read_bucket(f"{red}/r{s}", p, ("first", "total"), ("id",))
        gfirst[m] = b["first"]
        gtotal[m] = b["total"]
        for g, x in zip(m.tolist(), b["id"]):
            gid[g] = x
    is_first = np.zeros(G, bool)
    is_first[used] = gfirst[used] == d.offset + first
    d.save("gfirst", gfirst)
    d.save("gtotal", gtotal)
    d.save("is_first", is_first)
    d.save_strs("gfirst_id", gid)
    f = np.flatnonzero(is_first)
    shoff = d.load("shoff")
    ginfo = {"distinct": len(f), "empty": int(np.count_nonzero(lgroup < 0)),
             "text_bytes": int(d.load("tbytes").sum()),
             "shingles": int((shoff[f + 1] - shoff[f]).sum())}
    return replace(d, ginfo=ginfo)


# ---------------------------------------------------------------------------------------------
# LSH: band keys shuffled by key


def _owner(offsets: np.ndarray, rows: np.ndarray) -> np.ndarray:
    return np.searchsorted(offsets, rows, side="right") - 1


def _band_map(d: _Part, S: int, idbits: int, prefix: str) -> int:
    f = np.flatnonzero(d.load("is_first"))
    rows = d.load("gfirst")[f]
    keys = d.load("keys", mmap=True)
    mask = ~np.uint64((1 << idbits) - 1)
    band, key, row, bucket = [], [], [], []
    for b in range(keys.shape[0]):
        k = np.asarray(keys[b])[f] & mask
        bucket.append(((k >> np.uint64(33)) + np.uint64(b) * np.uint64(2654435761))
                      % np.uint64(S))
        band.append(np.full(len(f), b, np.int32))
        key.append(k)
        row.append(rows)
    _write_buckets(prefix, _concat(bucket, np.uint64).astype(np.int64), S,
                   {"band": _concat(band, np.int32), "key": _concat(key, np.uint64),
                    "row": _concat(row, np.int64)})
    return len(f)


def _band_reduce(cap: int, offsets: np.ndarray, prefixes: list[str], s: int, out: str,
                 *_deps) -> CandidateStats:
    """Candidate pairs of the band keys of bucket ``s``, written by owner of their left row."""
    P = len(offsets) - 1
    stats = CandidateStats(bucket_cap=cap)
    parts = [_read_bucket(pre, s, ("band", "key", "row")) for pre in prefixes]
    band = _concat([x["band"] for x in parts], np.int32)
    key = _concat([x["key"] for x in parts], np.uint64)
    row = _concat([x["row"] for x in parts], np.int64)
    del parts
    order = np.lexsort((row, band))  # the star centre of a capped run: its first row
    band, key, row = band[order], key[order], row[order]
    bounds = np.flatnonzero(np.concatenate(([True], band[1:] != band[:-1], [True])))
    ls, rs = [], []
    for a, z in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if z - a < 2:
            continue
        r = row[a:z]
        left, right, st = candidates_from_keys([key[a:z].copy()], cap, overwrite=True)
        stats.raw_pairs += st.raw_pairs
        stats.capped_buckets += st.capped_buckets
        stats.capped_bucket_docs += st.capped_bucket_docs
        stats.largest_bucket = max(stats.largest_bucket, st.largest_bucket)
        ls.append(r[left])
        rs.append(r[right])
    left, right = _unique_pairs(_concat(ls, np.int64), _concat(rs, np.int64))
    _write_buckets(f"{out}/r{s}", _owner(offsets, left), P, {"left": left, "right": right})
    return stats


def _unique_pairs(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if len(left) == 0:
        return left.astype(np.int64), right.astype(np.int64)
    order = np.lexsort((right, left))
    left, right = left[order], right[order]
    keep = np.concatenate(([True], (left[1:] != left[:-1]) | (right[1:] != right[:-1])))
    return left[keep], right[keep]


# ---------------------------------------------------------------------------------------------
# Similarity of pairs, next to the data


class _Texts:
    """What the similarity tasks read of a partition, loaded once per task: the shingle sets
    (memory-mapped) and the length, fingerprint, id and copies of local rows."""

    def __init__(self, d: _Part):
        self.d = d
        self.lgroup = d.load("lgroup")
        self.shoff = d.load("shoff")
        self.sh = d.sh()
        self.ids = d.strs("ids") if d.has_ids else None

    def sets(self, local_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Sorted shingle sets of local rows as a compact CSR ``(hashes, offsets)``."""
        g = self.lgroup[local_rows]
        starts, ends = self.shoff[g], self.shoff[g + 1]
        sizes = ends - starts
        off = np.zeros(len(g) + 1, np.int64)
        np.cumsum(sizes, out=off[1:])
        h = np.asarray(self.sh[np.repeat(starts - off[:-1], sizes) + np.arange(off[-1])],
                       np.uint32)  # a copy: sorted below
        end = sort_unique_segments(h, off, np.arange(len(g), dtype=np.int64))
        usz = end - off[:-1]
        uoff = np.zeros(len(g) + 1, np.int64)
        np.cumsum(usz, out=uoff[1:])
        return h[np.repeat(off[:-1] - uoff[:-1], usz) + np.arange(uoff[-1])], uoff

    def meta(self, local_rows: np.ndarray) -> tuple:
        g = self.lgroup[local_rows]
        d = self.d
        return (d.load("glen")[g], d.load("ghi")[g], d.row_ids(local_rows, self.ids),
                d.load("gtotal")[g])


def _sim_prepare(d: _Part, offsets: np.ndarray, p: int, cands: list[str] | None,
                 direct: tuple | None, out: str, *_deps) -> int:
    """This partition's pairs (from the candidate shuffle or given), and which right rows it
    needs from each other partition."""
    P = len(offsets) - 1
    ls, rs = [], []
    for pre in cands or []:
        b = _read_bucket(pre, p, ("left", "right"))
        ls.append(b["left"])
        rs.append(b["right"])
    if direct is not None:
        ls.append(direct[0])
        rs.append(direct[1])
    left, right = _unique_pairs(_concat(ls, np.int64), _concat(rs, np.int64))
    own = _owner(offsets, right)
    here = p if d.n else -1
    req = np.unique(right[own != here])
    _write_buckets(f"{out}/req{p}", _owner(offsets, req), P, {"row": req})
    _atomic_save(f"{out}/left{p}.npy", left)
    _atomic_save(f"{out}/right{p}.npy", right)
    return len(left)


def _sim_export(d: _Part, q: int, out: str, P: int, *_deps) -> int:
    """The shingle sets (and meta) of this partition's texts that other partitions asked for."""
    rows = [_read_bucket(f"{out}/req{p}", q, ("row",))["row"] for p in range(P)]
    bucket = np.repeat(np.arange(P), [len(r) for r in rows])
    rows_a = _concat(rows, np.int64)
    t = _Texts(d)
    local = rows_a - d.offset
    h, off = t.sets(local)
    glen, ghi, ids, tot = t.meta(local)
    _write_buckets(f"{out}/exp{q}", bucket, P,
                   {"rows": rows_a, "glen": glen, "ghi": ghi, "tot": tot}, {"ids": ids},
                   {"h": (h, off)})
    return len(rows_a)


def _sim_run(d: _Part, thr: float | None, p: int, out: str, P: int, *_deps) -> dict:
    """Exact Jaccard of this partition's pairs (over ``thr`` if given), with the length,
    fingerprint, id and copies of every text in a kept pair."""
    left = np.load(f"{out}/left{p}.npy")
    right = np.load(f"{out}/right{p}.npy")
    lo, hi = d.offset, d.offset + d.n
    need = np.unique(np.concatenate([left, right]))
    mine = need[(need >= lo) & (need < hi)]
    t = _Texts(d)
    h0, off0 = t.sets(mine - lo)
    rows, hs, offs, metas = [mine], [h0], [off0], [t.meta(mine - lo)]
    del t
    for q in range(P):
        if q == p:
            continue
        b = _read_bucket(f"{out}/exp{q}", p, ("rows", "glen", "ghi", "tot"), ("ids",), ("h",))
        rows.append(b["rows"])
        hs.append(b["h"][0])
        offs.append(b["h"][1])
        metas.append((b["glen"], b["ghi"], b["ids"], b["tot"]))
    allrows = np.concatenate(rows)
    sizes = np.concatenate([np.diff(o) for o in offs])
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    h = _concat(hs, np.uint32)
    order = np.argsort(allrows)
    srows = allrows[order]
    li = order[np.searchsorted(srows, left)]
    ri = order[np.searchsorted(srows, right)]
    sim = overlap_pairs(h, off[:-1], off[1:], li, ri)
    candidates = len(left)
    if thr is not None:
        ok = sim >= np.float32(thr)
        left, right, sim = left[ok], right[ok], sim[ok]
    used = np.unique(np.concatenate([left, right]))
    pos = order[np.searchsorted(srows, used)]
    glen = np.concatenate([m[0] for m in metas])[pos]
    ghi = np.concatenate([m[1] for m in metas])[pos]
    ids_all = [x for m in metas for x in m[2]]
    tot = np.concatenate([m[3] for m in metas])[pos]
    return {"pairs": (left, right, sim), "candidates": candidates,
            "nodes": (used, glen, ghi, [ids_all[i] for i in pos.tolist()], tot)}


# ---------------------------------------------------------------------------------------------
# Labels, tables and the deduplicated corpus


@dataclass
class _ClusterMap:
    """Texts in verified pairs (by global first row, sorted): representative row and id,
    similarity to it, and the first row of their cluster."""

    rows: np.ndarray
    rep: np.ndarray
    rep_id: list[str]
    sim: np.ndarray
    cfirst: np.ndarray

    def find(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pos = np.searchsorted(self.rows, rows)
        pos = np.minimum(pos, max(len(self.rows) - 1, 0))
        found = (self.rows[pos] == rows) if len(self.rows) else np.zeros(len(rows), bool)
        return found, pos


def _final_a(d: _Part, cm: _ClusterMap) -> tuple[int, int]:
    """Each row's representative, cluster's first row and similarity; returns (kept, new)."""
    lgroup = d.load("lgroup")
    gfirst = d.load("gfirst")
    R = d.offset + np.arange(d.n, dtype=np.int64)
    has = lgroup >= 0
    f = R.copy()
    f[has] = gfirst[lgroup[has]]
    rep, cf = f.copy(), f.copy()
    sim = np.ones(d.n, np.float32)
    found, pos = cm.find(f)
    found &= has
    rep[found] = cm.rep[pos[found]]
    cf[found] = cm.cfirst[pos[found]]
    sim[found] = cm.sim[pos[found]]
    new = cf == R
    for name, a in (("rep", rep), ("cf", cf), ("sim", sim), ("new", new), ("found", found),
                    ("pos", pos)):
        d.save(f"fa_{name}", a)
    return int(np.count_nonzero(rep == R)), int(np.count_nonzero(new))


def _final_b(d: _Part, label0: int, *_deps) -> tuple[np.ndarray, np.ndarray]:
    """Labels of the new rows that other rows may point to (first rows of groups with copies
    and of near-duplicate clusters)."""
    new = d.load("fa_new")
    lgroup = d.load("lgroup")
    R = d.offset + np.arange(d.n, dtype=np.int64)
    has = lgroup >= 0
    shared = np.zeros(d.n, bool)
    shared[has] = d.load("gtotal")[lgroup[has]] > 1
    shared |= d.load("fa_found")
    label = label0 + np.cumsum(new) - 1
    m = new & shared
    return R[m], label[m]


def _write_parquet(columns: dict, path: str) -> None:
    import pyarrow.parquet as pq

    tmp = f"{path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    try:
        pq.write_table(arrow_table(columns), tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _final_c(d: _Part, p: int, label0: int, lut: tuple, cm: _ClusterMap, P: int,
             offsets: np.ndarray, fp_prefix: str, table: str, *_deps) -> int:
    """This partition's rows of ``clusters`` (a Parquet part in the scratch folder) and its
    fingerprint pairs by owner of the left row (a shuffle)."""
    n = d.n
    lgroup = d.load("lgroup")
    gfirst = d.load("gfirst")
    gfirst_id = d.strs("gfirst_id")
    R = d.offset + np.arange(n, dtype=np.int64)
    new = d.load("fa_new")
    labels = np.empty(n, np.int64)
    labels[new] = label0 + np.arange(int(np.count_nonzero(new)))
    old = ~new
    lrows, llab = lut
    labels[old] = llab[np.searchsorted(lrows, d.load("fa_cf")[old])]
    ids = d.row_ids(np.arange(n))
    has = lgroup >= 0
    rep_id = list(ids)
    hidx = np.flatnonzero(has)
    for i, g in zip(hidx.tolist(), lgroup[hidx].tolist()):
        rep_id[i] = gfirst_id[g]
    found, pos = d.load("fa_found"), d.load("fa_pos")
    for i, q in zip(np.flatnonzero(found).tolist(), pos[found].tolist()):
        rep_id[i] = cm.rep_id[q]
    _write_parquet({"id": ids, "cluster": labels, "representative": rep_id,
                    "similarity": d.load("fa_sim")}, table)
    # fingerprint pairs: (first row of the text, a later copy)
    copy = has.copy()
    copy[hidx] = gfirst[lgroup[hidx]] != R[hidx]
    ci = np.flatnonzero(copy)
    fl = gfirst[lgroup[ci]]
    _write_buckets(fp_prefix, _owner(offsets, fl), P, {"left": fl, "right": R[ci]},
                   {"ida": [gfirst_id[g] for g in lgroup[ci].tolist()],
                    "idb": [ids[i] for i in ci.tolist()]})
    d.save("keep", d.load("fa_rep") == R)
    return n


def _pairs_table(verified: tuple, fp_prefixes: list[str], p: int, table: str, *_deps) -> int:
    """Partition ``p``'s rows of ``pairs`` (verified and fingerprint pairs whose left row it
    holds), sorted, as a Parquet part in the scratch folder."""
    vl, vr, vs, vida, vidb = verified
    fps = [_read_bucket(pre, p, ("left", "right"), ("ida", "idb")) for pre in fp_prefixes]
    left = np.concatenate([vl] + [x["left"] for x in fps])
    right = np.concatenate([vr] + [x["right"] for x in fps])
    sim = np.concatenate([vs] + [np.ones(len(x["left"]), np.float32) for x in fps])
    method = np.concatenate([np.full(len(vl), _JACCARD, np.uint8)]
                            + [np.full(len(x["left"]), _FINGERPRINT, np.uint8) for x in fps])
    ida = list(vida) + [i for x in fps for i in x["ida"]]
    idb = list(vidb) + [i for x in fps for i in x["idb"]]
    order = np.lexsort((right, left))
    names = np.asarray(METHOD_NAMES, dtype=object)
    _write_parquet({"id_a": [ida[i] for i in order.tolist()],
                    "id_b": [idb[i] for i in order.tolist()],
                    "similarity": sim[order].astype(np.float32),
                    "method": names[method[order]]}, table)
    return len(left)


def _write_part(spec: _Spec, read_opts: ReadOptions, line_counts: list[int], drops: np.ndarray,
                d: _Part, path: str, *_deps) -> int:
    """Re-read the partition and write its kept documents (``id``, ``text``) to ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    opts = replace(read_opts, on_error="skip")  # errors were reported by the first read
    stream = _open_stream(spec, opts, SkipReport(), sum(line_counts))
    keep = d.load("keep")
    dropped = set(drops.tolist())
    rows, texts = [], []
    i = j = 0
    for rec in stream:
        if i in dropped:
            i += 1
            continue
        if j < len(keep) and keep[j]:
            rows.append(j)
            texts.append(rec.text)
        i += 1
        j += 1
    if j != len(keep):
        raise RuntimeError(f"{spec.path}: the input changed while it was deduplicated")
    table = pa.table({"id": pa.array(d.row_ids(rows), pa.string()),
                      "text": pa.array(texts, pa.string())})
    pq.write_table(table, path)
    return len(rows)


def _fp_cluster_stats(red: str, s: int, cm: _ClusterMap
                      ) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Clusters of the exact groups of bucket ``s`` that are not in the cluster map, their
    largest size, and the copies of the mapped ones by representative."""
    rows, tot = np.load(f"{red}/g{s}.rows.npy"), np.load(f"{red}/g{s}.tot.npy")
    found, pos = cm.find(rows)
    free = tot[~found]
    return (int(np.count_nonzero(free >= 2)), int(free.max(initial=0)), cm.rep[pos[found]],
            tot[found])


# ---------------------------------------------------------------------------------------------
# Planning


def _expand(paths: Sequence[Path], input_format: str | None) -> list[Path]:
    """A directory given with a data format (not "textdir") stands for its files of that
    format (sorted by name, hidden ones and others left out): a folder of Parquet/JSONL parts."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir() and input_format not in (None, "textdir"):
            files = sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith(".")
                           and format_of_name(f.name) == input_format)
            out.extend(files)
        else:
            out.append(p)
    return out


def _row_group_runs(path: Path, partition_docs: int) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of the row groups of a Parquet file of more than ~1.5 x
    ``partition_docs`` rows, each of about ``partition_docs`` rows (a row group is never cut;
    a short last run joins the one before); one run for a smaller file, or one the footer of
    which cannot be read (the reader reports it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        meta = pq.ParquetFile(path).metadata
        sizes = [meta.row_group(k).num_rows for k in range(meta.num_row_groups)]
    except (pa.ArrowException, OSError):
        return [(0, 1)]
    if sum(sizes) <= partition_docs * 1.5:
        return [(0, len(sizes))]
    runs: list[tuple[int, int]] = []
    a = acc = 0
    for g, n in enumerate(sizes):
        # end the run before group g if that comes closer to partition_docs than taking it
        if acc and acc + n - partition_docs > partition_docs - acc:
            runs.append((a, g))
            a, acc = g, 0
        acc += n
    if runs and acc < partition_docs / 2:
        a = runs.pop()[0]
    runs.append((a, len(sizes)))
    return runs


def _plan(paths: list[Path], input_format: str | None, partition_docs: int) -> list[_Spec]:
    """One partition per input; uncompressed JSONL files of more than ~1.5 x
    ``partition_docs`` records (estimated from their first 1 MB) are cut into line-aligned byte
    ranges, Parquet files of more than 1.5 x ``partition_docs`` rows into runs of row
    groups."""
    from ..io.readers import detect_format

    specs: list[_Spec] = []
    for p in paths:
        fmt = "textdir" if p.is_dir() else (input_format or detect_format(p))
        _, comp = split_compression(p.name)
        if fmt == "parquet" and comp is None:
            runs = _row_group_runs(p, partition_docs)
            if len(runs) == 1:
                specs.append(_Spec(str(p), input_format))
            else:
                specs.extend(_Spec(str(p), input_format, a, b, row_groups=True) for a, b in runs)
            continue
        if fmt != "jsonl" or comp is not None:
            specs.append(_Spec(str(p), input_format))
            continue
        size = p.stat().st_size
        with open(p, "rb") as f:
            head = f.read(1 << 20)
            per_line = len(head) / max(head.count(b"\n"), 1)
            step = max(int(per_line * partition_docs), 1 << 16)
            if size <= step * 1.5:
                specs.append(_Spec(str(p), input_format))
                continue
            bounds = [0]
            while bounds[-1] + step < size:
                f.seek(bounds[-1] + step)
                f.readline()
                b = f.tell()
                if b >= size:
                    break
                bounds.append(b)
            bounds.append(size)
        for a, b in zip(bounds, bounds[1:]):
            specs.append(_Spec(str(p), input_format, a, b, split=True))
    return specs


# ---------------------------------------------------------------------------------------------
# The job


def dedup_dask(paths: Sequence[str | os.PathLike], outdir: str | os.PathLike, *,
               config: DedupConfig | None = None, text_fields: Sequence[str] = ("text",),
               id_field: str | None = None, input_format: str | None = None,
               encoding: str = "utf-8", on_error: str = "fail", output_format: str = "parquet",
               write_corpus: bool = True, scheduler: str | None = None, n_workers: int = 2,
               partition_docs: int = 50_000, work_dir: str | os.PathLike | None = None,
               partitioned_tables: bool = False, progress: Any = None) -> dict[str, Any]:
    """:func:`neardup.job.dedup_files` on a Dask cluster; returns the summary (with ``engine``,
    ``workers`` and ``partitions``) and writes ``clusters``, ``pairs``, ``summary.json`` and,
    with ``write_corpus``, ``deduplicated/part-NNNNN.parquet`` (``id``, ``text``) in ``outdir``.

    ``scheduler``: the address of a running scheduler (``tcp://host:port``); without it a
    ``LocalCluster`` of ``n_workers`` single-threaded processes is started and closed. Inputs and
    ``outdir`` must be visible to every worker. ``partition_docs``: about how many records of a
    large uncompressed JSONL file (byte ranges) or of a Parquet file of more than 1.5 x that
    many rows (runs of whole row groups) go into one partition (other inputs are one partition
    each; a directory given with ``input_format`` "jsonl" or "parquet" stands for its files of
    that format). Gathering the verified pairs on the client for union-find is the one central
    step.

    Each partition's arrays and the shuffles' pieces are kept as files in a scratch folder
    ``.neardup-work-XXXXXXXX`` under ``work_dir`` (default: ``outdir``), which must also be
    visible to every worker; the folder is removed at the end, also when the job fails.

    ``partitioned_tables``: write ``clusters/`` and ``pairs/`` as folders of Parquet parts, one
    per partition in row order (read them as one table with ``pyarrow.parquet.read_table``),
    instead of one file each; then no output row passes through the client.
    """
    read_opts = ReadOptions(text_fields=text_fields, id_field=id_field, format=input_format,
                            encoding=encoding, on_error=on_error)
    OutputOptions(output_format, write_corpus)
    if partitioned_tables and output_format != "parquet":
        raise ConfigError("partitioned tables are written as Parquet parts: use "
                          "output_format='parquet' (the default)")
    check_int("n_workers", n_workers, 1)
    check_int("partition_docs", partition_docs, 1)
    config = config or DedupConfig()
    if config.verify.mode != "exact":
        raise ConfigError("verify='estimate' is not supported by the dask engine yet: use "
                          "verify='exact' or the local engine")
    plist = _expand([Path(p) for p in paths], input_format)
    # the same checks of the options and paths as the local engine, raised here at once
    record_stream(plist, read_opts)

    from distributed import Client, LocalCluster

    cluster = None
    if scheduler is None:
        import dask

        threads = max(1, (os.cpu_count() or 1) // n_workers)
        with dask.config.set({"distributed.scheduler.allowed-failures": 5}):
            cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                                   dashboard_address=":0",
                                   env={"NUMBA_NUM_THREADS": str(threads)})
        client = Client(cluster)
    else:
        threads = None
        client = Client(scheduler)
    try:
        return _run(client, plist, Path(outdir), config, read_opts, output_format, write_corpus,
                    partition_docs, progress or _NoProgress(), threads, work_dir,
                    partitioned_tables)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _missing_dirs(path: Path) -> list[Path]:
    """``path`` and those of its parents that do not exist yet, outermost first."""
    out = []
    p = path.absolute()
    while not p.exists() and p != p.parent:
        out.append(p)
        p = p.parent
    return out[::-1]


def _remove_tree(path: Path) -> None:
    """Remove the scratch folder; retried briefly, as a task cancelled on error may still be
    writing a file into it."""
    for _ in range(20):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.1)


def _run(client, paths, outdir, config, read_opts, output_format, write_corpus,
         partition_docs, progress, threads, work_dir, partitioned_tables=False
         ) -> dict[str, Any]:
    tok = uuid.uuid4().hex[:8]
    base = outdir if work_dir is None else Path(work_dir)
    created = _missing_dirs(base)
    if work_dir is None:
        prepare_outdir(outdir)
    else:
        try:
            base.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise OutputError(f"{base}: cannot create the work directory: {e.strerror}") from e
    work = base / f".neardup-work-{tok}"
    try:
        work.mkdir()
    except OSError as e:
        raise OutputError(f"{work}: cannot create the scratch folder: {e.strerror}") from e
    futures: list = []
    ok = False
    try:
        summary = _stages(client, paths, outdir, config, read_opts, output_format,
                          write_corpus, partition_docs, progress, threads, tok, work, futures,
                          partitioned_tables)
        ok = True
        return summary
    finally:
        if not ok:
            with contextlib.suppress(Exception):
                client.cancel(futures)
        futures.clear()
        _remove_tree(work)
        if not ok:
            for d in reversed(created):  # what this run created, unless something else is in it
                try:
                    d.rmdir()
                except OSError:
                    break


def _stages(client, paths, outdir, config, read_opts, output_format, write_corpus,
            partition_docs, progress, threads, tok, work, futures,
            partitioned_tables=False) -> dict[str, Any]:
    t_start = time.perf_counter()
    timings: dict[str, float] = {}

    def sub(fn, *args, name: str, i: int | str = 0):
        fut = client.submit(fn, *args, key=f"neardup-{name}-{tok}-{i}", pure=False)
        futures.append(fut)
        return fut

    def folder(name: str) -> str:
        path = work / name
        path.mkdir()
        return str(path)

    def tick(stage: str, t0: float) -> float:  # ends a stage started with progress.start
        t1 = time.perf_counter()
        timings[stage] = round(timings.get(stage, 0.0) + t1 - t0, 4)
        progress.finish(stage)
        return t1

    cfg = config
    bands, rows = lsh_params(cfg.lsh, cfg.sketch.num_perm)
    auto_ids = read_opts.id_field is None and read_opts.default_id is None
    specs = _plan(paths, read_opts.format, partition_docs)
    P = len(specs)
    S = P
    workers = len(client.scheduler_info()["workers"])
    total_bytes = total_input_bytes(paths)

    # 1. read, normalise, fingerprint, sketch; each partition's arrays go to its folder
    t0 = time.perf_counter()
    progress.start("read", P)
    # a range of a split JSONL file needs the lines before it (counted in parallel) for the
    # line numbers of its errors
    line_prior: list[list] = []
    file_counts: dict[str, list] = {}
    data = []
    for p, sp in enumerate(specs):
        prior: list = []
        if sp.split:
            done = file_counts.setdefault(sp.path, [])
            prior = list(done)
            done.append(sub(_count_lines, sp.path, sp.start, sp.end, name="lines", i=p))
        line_prior.append(prior)
        auto = auto_ids and not Path(sp.path).is_dir()
        data.append(sub(_read_partition, sp, read_opts, cfg, bands, rows, auto, threads,
                        prior, folder(f"p{p:05d}"), name="read", i=p))
    parts: list[_Part] = client.gather(data)
    line_prior = [client.gather(lp) for lp in line_prior]
    infos = [d.info for d in parts]
    del data
    futures.clear()  # done: what a lost worker held need not be computed again
    t0 = tick("read", t0)

    # 2. errors and repeated ids, in the local engine's order
    progress.start("ids", None)
    dups: list[tuple] = []
    if P > 1 and read_opts.unique_ids and any(d_["n"] for d_ in infos) and (
            not auto_ids or any(Path(s.path).is_dir() for s in specs)):
        sdir = folder("ids")
        pre = [f"{sdir}/m{p}" for p in range(P)]
        idm = [sub(_id_map, d, S, pre[p], name="idmap", i=p) for p, d in enumerate(parts)]
        red = [sub(_id_reduce, pre, s, *idm, name="idred", i=s) for s in range(S)]
        dups = sorted(x for r in client.gather(red) for x in r)
        del idm, red
    dup_msgs = _dup_messages(client, parts, dups, read_opts.id_field, sub)
    events: list[tuple] = []  # (p, position, kind, seq, message or error)
    for p, inf in enumerate(infos):
        if inf["error"] is not None:
            events.append((p, inf["error"][0], 0, 0, inf["error"][1]))
        for pos, seq, msg in inf["skips"]:
            events.append((p, pos, 0, seq, msg))
    for (p, i, _fp, _fi, _x), err in zip(dups, dup_msgs):
        events.append((p, i, 1, 0, err))
    # a split JSONL file whose ranges all hold no record is an empty file
    by_file: dict[str, list[int]] = {}
    for p, sp in enumerate(specs):
        if sp.split:
            by_file.setdefault(sp.path, []).append(p)
    for path, ps in by_file.items():
        if sum(infos[p]["records"] for p in ps) == 0:
            events.append((ps[0], 0, 0, -1, InputError(
                "the file is empty (no JSON lines)", path=path, reason=SkipReason.EMPTY_FILE,
                whole_file=True)))
    events.sort(key=lambda e: e[:4])
    report = SkipReport()
    if read_opts.fail:
        first = next((e[4] for e in events if isinstance(e[4], InputError)), None)
        if first is not None:
            raise first
    else:
        for inf in infos:
            for k, v in inf["skip_counts"].items():
                report.counts[k] = report.counts.get(k, 0) + v
        for e in events:
            if isinstance(e[4], InputError):
                reason = str(e[4].reason)
                report.counts[reason] = report.counts.get(reason, 0) + 1
        report.examples = [str(e[4]) for e in events][:20]
    drops = [np.asarray([i for (q, i, *_r) in dups if q == p], np.int64) for p in range(P)]
    dropped = {p: sub(_drop, d, drops[p], name="drop", i=p)
               for p, d in enumerate(parts) if len(drops[p])}
    got = dict(zip(dropped, client.gather(list(dropped.values()))))
    parts = [got.get(p, d) for p, d in enumerate(parts)]
    del dropped
    futures.clear()
    offsets = np.zeros(P + 1, np.int64)
    np.cumsum([d.n for d in parts], out=offsets[1:])
    parts = [replace(d, offset=int(offsets[p])) for p, d in enumerate(parts)]
    n = int(offsets[-1])
    t0 = tick("ids", t0)

    # 3. exact groups across partitions
    progress.start("exact", P)
    fdir, rdir = folder("fpmap"), folder("fpred")
    pre = [f"{fdir}/m{p}" for p in range(P)]
    fpm = [sub(_fp_map, d, S, pre[p], name="fpmap", i=p) for p, d in enumerate(parts)]
    fpr = [sub(_fp_reduce, pre, s, rdir, *fpm, name="fpred", i=s) for s in range(S)]
    parts = client.gather([sub(_fp_apply, d, S, rdir, p, *fpr, name="grouped", i=p)
                           for p, d in enumerate(parts)])
    del fpm, fpr
    futures.clear()
    _remove_tree(Path(fdir))
    ginfo = [d.ginfo for d in parts]
    U = sum(g["distinct"] for g in ginfo)
    n_empty = sum(g["empty"] for g in ginfo)
    t0 = tick("exact", t0)

    # 4. LSH: band keys shuffled by key
    progress.start("candidates", P)
    cstats = CandidateStats(bands=bands, rows=rows, bucket_cap=cfg.lsh.bucket_cap)
    cand: list[str] | None = None
    if U >= 2:
        idbits = max(1, (U - 1).bit_length())
        bdir, cdir = folder("bandmap"), folder("cands")
        pre = [f"{bdir}/m{p}" for p in range(P)]
        bm = [sub(_band_map, d, S, idbits, pre[p], name="bandmap", i=p)
              for p, d in enumerate(parts)]
        br = [sub(_band_reduce, cfg.lsh.bucket_cap, offsets, pre, s, cdir, *bm,
                  name="bandred", i=s) for s in range(S)]
        for st in client.gather(br):
            cstats.raw_pairs += st.raw_pairs
            cstats.capped_buckets += st.capped_buckets
            cstats.capped_bucket_docs += st.capped_bucket_docs
            cstats.largest_bucket = max(cstats.largest_bucket, st.largest_bucket)
        del bm, br
        futures.clear()
        _remove_tree(Path(bdir))
        cand = [f"{cdir}/r{s}" for s in range(S)]
    t0 = tick("candidates", t0)

    # 5. verify next to the data
    progress.start("verify", P)
    thr = float(cfg.lsh.threshold)

    def similarity(cands, direct, threshold, name):
        out = folder(name)
        prep = [sub(_sim_prepare, d, offsets, p, cands, None if direct is None else direct[p],
                    out, name=f"{name}prep", i=p) for p, d in enumerate(parts)]
        exp = [sub(_sim_export, d, q, out, P, *prep, name=f"{name}export", i=q)
               for q, d in enumerate(parts)]
        run = [sub(_sim_run, d, threshold, p, out, P, prep[p], *exp, name=f"{name}run", i=p)
               for p, d in enumerate(parts)]
        res = client.gather(run)
        del prep, exp, run
        futures.clear()
        _remove_tree(Path(out))
        return res

    verified = similarity(cand, None, thr, "verify")
    vl = _concat([v["pairs"][0] for v in verified], np.int64)
    vr = _concat([v["pairs"][1] for v in verified], np.int64)
    vs = _concat([v["pairs"][2] for v in verified], np.float32).astype(np.float32)
    t0 = tick("verify", t0)

    # 6. cluster the verified pairs on the client
    progress.start("cluster", 1)
    nodes = _concat([v["nodes"][0] for v in verified], np.int64)
    nlen = _concat([v["nodes"][1] for v in verified], np.int64)
    nfp = _concat([v["nodes"][2] for v in verified], np.uint64)
    nid = [x for v in verified for x in v["nodes"][3]]
    nodes, at = np.unique(nodes, return_index=True)
    nlen, nfp = nlen[at], nfp[at]
    nid = [nid[i] for i in at.tolist()]
    m = len(nodes)
    rank = preference_rank(m, cfg.cluster.keep, nlen, nfp)
    li = np.searchsorted(nodes, vl)
    ri = np.searchsorted(nodes, vr)
    rep_c = cluster_representatives(m, li, ri, cfg.cluster.method, rank)
    members = np.flatnonzero(rep_c != np.arange(m))
    msim = np.ones(m, np.float32)
    if len(members):
        ml, mr = nodes[members], nodes[rep_c[members]]
        own = _owner(offsets, ml)
        res = similarity(None, [(ml[own == p], mr[own == p]) for p in range(P)], None,
                         "member")
        rl = np.concatenate([r["pairs"][0] for r in res])
        rs = np.concatenate([r["pairs"][2] for r in res])
        order = np.argsort(rl)
        msim[members] = rs[order[np.searchsorted(rl[order], ml)]]
    cfirst_c = np.full(m, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(cfirst_c, rep_c, nodes)
    cm = _ClusterMap(nodes, nodes[rep_c], [nid[i] for i in rep_c.tolist()], msim,
                     cfirst_c[rep_c])
    [cm_f] = client.scatter([cm], broadcast=True)
    futures.append(cm_f)
    t0 = tick("cluster", t0)

    # 7. labels, tables (parts in the scratch folder, then one file each), corpus
    progress.start("write", P)
    fa = [sub(_final_a, d, cm_f, name="finala", i=p) for p, d in enumerate(parts)]
    counts = client.gather(fa)
    kept = sum(c[0] for c in counts)
    label0 = np.zeros(P + 1, np.int64)
    np.cumsum([c[1] for c in counts], out=label0[1:])
    fb = client.gather([sub(_final_b, d, int(label0[p]), fa[p], name="finalb", i=p)
                        for p, d in enumerate(parts)])
    lrows = _concat([x[0] for x in fb], np.int64)
    llab = _concat([x[1] for x in fb], np.int64)
    del fb
    order = np.argsort(lrows)
    [lut_f] = client.scatter([(lrows[order], llab[order])], broadcast=True)
    futures.append(lut_f)
    fpd, tdir = folder("fppairs"), folder("tables")
    fpre = [f"{fpd}/m{p}" for p in range(P)]
    ctab = [f"{tdir}/clusters-{p:05d}.parquet" for p in range(P)]
    ptab = [f"{tdir}/pairs-{p:05d}.parquet" for p in range(P)]
    fc = [sub(_final_c, d, p, int(label0[p]), lut_f, cm_f, P, offsets, fpre[p], ctab[p], fa[p],
              name="finalc", i=p) for p, d in enumerate(parts)]
    # verified pairs with their ids, by owner of the left row
    idx_l, idx_r = np.searchsorted(nodes, vl), np.searchsorted(nodes, vr)
    own = _owner(offsets, vl)
    pt_f = []
    for p in range(P):
        mk = np.flatnonzero(own == p)
        ver = (vl[mk], vr[mk], vs[mk], [nid[i] for i in idx_l[mk].tolist()],
               [nid[i] for i in idx_r[mk].tolist()])
        pt_f.append(sub(_pairs_table, ver, fpre, p, ptab[p], *fc, name="ptable", i=p))
    csize = client.gather([sub(_fp_cluster_stats, rdir, s, cm_f, name="cstats", i=s)
                           for s in range(S)])
    n_clusters = sum(c[0] for c in csize)
    largest = max([c[1] for c in csize] + [1 if n else 0])
    creps = _concat([c[2] for c in csize], np.int64)
    ctot = _concat([c[3] for c in csize], np.int64)
    if len(creps):
        _, inv = np.unique(creps, return_inverse=True)
        sizes = np.bincount(inv, weights=ctot).astype(np.int64)
        n_clusters += int(np.count_nonzero(sizes >= 2))
        largest = max(largest, int(sizes.max()))
    client.gather(pt_f)

    prepare_outdir(outdir)
    staged_dir = None
    streams: list[Any] = []  # TableStream or Staged folders, discarded on failure
    try:
        outputs = {}
        for stem, tabs in (("clusters", ctab), ("pairs", ptab)):
            if partitioned_tables:
                # the workers' parts become the output as they are: moved, not read
                import shutil

                sd = Staged(outdir / stem, directory=True)
                streams.append(sd)
                for i, path in enumerate(tabs):
                    shutil.move(path, sd.tmp / f"part-{i:05d}.parquet")
                outputs[stem] = str(sd.commit())
                continue
            ts = TableStream(outdir / stem, output_format)
            streams.append(ts)
            for path in tabs:
                ts.write_parquet_part(path)
            outputs[stem] = ts.commit()
        streams.clear()
        if write_corpus:
            staged_dir = Staged(outdir / "deduplicated", directory=True)
            writes = [sub(_write_part, sp, read_opts, line_prior[p], drops[p], parts[p],
                          str(staged_dir.tmp / f"part-{p:05d}.parquet"), fc[p],
                          name="part", i=p)
                      for p, sp in enumerate(specs)]
            client.gather(writes)
            final = staged_dir.commit()
            staged_dir = None
            outputs["deduplicated"] = [str(final / f"part-{p:05d}.parquet") for p in range(P)]
    except BaseException:
        for s in streams:
            s.discard()
        if staged_dir is not None:
            staged_dir.discard()
        raise
    t0 = tick("write", t0)

    shingles = sum(g["shingles"] for g in ginfo)
    text_bytes = sum(g["text_bytes"] for g in ginfo)
    cstats.candidates = sum(v["candidates"] for v in verified)
    exact_removed = n - n_empty - U
    wall = time.perf_counter() - t_start
    t = cfg.lsh.threshold
    summary = {
        "neardup_version": __version__,
        "engine": "dask",
        "documents": n,
        "text_bytes": text_bytes,
        "empty_documents": n_empty,
        "distinct_texts": U,
        "exact_duplicates": exact_removed,
        "near_duplicates": n - kept - exact_removed,
        "kept": kept,
        "removed": n - kept,
        "clusters": n_clusters,
        "largest_cluster": largest if n else 0,
        "duplicate_pairs": len(vl) + exact_removed,
        "shingles": shingles,
        "lsh": {
            "bands": bands, "rows": rows, "threshold": t,
            "expected_recall_at_threshold": round(s_curve(t, bands, rows), 6),
            "expected_recall_at_threshold_plus_0.1": round(s_curve(min(t + 0.1, 1.0), bands,
                                                                  rows), 6),
            **{k: v for k, v in cstats.to_dict().items() if k not in ("bands", "rows")},
        },
        "verified_pairs": len(vl),
        "config": cfg.to_dict(),
        "timings_s": timings,
        "workers": workers,
        "partitions": P,
        "seconds": 0.0,
        "inputs": [str(p) for p in paths],
        "input_bytes": total_bytes,
        "skipped": report.to_dict(),
        "outputs": outputs,
    }
    summary["seconds"] = round(wall, 4)
    summary["documents_per_s"] = round(n / wall, 1) if wall > 0 else None
    summary["mb_per_s"] = round(text_bytes / 1e6 / wall, 2) if wall > 0 else None
    summary["ingest_seconds"] = timings.get("read", 0.0)
    outputs["summary"] = str(outdir / "summary.json")
    write_json_atomic(outdir / "summary.json", summary)
    return summary
