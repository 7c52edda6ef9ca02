"""A K-times larger benchmark corpus from the 1M one: K Caesar-rotated copies.

Reads a benchmark corpus (JSONL, one ``{"id": ..., "text": ...}`` per line, as
``benchmarks/corpus.py`` writes it) and writes ``--copies K`` copies of it (default 10, at most
26). In copy ``k`` every Latin letter of every text is shifted by ``k`` places (``a`` -> the
``k``-th letter after it, ``z`` wrapping round to ``a``; upper case likewise; letters of other
scripts, accented letters, digits and punctuation unchanged; copy 0 is the original text) and
every id is prefixed with ``"k:"``, copy 0 included (``"0:d0000042"``, ``"3:d0000042"``), so
that every id says which copy it comes from and the ids stay distinct.

A shift changes every word that holds a Latin letter, so two copies share (practically) no word
5-gram: a correct deduplication of the K copies finds exactly K times the pairs and clusters of
the input (up to the chance of LSH, which differs between copies since their hashes do), and
the planted truth is K times the input's. From the 1M corpus (2.05 GB) the default makes a 10M
corpus of 20.5 GB.

Output (``--format``):

* ``jsonl``: one file ``OUT``, copy 0 first, then copy 1, ...; each copy in the input's order;
* ``parquet``: a folder ``OUT`` of shards ``part-00000.parquet``, ``part-00001.parquet``, ...
  of ``--shard-docs`` documents each (default 1,000,000; the last one may be shorter), columns
  ``id`` and ``text`` (strings), row groups of ``--row-group`` rows (default 50,000), written
  with pyarrow. Documents run through the shards in the same order as in the JSONL output.

Fields other than ``id`` and ``text`` are not written. If the input has a ground-truth file
(``<input>.truth.jsonl``) it is copied likewise to ``<OUT>.truth.jsonl`` (next to the file or
the folder), its ``id`` and ``source`` prefixed as the documents'. The report, one line of JSON
on standard output, gives the documents and bytes written and the seconds taken.

Nothing is held in memory beyond a chunk of ``--chunk-docs`` documents (default 20,000): the
input is read once per copy.

Usage::

    python benchmarks/rotated_corpus.py benchmarks/data/corpus-1000000.jsonl \
        --out benchmarks/data/corpus-10000000-parquet --format parquet [--copies 10]
"""

from __future__ import annotations

import argparse
import os
import string
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson

MAX_COPIES = 26


class InputError(ValueError):
    """The input corpus has a line that is not a document."""


def truth_path(path: str | os.PathLike[str]) -> Path:
    """Ground-truth file of a corpus ``path``: ``<path>.truth.jsonl`` (as benchmarks/corpus.py)."""
    return Path(f"{os.fspath(path).rstrip('/')}.truth.jsonl")


def rotation_table(k: int) -> dict[int, int]:
    """``str.translate`` table shifting every Latin letter by ``k`` places (case kept)."""
    k %= 26
    lo, up = string.ascii_lowercase, string.ascii_uppercase
    return str.maketrans(lo + up, lo[k:] + lo[:k] + up[k:] + up[:k])


def rotate(text: str, k: int) -> str:
    """``text`` with every Latin letter shifted by ``k`` places."""
    return text.translate(rotation_table(k))


def _chunks(path: Path, chunk_docs: int) -> Iterator[list[tuple[str, str]]]:
    """The documents of a JSONL corpus as (id, text), ``chunk_docs`` at a time."""
    chunk: list[tuple[str, str]] = []
    with open(path, "rb", buffering=1 << 22) as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                raise InputError(f"{path}, line {line_no}: not valid JSON ({exc})") from None
            if not isinstance(rec, dict) or "id" not in rec or "text" not in rec:
                raise InputError(f"{path}, line {line_no}: expected an object with id and text")
            text = rec["text"]
            if not isinstance(text, str):
                raise InputError(f"{path}, line {line_no}: the field text is not a string")
            chunk.append((str(rec["id"]), text))
            if len(chunk) >= chunk_docs:
                yield chunk
                chunk = []
    if chunk:
        yield chunk


def _rotated(path: Path, copies: int, chunk_docs: int) -> Iterator[tuple[list[str], list[str]]]:
    """(ids, texts) chunks of all the copies, copy 0 first."""
    for k in range(copies):
        table = rotation_table(k)
        prefix = f"{k}:"
        for chunk in _chunks(path, chunk_docs):
            ids = [prefix + i for i, _ in chunk]
            texts = [t.translate(table) for _, t in chunk] if k else [t for _, t in chunk]
            yield ids, texts


def _write_jsonl(
    path: Path, out: Path, copies: int, chunk_docs: int
) -> tuple[int, int, list[Path]]:
    tmp = out.with_name(out.name + ".tmp")
    n = 0
    dumps = orjson.dumps
    with open(tmp, "wb", buffering=1 << 22) as f:
        for ids, texts in _rotated(path, copies, chunk_docs):
            f.write(
                b"".join(
                    b'{"id":' + dumps(i) + b',"text":' + dumps(t) + b"}\n"
                    for i, t in zip(ids, texts, strict=True)
                )
            )
            n += len(ids)
    os.replace(tmp, out)
    return n, out.stat().st_size, [out]


