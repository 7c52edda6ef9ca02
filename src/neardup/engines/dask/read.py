"""Step 1, read: each partition read, normalised, fingerprinted and sketched on a worker.

A partition is one input (a file; a directory of text files) or a part of a large one (a byte
range of a JSONL file, a run of row groups of a Parquet file). The first copy of each text
*within the partition* is shingled and sketched (:func:`neardup.pipeline.ingest_chunk`); its band
keys and 32-bit shingle fingerprints (streamed chunk by chunk) go to the partition's folder.
Each partition counts its valid records, and the client turns the counts into global row
offsets. Errors come back as values, so that the client raises the one the local engine would
raise first (in global record order).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...config import DedupConfig
from ...errors import InputError
from ...exact import FingerprintTable
from ...io import FilePart, ReadOptions, SkipReport, record_stream, utf8_len
from ...pipeline import ingest_chunk
from .context import RunContext
from .plan import Spec, count_lines
from .scratch import Part, atomic_save, concat

CHUNK = 10_000  # records per ingest chunk


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


def open_stream(spec: Spec, read_opts: ReadOptions, report: SkipReport, first_line: int):
    part = (
        FilePart(spec.start, spec.end, first_line, row_groups=spec.row_groups)
        if spec.split or spec.row_groups
        else None
    )
    return record_stream([spec.path], replace(read_opts, chunk_size=CHUNK), report, part=part)


def set_threads(threads: int | None) -> None:
    if threads:
        from ..._threads import set_num_threads

        set_num_threads(threads)


_LINE_BITS = (1 << 40) - 1  # a location's line: (source << 40) | line


def read_fast(
    spec: Spec,
    read_opts: ReadOptions,
    cfg: DedupConfig,
    bands: int,
    rows: int,
    auto_ids: bool,
    first_line: int | None,
    pdir: str,
) -> Part | None:
    """:func:`read_partition` of a plain JSONL partition by blocks with the compiled scanner
    (:func:`neardup.io.read_documents` with ``arrow``; a byte range read as bytes, its lines
    numbered from ``first_line``), as the local engine reads; ``None`` (nothing kept) where
    that read is not the same as the record reader's: a record skipped or in error, ids that
    fell back to row numbers or repeat (:func:`read_partition` then reads it record by record,
    for the same messages). ``first_line`` None (a byte range whose lines before it are not
    counted yet): its lines are numbered from 0 in ``lines0`` (see :func:`shift_lines`), the
    newlines of the range in ``info["range_lines"]``."""
    import pyarrow.compute as pc

    from ...io import IdInfo, read_documents

    rel = first_line is None
    probe = open_stream(spec, read_opts, SkipReport(), first_line or 0)
    src = probe.sources[0]
    if src.fmt != "jsonl" or src.compression is not None:
        return None
    source: Any = [Path(spec.path)]
    stack = contextlib.ExitStack()
    if spec.split:  # the range's bytes, scanned where the system keeps them
        source = stack.enter_context(_mapped_range(spec))
    last = None  # the last record's line (from 1) and where it starts in ``source``
    first_line = first_line or 0
    report, info = SkipReport(), IdInfo()
    table = FingerprintTable()
    acc = _Arrays(pdir)
    try:
        try:
            for chunk in read_documents(
                source,
                options=replace(
                    read_opts, chunk_size=CHUNK, format="jsonl" if spec.split else read_opts.format
                ),
                report=report,
                arrow=True,
                ids=info,
                name=src.name if spec.split else None,
            ):
                texts = chunk.texts
                if isinstance(texts, list):
                    tb = np.fromiter(map(utf8_len, texts), np.int64, len(texts))
                else:
                    tb = np.asarray(pc.binary_length(texts), np.int64)
                if len(chunk) and chunk.spans is not None and chunk.spans[-1][0] >= 0:
                    last = (int(chunk.locations[-1]) & _LINE_BITS, int(chunk.spans[-1][0]))
                acc.ids += chunk.ids
                acc.lines.append((np.asarray(chunk.locations, np.int64) & _LINE_BITS) + first_line)
                acc.tbytes.append(tb)
                acc.add(ingest_chunk(texts, cfg, (bands, rows), table))
        except InputError:
            return None
        if report.total or info.repeat is not None:
            return None
        acc.done()
    finally:
        acc.close()
        stack.close()
    field_ids = info.detected and info.missing is None
    n = len(acc.ids)
    range_lines = 0  # newlines in the range: those before its last record's line, and after
    if spec.split:
        at = 0 if last is None else last[1]
        range_lines = (0 if last is None else last[0] - 1) + count_lines(
            spec.path, spec.start + at, _range_end(spec)
        )
    missing = None  # where the detected id field is first missing, named as the reader names it
    if info.detected and info.missing is not None:
        row = info.fallback_row or 0
        missing = int(concat(acc.lines, np.int64)[row])
    info_d: dict[str, Any] = {
        "n": n,
        "error": None,
        "skips": [],
        "skip_counts": {},
        "records": n,
        "id_missing": None if missing is None or rel else f"{src.name}:{missing}",
        "id_repeat": None,
    }
    if rel:
        info_d.update(id_missing_at=missing, range_lines=range_lines)
    return acc.part(src.fmt, src.name, not auto_ids or field_ids, info_d, rel)


def _range_end(spec: Spec) -> int:
    return spec.end if spec.end is not None else os.path.getsize(spec.path)


@contextlib.contextmanager
def _mapped_range(spec: Spec):
    """The bytes ``[start, end)`` of the partition's file as a view of a read-only memory map:
    the block reader scans them where the system keeps them, without copying them first."""
    import mmap

    start, end = spec.start, _range_end(spec)
    if end <= start:
        yield b""
        return
    at = start - start % mmap.ALLOCATIONGRANULARITY
    with open(spec.path, "rb") as f:
        m = mmap.mmap(f.fileno(), end - at, access=mmap.ACCESS_READ, offset=at)
    view = memoryview(m)[start - at :]
    try:
        yield view
    finally:
        view.release()
        with contextlib.suppress(BufferError):  # a block still held: closed when let go
            m.close()


class _Arrays:
    """A partition's arrays as its chunks are ingested (the shingle fingerprints streamed to
    ``sh.u32``), saved by :meth:`part`."""

    def __init__(self, pdir: str):
        self.pdir = pdir
        self.ids: list[str] = []
        self.lines: list[np.ndarray] = []
        self.tbytes: list[np.ndarray] = []
        self.cols: dict[str, list[np.ndarray]] = {
            k: [] for k in ("lgroup", "glen", "ghi", "glo", "keys", "sizes")
        }
        self.sh_path = os.path.join(pdir, "sh.u32")
        self.sh_tmp = f"{self.sh_path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        self.shf = open(self.sh_tmp, "wb")  # noqa: SIM115 (closed by close)

    def add(self, ingested: tuple) -> None:
        fp, sk = ingested
        assert fp.fp_hi is not None and fp.fp_lo is not None
        assert isinstance(sk.keys, np.ndarray)
        c = self.cols
        c["lgroup"].append(fp.group)
        c["glen"].append(fp.lengths)
        c["ghi"].append(fp.fp_hi)
        c["glo"].append(fp.fp_lo)
        c["keys"].append(sk.keys)
        c["sizes"].append(sk.sizes)
        np.ascontiguousarray(sk.shingles, np.uint32).tofile(self.shf)

    def done(self) -> None:
        self.shf.close()
        os.replace(self.sh_tmp, self.sh_path)

    def close(self) -> None:
        if not self.shf.closed:
            self.shf.close()
        with contextlib.suppress(OSError):
            os.unlink(self.sh_tmp)

    def part(self, fmt: str, name: str, has_ids: bool, info: dict, rel: bool = False) -> Part:
        c = self.cols
        sizes_all = concat(c["sizes"], np.int64)
        shoff = np.zeros(len(sizes_all) + 1, np.int64)
        np.cumsum(sizes_all, out=shoff[1:])
        part = Part(
            dir=self.pdir,
            n=len(self.ids),
            G=len(sizes_all),
            has_ids=has_ids,
            has_paths=False,
            fmt=fmt,
            name=name,
            info=info,
        )
        lines = concat(self.lines, np.int64)
        if rel:
            atomic_save(os.path.join(self.pdir, "lines0.npy"), lines)
        else:
            part.save("lines", lines)
        part.save("tbytes", concat(self.tbytes, np.int64))
        part.save("lgroup", np.concatenate(c["lgroup"]).astype(np.int64))
        part.save("glen", np.concatenate(c["glen"]).astype(np.int64))
        part.save("ghi", np.concatenate(c["ghi"]))
        part.save("glo", np.concatenate(c["glo"]))
        part.save("keys", np.concatenate(c["keys"], axis=1))
        part.save("shoff", shoff)
        if has_ids:
            part.save_strs("ids", self.ids)
        return part


def read_partition(
    spec: Spec,
    read_opts: ReadOptions,
    cfg: DedupConfig,
    bands: int,
    rows: int,
    auto_ids: bool,
    threads: int | None,
    line_counts: list[int] | None,
    pdir: str,
) -> Part | None:
    """Read one partition, run normalise, fingerprint and shingle+sketch on it, and write its
    arrays to ``pdir`` (the shingle fingerprints chunk by chunk, as they are made).
    ``line_counts`` None (a byte range, the lines before it not counted yet): by blocks only
    (:func:`read_fast`), ``None`` where that read cannot be used."""
    set_threads(threads)
    first_line = None if line_counts is None else sum(line_counts)
    fast = read_fast(spec, read_opts, cfg, bands, rows, auto_ids, first_line, pdir)
    if fast is not None or line_counts is None:
        return fast
    report = _PosReport()
    stream = open_stream(spec, read_opts, report, sum(line_counts))
    stream.check_repeats = False  # a detected id field: the client decides (ids_step)
    report.stream = stream
    fail = read_opts.fail
    table = FingerprintTable()
    ids: list[str] = []
    lines: list[int] = []
    tbytes: list[int] = []
    paths: list[str] | None = [] if stream.sources[0].fmt == "textdir" else None
    lgroup: list[np.ndarray] = []
    glen: list[np.ndarray] = []
    ghi: list[np.ndarray] = []
    glo: list[np.ndarray] = []
    keys: list[np.ndarray] = []
    sizes: list[np.ndarray] = []
    texts: list[str] = []
    error = None
    sh_path = os.path.join(pdir, "sh.u32")
    sh_tmp = f"{sh_path}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    shf = open(sh_tmp, "wb")  # noqa: SIM115 (closed below, also on error)

    def flush() -> None:
        fp, sk = ingest_chunk(texts, cfg, (bands, rows), table)
        # fingerprinted with a table, keys made here (not into an engine's stores)
        assert fp.fp_hi is not None and fp.fp_lo is not None
        assert isinstance(sk.keys, np.ndarray)
        lgroup.append(fp.group)
        glen.append(fp.lengths)
        ghi.append(fp.fp_hi)
        glo.append(fp.fp_lo)
        keys.append(sk.keys)
        np.ascontiguousarray(sk.shingles, np.uint32).tofile(shf)
        sizes.append(sk.sizes)
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
                if len(texts) >= CHUNK:
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
    # a detected id field: this partition's ids are the field's if every record has it
    info = stream.ids
    field_ids = info.detected and info.missing is None and paths is None
    sizes_all = np.concatenate(sizes)
    shoff = np.zeros(len(sizes_all) + 1, np.int64)
    np.cumsum(sizes_all, out=shoff[1:])
    part = Part(
        dir=pdir,
        n=n,
        G=len(sizes_all),
        has_ids=not auto_ids or field_ids,
        has_paths=paths is not None,
        fmt=stream.sources[0].fmt,
        name=stream.sources[0].name,
        info={
            "n": n,
            "error": error,
            "skips": report.pos,
            "skip_counts": dict(report.counts),
            "records": n + report.total + (error is not None),
            "id_missing": info.missing if info.detected else None,
            "id_repeat": info.repeat if field_ids else None,
        },
    )
    part.save("lines", np.asarray(lines, np.int64))
    part.save("tbytes", np.asarray(tbytes, np.int64))
    part.save("lgroup", np.concatenate(lgroup).astype(np.int64))
    part.save("glen", np.concatenate(glen).astype(np.int64))
    part.save("ghi", np.concatenate(ghi))
    part.save("glo", np.concatenate(glo))
    part.save("keys", np.concatenate(keys, axis=1))
    part.save("shoff", shoff)
    if not auto_ids or field_ids:
        part.save_strs("ids", ids)
    if paths is not None:
        part.save_strs("paths", paths)
    return part


def shift_lines(d: Part, prior: int) -> Part:
    """The lines of a range read by blocks (``lines0``, numbered from 0) numbered in its file
    (``prior``: the lines before the range)."""
    d.save("lines", np.load(os.path.join(d.dir, "lines0.npy")) + prior)
    return d


def locate(d: Part, idx: list[int]) -> list[tuple[str, str, int | None]]:
    """For rows of a partition (before drops): where the reader says a record is, and the path
    and line an error about it names."""
    lines = d.load("lines")
    paths = d.strs("paths") if d.fmt == "textdir" else []
    out: list[tuple[str, str, int | None]] = []
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


def drop_rows(d: Part, idx: np.ndarray) -> Part:
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


def read_step(ctx: RunContext) -> None:
    """Read every partition on the workers; keep their handles and the line counts.

    The ranges of a split JSONL file are read by blocks first, their lines numbered from 0;
    the lines before each range, which its line numbers need, are then the sums of the ranges'
    newlines. A range that must be read record by record (for its messages) is read again
    once the lines before it are known (those of such ranges counted in parallel)."""
    # row numbers, or (a detected id field) the field's ids where every record has one
    auto_ids = ctx.read.id_field is None and ctx.read.default_id is None
    dirs = [ctx.folder(f"p{p:05d}") for p in range(ctx.P)]

    def read(p: int, counts: list[int] | None):
        sp = ctx.specs[p]
        auto = auto_ids and not Path(sp.path).is_dir()
        args = (sp, ctx.read, ctx.config, ctx.bands, ctx.rows, auto, ctx.threads)
        return ctx.submit(read_partition, *args, counts, dirs[p], name="read", i=p)

    parts: list[Any] = ctx.client.gather(
        [read(p, None if sp.split else []) for p, sp in enumerate(ctx.specs)]
    )
    ctx.done()
    # the newlines of the ranges to read again, counted
    counted = {
        p: ctx.submit(count_lines, sp.path, sp.start, sp.end, name="lines", i=p)
        for p, sp in enumerate(ctx.specs)
        if sp.split and parts[p] is None
    }
    counts = dict(zip(counted, ctx.client.gather(list(counted.values())), strict=True))
    prior = [0] * ctx.P
    seen: dict[str, int] = {}
    for p, sp in enumerate(ctx.specs):
        if sp.split:
            prior[p] = seen.get(sp.path, 0)
            d = parts[p]
            seen[sp.path] = prior[p] + (counts[p] if d is None else d.info["range_lines"])
    again = {}
    for p, sp in enumerate(ctx.specs):
        d = parts[p]
        if not sp.split:
            continue
        if d is None:
            again[p] = read(p, [prior[p]])
        else:
            at = d.info.get("id_missing_at")
            if at is not None:
                d.info["id_missing"] = f"{d.name}:{at + prior[p]}"
            again[p] = ctx.submit(shift_lines, d, prior[p], name="shift", i=p)
    for p, d in zip(again, ctx.client.gather(list(again.values())), strict=True):
        parts[p] = d
    ctx.parts = parts
    ctx.line_prior = [[prior[p]] if sp.split else [] for p, sp in enumerate(ctx.specs)]
    ctx.done()
