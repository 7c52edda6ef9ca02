"""Documents in chunks (:func:`read_documents`, :class:`DocChunk`), or all of them at once
(:func:`read_all`)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..._records import record
from ..options import ReadOptions
from .base import utf8_len
from .jsonl_blocks import ArrowBatch
from .reports import IdInfo, SkipReport
from .sources import Source
from .stream import Record, RecordStream, record_stream


@record
class DocChunk:
    """Up to ``chunk_size`` documents, with progress figures.

    ``texts``: Python strings, or (when read with ``arrow=True`` from JSONL) a pyarrow string
    array. ``locations``: ``int64``, where each record came from, ``(source index << 40) |
    line`` (the line in the decompressed file, or the row or file number);
    :func:`write_deduplicated` uses them to copy the kept JSONL lines without parsing them
    again. ``spans``: ``int64[n, 2]``, the bytes ``[start, end)`` of each record's line in its
    uncompressed JSONL file (``-1`` where not known: other formats, compressed files, records
    of the line reader), so that the kept lines can be copied without reading the file again.
    """

    ids: list[str]
    texts: Any
    progress_bytes: int
    text_bytes: int
    locations: Any = None
    spans: Any = None

    def __len__(self) -> int:
        return len(self.ids)


def read_documents(
    source: Source,
    *,
    text_fields: Sequence[str] | str = ("text",),
    id_field: str | None = None,
    on_error: str = "fail",
    chunk_size: int = 10_000,
    encoding: str = "utf-8",
    report: SkipReport | None = None,
    fmt: str | None = None,
    options: ReadOptions | None = None,
    name: str | None = None,
    arrow: bool = False,
    ids: IdInfo | None = None,
) -> Iterator[DocChunk]:
    """Read documents from JSONL, CSV, TSV, Parquet files and directories of text files, in
    chunks of at most ``chunk_size`` documents.

    ``source``: paths, the bytes of one file or a binary file object, as for
    :func:`record_stream` (``name``: what messages call bytes or a file object). The options
    (given one by one, or as ``options``, a :class:`ReadOptions`), and the existence and format
    of every path, are checked when this is called (a missing path is an :class:`InputError`
    with reason ``"missing_path"``, a bad option a :class:`ConfigError`); the inputs are read
    lazily as the returned iterator is consumed. With ``on_error="fail"`` the first bad record
    raises :class:`InputError`; with ``"skip"`` it is counted in ``report`` and reading goes on.

    ``arrow``: read JSONL files (and bytes) by blocks with the compiled scanner where the
    options allow it, the chunks' texts then pyarrow string arrays (the same records, ids,
    errors and order; several times faster, and the texts' UTF-8 is never copied into Python
    strings).

    ``ids``: an :class:`IdInfo` that the read fills in (where the ids came from; with
    ``options.detect_id``, call :meth:`IdInfo.fix` on the ids read if it fell back to row
    numbers).
    """
    if options is None:
        options = ReadOptions(
            text_fields=text_fields,
            id_field=id_field,
            format=fmt,
            encoding=encoding,
            on_error=on_error,
            chunk_size=chunk_size,
        )
    stream = record_stream(source, options, report, name=name)
    if ids is not None:  # the caller's, filled in as the read goes
        ids.__dict__.update(stream.ids.__dict__)
        stream.ids = ids
    return _chunks(stream, options.chunk_size, arrow)


def read_all(
    paths: Sequence[str | os.PathLike],
    *,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    on_error: str = "fail",
    encoding: str = "utf-8",
    fmt: str | None = None,
    report: SkipReport | None = None,
) -> tuple[list[str], list[str], IdInfo]:
    """Every document of ``paths`` in memory, as the file jobs that need them all at once
    (``neardup fca``, ``neardup reuse``) read them: ``(ids, texts, ids_info)``. Ids as
    ``neardup dedup`` takes them: the field ``id_field``, or (None) the field ``id`` where every
    record has one, else row numbers; ``""``: row numbers (:func:`~neardup.io.id_options`)."""
    from ..options import id_options

    ids: list[str] = []
    texts: list[str] = []
    info = IdInfo()
    locations = []
    options = ReadOptions(
        text_fields=tuple(text_fields),
        on_error=on_error,
        encoding=encoding,
        format=fmt,
        **id_options(id_field),
    )
    for chunk in read_documents(
        [p if str(p) == "-" else Path(p) for p in paths], report=report, options=options, ids=info
    ):
        ids.extend(chunk.ids)
        texts.extend(chunk.texts)
        locations.append(chunk.locations)
    if locations:
        import numpy as np

        info.fix(ids, np.concatenate(locations))
    return ids, texts, info


_NO_SPAN = (-1, -1)


class _ChunkBuilder:
    """Gathers records and Arrow batches into :class:`DocChunk` objects of ``size`` documents
    (the last one smaller). A chunk's texts are a pyarrow array when all of it came from
    Arrow batches, else Python strings."""

    def __init__(self, stream: RecordStream, size: int):
        self.stream = stream
        self.size = size
        self._reset()

    def _reset(self) -> None:
        self.ids: list[str] = []
        self.parts: list[Any] = []  # pyarrow arrays and lists of Python strings, in order
        self.locs: list[Any] = []  # lists of ints and int64 arrays
        self.spans: list[Any] = []  # lists of (start, end) and int64[m, 2] arrays
        self.n = 0
        self.text_bytes = 0

    def add_record(self, rec: Record) -> Iterator[DocChunk]:
        if self.n >= self.size:
            yield self.flush()
        if not self.parts or type(self.parts[-1]) is not list:
            self.parts.append([])
            self.locs.append([])
            self.spans.append([])
        self.parts[-1].append(rec.text)
        self.locs[-1].append(rec.location)
        self.spans[-1].append(rec.span or _NO_SPAN)
        self.ids.append(rec.id)
        self.n += 1
        self.text_bytes += utf8_len(rec.text)

    def add_batch(self, batch: ArrowBatch) -> Iterator[DocChunk]:
        """Add the records of ``batch``: a chunk never joins two batches (that would copy
        their texts; chunks hold *up to* ``size`` documents)."""
        ids = batch.id_list()
        texts = batch.texts
        locs = batch.locations
        spans = batch.spans
        pos = 0
        if self.n:
            yield self.flush()
        while pos < len(ids):
            if self.n >= self.size:
                yield self.flush()
            take = min(self.size - self.n, len(ids) - pos)
            part = texts.slice(pos, take)
            self.parts.append(part)
            self.locs.append(locs[pos : pos + take])
            self.spans.append(spans[pos : pos + take] if spans is not None else [_NO_SPAN] * take)
            self.ids.extend(ids[pos : pos + take])
            self.n += take
            self.text_bytes += batch.text_bytes if take == len(ids) else arrow_text_bytes(part)
            pos += take

    def flush(self) -> DocChunk:
        import numpy as np

        parts = self.parts
        if all(type(p) is not list for p in parts):
            import pyarrow as pa

            texts: Any = (
                parts[0]
                if len(parts) == 1
                else pa.chunked_array(
                    [
                        c
                        for p in parts
                        for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])
                    ]
                )
            )
        else:
            texts = []
            for p in parts:
                texts.extend(p if type(p) is list else p.to_pylist())
        locs = np.concatenate([np.asarray(x, np.int64) for x in self.locs])
        spans = np.concatenate([np.asarray(x, np.int64).reshape(-1, 2) for x in self.spans])
        chunk = DocChunk(
            self.ids, texts, self.stream.progress.delta(), self.text_bytes, locs, spans
        )
        self._reset()
        return chunk


def arrow_text_bytes(arr: Any) -> int:
    """The UTF-8 bytes of a pyarrow string array without nulls (chunked or not), from its
    offsets: no pass over the data, and no import of pyarrow.compute (25 ms)."""
    import numpy as np
    import pyarrow as pa

    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    total = 0
    for c in chunks:
        if len(c):
            dt = np.int64 if pa.types.is_large_string(c.type) else np.int32
            off = np.frombuffer(c.buffers()[1], dt)
            total += int(off[c.offset + len(c)]) - int(off[c.offset])
    return total


def _chunks(stream: RecordStream, chunk_size: int, arrow: bool = False) -> Iterator[DocChunk]:
    """The records of ``stream`` in chunks of ``chunk_size``; with ``arrow``, JSONL sources
    that allow it are read by blocks (:meth:`RecordStream.jsonl_batches`) and their chunks
    carry pyarrow text arrays."""
    b = _ChunkBuilder(stream, chunk_size)
    for src in stream.sources:
        if arrow and stream.batchable(src):
            for item in stream.jsonl_batches(src):
                if type(item) is Record:
                    yield from b.add_record(item)
                else:
                    yield from b.add_batch(item)  # type: ignore[arg-type]
        else:
            for rec in stream.records(src):
                yield from b.add_record(rec)
    stream.finish_ids()
    if b.n:
        yield b.flush()
