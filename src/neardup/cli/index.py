"""``neardup index create|add|query|remove|stats`` and ``neardup stream`` (``neardup serve``:
:mod:`.serve`).

An INDEX is an SQLite file path or a Redis URL (``redis://host:6379/0?prefix=shop``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InputError, OutputError, SkipReason
from .common import (
    EXIT_OK,
    ID_DETECT_HELP,
    INDEX_HELP,
    _add_redis_password,
    _is_url,
    _open,
    _shown,
    _storage_options,
    add_input_args,
    add_param_arg,
    add_param_args,
    add_running_args,
    config_from_args,
    print_summary,
    skipped_text,
)


def cmd_index_create(a: argparse.Namespace) -> int:
    from ..index import Index

    if not _is_url(a.index) and Path(a.index).exists():
        raise OutputError(f"{a.index}: exists already; open it with `neardup index stats`")
    config = config_from_args(a)
    if a.passages and a.no_texts:
        raise ConfigError("--passages needs the texts: leave out --no-texts")
    idx = Index(
        a.index,
        config=config,
        store_text=not a.no_texts,
        passages=True if a.passages else None,
        storage_options=_storage_options(a, a.index),
    )
    if _is_url(a.index) and len(idx):
        raise OutputError(f"{_shown(a.index)}: an index with documents exists under this prefix")
    st = idx.stats()
    idx.close()
    print_summary(
        a,
        st,
        "neardup index create",
        lambda: [
            ("index", _shown(a.index)),
            (
                "LSH",
                f"{st['bands']} bands x {st['rows']} rows, expected recall "
                f"{st['expected_recall_at_threshold']:.3f} at J={st['threshold']:g}",
            ),
            ("shingles", st["shingle"]),
            ("passages", _passages_text(st["passages"])),
        ],
    )
    return EXIT_OK


def _passages_text(p: dict | str) -> str:
    if not isinstance(p, dict):
        return "not indexed"
    shortest = p["min_words"] or p["window"] + p["k"] - 1
    return f"{shortest}+ words (word {p['k']}-grams winnowed over {p['window']})"


def cmd_index_add(a: argparse.Namespace) -> int:
    from ..index import DuplicateIdError
    from ..io import IdInfo, ReadOptions, SkipReport, id_options, ids_text, read_documents

    idx = _open(a, a.index)
    report = SkipReport()
    t0 = time.perf_counter()
    added = 0
    ids = IdInfo()
    options = ReadOptions(
        text_fields=tuple(a.text_field),
        on_error=a.on_error,
        chunk_size=a.batch_size,
        encoding=a.encoding,
        format=a.input_format,
        **id_options(a.id_field),
    )
    try:
        for chunk in read_documents(a.inputs, report=report, options=options, ids=ids):
            if ids.fallback_row:
                raise InputError(
                    f"no field {ids.field!r} at {ids.missing}, though the {ids.fallback_row:,} "
                    f"records before it have one ({added:,} documents were added under those "
                    f"ids, and this batch was not added); give --id-field {ids.field} (every "
                    "record must then have it) or --id-field '' (row numbers)",
                    field=ids.field,
                    reason=SkipReason.MISSING_FIELD,
                )
            try:
                added += idx.add_many(zip(chunk.ids, chunk.texts), batch_size=a.batch_size)
            except DuplicateIdError as e:
                raise InputError(
                    f"{e}; {added:,} documents were added before this batch of "
                    f"{len(chunk):,}, which was not added (--id-field names the "
                    "ids; row numbers repeat across runs)",
                    field=None,
                    reason=SkipReason.DUPLICATE_ID,
                ) from e
        total = len(idx)
    finally:
        idx.close()
    wall = time.perf_counter() - t0
    sk = report.to_dict()
    data: dict[str, Any] = {
        "added": added,
        "documents": total,
        "ids": ids.to_dict(),
        "skipped": sk,
        "seconds": round(wall, 3),
        "documents_per_s": round(added / wall, 1) if wall > 0 else None,
    }
    print_summary(
        a,
        data,
        "neardup index add",
        lambda: [
            ("added", f"{added:,}  ({data['documents_per_s'] or 0:,.0f} documents/s)"),
            ("ids", ids_text(data["ids"])),
            ("skipped", skipped_text(sk)),
            ("index", f"{_shown(a.index)}: {total:,} documents"),
            ("time", f"{wall:.2f} s"),
        ],
    )
    return EXIT_OK


def _query_texts(a: argparse.Namespace) -> list[tuple[str, str]]:
    out = [(f"text{i + 1}", t) for i, t in enumerate(a.text)]
    for f in a.file or []:
        if f == "-":
            out.append(("stdin", sys.stdin.read()))
            continue
        try:
            out.append((f, Path(f).read_text(encoding="utf-8")))
        except OSError as e:
            raise InputError(
                f"cannot read: {e.strerror}", path=f, reason=SkipReason.MISSING_PATH
            ) from e
        except UnicodeDecodeError as e:
            raise InputError(
                f"not UTF-8 at byte {e.start}", path=f, reason=SkipReason.UNDECODABLE
            ) from e
    if not out:
        raise ConfigError("nothing to query: give TEXT arguments or --file PATH")
    return out


def cmd_index_query(a: argparse.Namespace) -> int:
    idx = _open(a, a.index)
    try:
        results = []
        for name, text in _query_texts(a):
            r: dict = {"query": name}
            if a.passages:
                found = idx.check(text, threshold=a.threshold, top_k=a.top_k)
                matches = found.matches
                r["reused"] = [
                    {
                        "id": m.id,
                        "share": round(m.share_query, 4),
                        "passages": [p.to_dict() for p in m.passages],
                    }
                    for m in found.reused
                ]
                r["common"] = [
                    {"a": list(p.a_chars), "words": p.words, "texts": p.texts, "example": p.example}
                    for p in found.common
                ]
            else:
                matches = idx.query(text, a.threshold, a.top_k)
            r["matches"] = [{"id": m.id, "similarity": m.similarity} for m in matches]
            results.append(r)
        threshold = a.threshold or idx.threshold
        shortest = idx.passages.shortest if idx.passages else None
    finally:
        idx.close()
    if a.json:
        print(json.dumps(results, indent=2))
        return EXIT_OK
    for r in results:
        reused, common = r.get("reused", []), r.get("common", [])
        if not r["matches"] and not reused and not common:
            print(
                f"{r['query']}: unique (no text at Jaccard >= {threshold:g}"
                + (f", no shared passage of {shortest}+ words)" if a.passages else ")")
            )
        for m in r["matches"]:
            print(f"{r['query']}\t{m['id']}\t{m['similarity']:.4f}")
        for m in reused:
            words = sum(p["words"] for p in m["passages"])
            print(
                f"{r['query']}\t{m['id']}\treuses {len(m['passages'])} passage"
                f"{'s' if len(m['passages']) > 1 else ''}, {words} words, "
                f"{m['share']:.1%} of the text"
            )
        for p in common:
            print(
                f"{r['query']}\tcommon passage of {p['words']} words (characters "
                f"{p['a'][0]}-{p['a'][1]}) in about {p['texts']} indexed texts, "
                f"e.g. {p['example']}"
            )
    return EXIT_OK


def cmd_index_remove(a: argparse.Namespace) -> int:
    idx = _open(a, a.index)
    try:
        gone = idx.storage.delete(list(a.ids))
        left = len(idx)
    finally:
        idx.close()
    missing = [i for i, ok in zip(a.ids, gone) if not ok]
    data = {"removed": sum(gone), "not_found": missing, "documents": left}
    print_summary(
        a,
        data,
        "neardup index remove",
        lambda: [
            ("removed", f"{sum(gone):,}"),
            ("not found", ", ".join(missing) or "none"),
            ("index", f"{left:,} documents"),
        ],
    )
    # ids that were not there are bad input only when the caller asked for them all to be there
    return InputError.exit_code if missing and a.strict else EXIT_OK


def cmd_index_stats(a: argparse.Namespace) -> int:
    idx = _open(a, a.index)
    try:
        st = idx.stats()
    finally:
        idx.close()
    print_summary(a, st, "neardup index stats", lambda: [(k, str(v)) for k, v in st.items()])
    return EXIT_OK


def _check_and_add(idx, doc_id: str, text: str, threshold: float | None) -> list:
    """``idx.check_and_add``, except for a record whose id the index holds already (a record
    streamed again, or one that `neardup index add` put there): it is a duplicate when the text
    under that id is among its near-duplicates, and an error otherwise (another text under an id
    in use). Either way nothing is added."""
    from ..index import DuplicateIdError

    try:
        return idx.check_and_add(doc_id, text, threshold)
    except DuplicateIdError:
        matches = idx.query(text, threshold)
        if any(m.id == doc_id for m in matches):
            return matches
        raise InputError(
            f"id {doc_id!r} is already in the index, with a text that this one does not repeat",
            field="id",
            reason=SkipReason.DUPLICATE_ID,
        ) from None


def cmd_stream(a: argparse.Namespace) -> int:
    """JSONL on stdin -> one decision per line on stdout; counts on stderr at the end."""
    from ..io import ReadOptions, record_stream

    # the same record path as every reader: a missing id field gives "stdin:LINE", and ids are
    # not checked for repeats here (the index rejects an id it already holds)
    options = ReadOptions(
        format="jsonl",
        text_fields=(a.text_field,),
        id_field=a.id_field,
        on_error="skip",
        default_id="stdin:{line}",
        unique_ids=False,
    )
    idx = _open(a, a.index, "stream")
    counts = {"lines": 0, "unique": 0, "duplicate": 0, "errors": 0}
    out = sys.stdout
    try:
        for item in record_stream(sys.stdin.buffer, options, name="<stdin>").with_errors():
            if isinstance(item, InputError) and item.reason is SkipReason.EMPTY_FILE:
                continue  # no line at all: nothing to answer
            counts["lines"] += 1
            error: InputError | None = None
            if isinstance(item, InputError):
                error = item
            else:
                doc_id = item.id
                try:
                    matches = (
                        idx.query(item.text, a.threshold)
                        if a.no_add
                        else _check_and_add(idx, doc_id, item.text, a.threshold)
                    )
                except InputError as e:  # the index's own, e.g. another text under a held id
                    error = e
            if error is not None:
                counts["errors"] += 1
                if a.on_error == "fail":
                    raise error
                out.write(
                    json.dumps({"line": item.line, "decision": "error", "error": str(error)}) + "\n"
                )
                continue
            decision = "duplicate" if matches else "unique"
            counts[decision] += 1
            out.write(
                json.dumps(
                    {
                        "id": doc_id,
                        "decision": decision,
                        "added": not matches and not a.no_add,
                        "matches": [{"id": m.id, "similarity": m.similarity} for m in matches],
                    }
                )
                + "\n"
            )
            if a.flush:
                out.flush()
    finally:
        idx.close()
        if not a.quiet:
            print(
                f"neardup stream: {counts['lines']:,} lines, {counts['unique']:,} unique, "
                f"{counts['duplicate']:,} duplicates, {counts['errors']:,} errors",
                file=sys.stderr,
            )
    return EXIT_OK


#: The top-level commands of this module and their help.
COMMANDS = {
    "index": "an online index: create, add, query, remove, stats",
    "stream": "deduplicate a JSONL stream on stdin against an index",
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``index`` (and its sub-commands) and ``stream`` to the CLI's sub-parsers."""
    ix = sub.add_parser(
        "index",
        help=COMMANDS["index"],
        description="An online near-duplicate index in an SQLite file or Redis "
        "(INDEX: a path, or redis://host:port/db?prefix=NAME).",
    )
    isub = ix.add_subparsers(
        dest="index_command", required=True, metavar="COMMAND", help="what to do with the index"
    )

    c = isub.add_parser(
        "create",
        help="create an index with its parameters",
        description="Create a new index; its parameters are stored in it.",
    )
    c.add_argument("index", metavar="INDEX", help="the new index: " + INDEX_HELP)
    add_param_arg(c, "store_text")
    add_param_arg(c, "passages")
    _add_redis_password(c)
    add_param_args(c, clustering=False)
    add_running_args(c, json_help="print the index's parameters as JSON on stdout")
    c.set_defaults(func=cmd_index_create, acyclic=True)

    ad = isub.add_parser(
        "add",
        help="add documents from files",
        description="Add the documents of JSONL, CSV, TSV or Parquet files or "
        "text folders, in transactional batches.",
    )
    ad.add_argument("index", metavar="INDEX", help=INDEX_HELP)
    _add_redis_password(ad)
    g = add_input_args(
        ad, id_help=ID_DETECT_HELP + " (row numbers must not be in the index already)"
    )
    g.add_argument(
        "--batch-size",
        type=int,
        default=1000,
        metavar="N",
        help="documents per transaction (default: 1000)",
    )
    add_running_args(ad)
    ad.set_defaults(
        func=cmd_index_add,
        on_interrupt="the documents added before it stay in "
        "the index (whole batches of --batch-size)",
        acyclic=True,
    )

    q = isub.add_parser(
        "query",
        help="near-duplicates of texts",
        description="Print the near-duplicates of each text: id and verified "
        "Jaccard similarity, highest first.",
    )
    q.add_argument("index", metavar="INDEX", help=INDEX_HELP)
    _add_redis_password(q)
    q.add_argument("text", nargs="*", metavar="TEXT", help="texts to query with")
    q.add_argument(
        "--file",
        action="append",
        metavar="PATH",
        help="a UTF-8 text file to query with (- for stdin); repeatable",
    )
    q.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="T",
        help="Jaccard similarity a match needs (default: the index's threshold)",
    )
    q.add_argument(
        "--top-k",
        type=int,
        default=None,
        metavar="N",
        help="at most this many matches per text, the most similar (default: all)",
    )
    q.add_argument(
        "--passages",
        action="store_true",
        help="also list the indexed texts each text copies passages from, with "
        "how many words and which share of the text (an index created with "
        "--passages)",
    )
    q.add_argument("--json", action="store_true", help="print the matches as JSON on stdout")
    q.set_defaults(func=cmd_index_query, acyclic=True, trailing="text")

    r = isub.add_parser("remove", help="remove documents by id")
    r.add_argument("index", metavar="INDEX", help=INDEX_HELP)
    _add_redis_password(r)
    r.add_argument("ids", nargs="+", metavar="ID", help="ids of the documents to remove")
    r.set_defaults(trailing="ids")  # ids after the options too (see cli.main)
    r.add_argument(
        "--strict", action="store_true", help=f"exit {InputError.exit_code} if an id was not found"
    )
    add_running_args(r)
    r.set_defaults(func=cmd_index_remove, acyclic=True)

    s = isub.add_parser("stats", help="parameters and counts")
    s.add_argument("index", metavar="INDEX", help=INDEX_HELP)
    _add_redis_password(s)
    s.add_argument(
        "--json", action="store_true", help="print the parameters and counts as JSON on stdout"
    )
    s.set_defaults(func=cmd_index_stats, acyclic=True)

    st = sub.add_parser(
        "stream",
        help=COMMANDS["stream"],
        description="Read JSONL records on stdin; for each, write a decision "
        "line: unique (added to the index) or duplicate (of which ids, with what "
        "similarity). A record whose id the index holds already is a duplicate "
        "if it is the text indexed under that id, else an error. Bad lines give "
        "an error line and are counted.",
    )
    st.add_argument("index", metavar="INDEX", help=INDEX_HELP)
    _add_redis_password(st)
    st.add_argument(
        "--text-field",
        default="text",
        metavar="FIELD",
        help="field holding the text (default: text)",
    )
    st.add_argument(
        "--id-field",
        default="id",
        metavar="FIELD",
        help="field holding the document id (default: id; a record without it "
        "gets the id stdin:LINE, its line number)",
    )
    st.add_argument(
        "--threshold",
        type=float,
        default=None,
        metavar="T",
        help="Jaccard similarity of a duplicate (default: the index's threshold)",
    )
    st.add_argument(
        "--no-add",
        action="store_true",
        help="only report the decisions; add no record to the index",
    )
    st.add_argument(
        "--on-error",
        choices=["fail", "skip"],
        default="skip",
        help="bad lines: write an error line and go on (skip, default) or stop",
    )
    st.add_argument(
        "--flush",
        action="store_true",
        help="flush stdout after every decision line (for a reader that waits for each answer)",
    )
    add_running_args(st, quiet_help="do not print the counts on stderr at the end", json_help=None)
    st.set_defaults(
        func=cmd_stream,
        on_interrupt="the records decided before it stay in the index",
        acyclic=True,
    )