def _write_parquet(
    path: Path, out: Path, copies: int, chunk_docs: int, shard_docs: int, row_group: int
) -> tuple[int, int, list[Path]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.string()), ("text", pa.string())])
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("part-*.parquet"):
        old.unlink()
    shards: list[Path] = []
    writer: pq.ParquetWriter | None = None
    in_shard = 0
    n = 0
    pending_ids: list[str] = []
    pending_texts: list[str] = []

    def flush() -> None:
        # one row group of the pending rows into the current shard
        if pending_ids:
            assert writer is not None
            table = pa.table({"id": pending_ids, "text": pending_texts}, schema=schema)
            writer.write_table(table, row_group_size=len(pending_ids))
            pending_ids.clear()
            pending_texts.clear()

    try:
        for ids, texts in _rotated(path, copies, chunk_docs):
            start = 0
            while start < len(ids):
                if writer is None:
                    shard = out / f"part-{len(shards):05d}.parquet"
                    shards.append(shard)
                    writer = pq.ParquetWriter(shard, schema, compression="zstd")
                    in_shard = 0
                take = min(len(ids) - start, shard_docs - in_shard, row_group - len(pending_ids))
                pending_ids.extend(ids[start : start + take])
                pending_texts.extend(texts[start : start + take])
                start += take
                in_shard += take
                n += take
                if len(pending_ids) >= row_group:
                    flush()
                if in_shard >= shard_docs:
                    flush()
                    writer.close()
                    writer = None
        flush()
    finally:
        if writer is not None:
            writer.close()
    return n, sum(s.stat().st_size for s in shards), shards


def _write_truth(path: Path, out: Path, copies: int) -> int:
    tmp = out.with_name(out.name + ".tmp")
    n = 0
    with open(tmp, "wb", buffering=1 << 20) as g:
        for k in range(copies):
            prefix = f"{k}:"
            with open(path, "rb") as f:
                for line_no, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        raise InputError(
                            f"{path}, line {line_no}: not valid JSON ({exc})"
                        ) from None
                    if not isinstance(rec, dict) or "id" not in rec:
                        raise InputError(f"{path}, line {line_no}: expected an object with an id")
                    rec["id"] = prefix + str(rec["id"])
                    if "source" in rec:
                        rec["source"] = prefix + str(rec["source"])
                    g.write(orjson.dumps(rec) + b"\n")
                    n += 1
    os.replace(tmp, out)
    return n


def write_rotated(
    path: str | os.PathLike[str],
    out: str | os.PathLike[str],
    copies: int = 10,
    fmt: str = "jsonl",
    shard_docs: int = 1_000_000,
    row_group: int = 50_000,
    chunk_docs: int = 20_000,
) -> dict:
    """Write the ``copies`` rotated copies of the corpus ``path`` to ``out``; return the report."""
    if not 1 <= copies <= MAX_COPIES:
        raise ValueError(f"copies must be in 1..{MAX_COPIES} (a shift of 26 is the original)")
    if fmt not in ("jsonl", "parquet"):
        raise ValueError(f"format must be jsonl or parquet, not {fmt!r}")
    if shard_docs < 1 or row_group < 1 or chunk_docs < 1:
        raise ValueError("shard_docs, row_group and chunk_docs must be >= 1")
    t0 = time.perf_counter()
    src, dst = Path(path), Path(out)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such corpus file")
    if fmt == "jsonl":
        dst.parent.mkdir(parents=True, exist_ok=True)
        n, size, files = _write_jsonl(src, dst, copies, chunk_docs)
    else:
        n, size, files = _write_parquet(src, dst, copies, chunk_docs, shard_docs, row_group)
    report: dict = {
        "input": str(src),
        "out": str(dst),
        "format": fmt,
        "copies": copies,
        "documents": n,
        "files": len(files),
        "bytes": size,
    }
    if truth_path(src).is_file():
        report["truth"] = str(truth_path(dst))
        report["truth_records"] = _write_truth(truth_path(src), truth_path(dst), copies)
    report["seconds"] = round(time.perf_counter() - t0, 3)
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Write K copies of a benchmark corpus, copy k with its Latin letters "
        "shifted by k and its ids prefixed with 'k:'."
    )
    parser.add_argument("input", help="the corpus (JSONL with id and text)")
    parser.add_argument("--out", required=True, help="output JSONL file, or folder of shards")
    parser.add_argument("--copies", type=int, default=10, help="K, 1-26 (default 10)")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument(
        "--shard-docs", type=int, default=1_000_000, help="documents per Parquet shard"
    )
    parser.add_argument("--row-group", type=int, default=50_000, help="rows per row group")
    parser.add_argument("--chunk-docs", type=int, default=20_000, help="documents per chunk")
    args = parser.parse_args(argv)
    try:
        report = write_rotated(
            args.input,
            args.out,
            args.copies,
            args.format,
            args.shard_docs,
            args.row_group,
            args.chunk_docs,
        )
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(orjson.dumps(report) + b"\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
