"""Parquet files, read with pyarrow batch by batch: whole, or a run of their row groups."""

from __future__ import annotations

from collections.abc import Generator
from typing import cast

from ...errors import InputError, SkipReason
from .base import (
    _bad_id,
    _empty,
    _field_error,
    _Item,
    _nearest,
    _open_error,
    _Options,
    _Progress,
    _record_error,
    _Source,
)


def _parquet_records(
    src: _Source, opts: _Options, progress: _Progress
) -> Generator[_Item | InputError, None, None]:
    """Records of a Parquet file (or of a run of its row groups, ``src.whole=False``, still
    numbered from the file's first row); ``raw`` is ``(batch, row index in the batch)``; the
    first pseudo-item ``(0, "", None, ("schema", schema))`` carries the file's Arrow schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = src.name
    # a run of row groups (a Dask partition): the file's errors are reported by its first run
    first = src.whole or src.start == 0
    try:
        if src.path is not None:
            pf = pq.ParquetFile(src.path)
        elif src.data is not None:
            pf = pq.ParquetFile(pa.BufferReader(src.data))
        else:
            pf = pq.ParquetFile(src.fileobj)
        schema = pf.schema_arrow
    except (pa.ArrowException, OSError) as e:
        if first:
            yield _open_error(src, e)
        return
    try:
        meta = pf.metadata
        num_rows = meta.num_rows  # to read (of the run of row groups)
        row = 0  # rows of the file before the first one read
        groups = None
        if not src.whole:
            end = meta.num_row_groups if src.end is None else src.end
            groups = list(range(src.start, end))
            sizes = [meta.row_group(k).num_rows for k in range(end)]
            row = sum(sizes[: src.start])
            num_rows = sum(sizes[src.start :])
        done = 0
        progress.start(src, lambda: src.size * done // max(num_rows, 1))
        names = schema.names

        def is_str(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return (
                pa.types.is_string(t)
                or pa.types.is_large_string(t)
                or getattr(pa.types, "is_string_view", lambda _t: False)(t)
            )

        def is_int(t: pa.DataType) -> bool:
            if pa.types.is_dictionary(t):
                t = t.value_type
            return pa.types.is_integer(t)

        id_field = opts.id_field
        if (
            opts.id_optional
            and id_field is not None
            and (
                id_field not in names
                or not (is_str(schema.field(id_field).type) or is_int(schema.field(id_field).type))
            )
        ):
            id_field = None  # a detected id column that this file lacks, or holds no ids

        def bad_columns() -> InputError | None:
            for f in [*opts.text_fields, *([id_field] if id_field is not None else [])]:
                if f not in names:
                    err = _record_error(
                        f"{f!r} is not a column of the Parquet file (columns: "
                        f"{', '.join(names)}){_nearest(f, names)}",
                        name,
                        None,
                        f,
                        SkipReason.MISSING_FIELD,
                    )
                    err.whole_file = True
                    return err
            for f in opts.text_fields:
                t = schema.field(f).type
                if not is_str(t):
                    return InputError(
                        f"expected a string column, got {t}",
                        path=name,
                        field=f,
                        reason=SkipReason.NON_STRING_FIELD,
                        whole_file=True,
                    )
            if id_field is not None:
                t = schema.field(id_field).type
                if not (is_str(t) or is_int(t)):
                    return InputError(
                        f"an id column must hold strings or integers, got {t}",
                        path=name,
                        field=id_field,
                        reason=SkipReason.BAD_ID,
                        whole_file=True,
                    )
            return None

        bad_file = bad_columns()
        if bad_file is None and meta.num_rows == 0:
            bad_file = _empty(src, "no rows")
        if bad_file is not None:
            if first:
                yield bad_file
            return
        yield 0, "", None, ("schema", schema)
        wanted = list(dict.fromkeys([*opts.text_fields, *([id_field] if id_field else [])]))
        columns = None if opts.all_columns else wanted
        for batch in pf.iter_batches(
            batch_size=opts.batch_size, row_groups=groups, columns=columns
        ):
            cols = [batch.column(f).to_pylist() for f in opts.text_fields]
            ids = batch.column(id_field).to_pylist() if id_field is not None else None
            n = batch.num_rows
            for i in range(n):
                row += 1
                parts = []
                bad = None
                for f, col in zip(opts.text_fields, cols, strict=True):
                    v = col[i]
                    if v is None:
                        bad = _field_error(v, name, row, f)
                        break
                    parts.append(v)
                if bad is not None:
                    yield bad
                    continue
                text = parts[0] if len(parts) == 1 else "\n".join(parts)
                rid = None
                if ids is not None:
                    v = ids[i]
                    if v is None and opts.id_optional:
                        yield row, text, None, (batch, i)
                        continue
                    if v is None:
                        yield _bad_id(v, name, row, cast(str, id_field))  # ids: a field
                        continue
                    rid = v if isinstance(v, str) else str(v)
                yield row, text, rid, (batch, i)
            done += n
    except (pa.ArrowException, OSError) as e:
        yield InputError(
            f"cannot read the file: {e}", path=name, reason=SkipReason.UNREADABLE, whole_file=True
        )
        return
