"""``neardup reuse``: pairs of documents that share passages (copied paragraphs inside
otherwise different texts), with the passages' character ranges."""

from __future__ import annotations

import argparse

from .common import (
    EXIT_OK,
    ID_DETECT_HELP,
    Rows,
    add_input_args,
    add_output_args,
    add_running_args,
    print_summary,
    skipped_text,
)

#: The top-level commands of this module and their help.
COMMANDS = {
    "reuse": "pairs of documents that share passages (copied text inside different documents)"
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``reuse`` to the CLI's sub-parsers."""
    from ..io import OUTPUT_FORMATS

    r = sub.add_parser(
        "reuse",
        help=COMMANDS["reuse"],
        description="Find every pair of documents that shares a passage of at "
        "least --min-words words (word k-grams winnowed over a window: every "
        "shared run of window + k - 1 words is found), merged across small "
        "edits. Writes passages, pairs and summary.json.",
    )
    add_input_args(r, id_help=ID_DETECT_HELP)
    g = add_output_args(r, help="output directory: passages and pairs tables, summary.json")
    g.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="parquet",
        help="format of the passages and pairs tables (default: parquet)",
    )
    p = r.add_argument_group("passages")
    p.add_argument(
        "--k", type=int, default=5, metavar="K", help="words per fingerprinted k-gram (default: 5)"
    )
    p.add_argument(
        "--window",
        type=int,
        default=12,
        metavar="W",
        help="k-grams per winnowing window; every shared run of W + K - 1 words is "
        "found (default: 12)",
    )
    p.add_argument(
        "--min-words",
        type=int,
        default=None,
        metavar="N",
        help="the shortest passage reported, in words, at least W + K - 1 "
        "(default: W + K - 1 = 16)",
    )
    p.add_argument(
        "--max-gap",
        type=int,
        default=3,
        metavar="G",
        help="changed, inserted or dropped words bridged inside a passage (default: 3)",
    )
    p.add_argument(
        "--strip-html",
        action="store_true",
        help="HTML tags separate words like spaces (the character ranges stay "
        "those of the original texts)",
    )
    p.add_argument(
        "--max-doc-freq",
        type=int,
        default=100,
        metavar="M",
        help="a fingerprint kept by more than M documents (a common phrase) "
        "proposes no pair; counted in summary.json (default: 100)",
    )
    add_running_args(r.add_argument_group("running"))
    r.set_defaults(func=cmd_reuse)


def _rows(s: dict) -> Rows:
    return [
        ("documents", f"{s['documents']:,}  ({s['words']:,} words)"),
        ("skipped", skipped_text(s["skipped"])),
        (
            "fingerprints",
            f"{s['fingerprints']:,}  ({s['common_fingerprints']:,} too common to propose pairs)",
        ),
        ("candidates", f"{s['candidate_pairs']:,} pairs"),
        (
            "reuse",
            f"{s['pairs']:,} pairs share {s['passages']:,} passages of {s['min_words']}+ words",
        ),
        ("time", f"{s['seconds']:.2f} s"),
        ("outputs", s["outputs"]["summary"].rsplit("/", 1)[0] + "/"),
    ]


def cmd_reuse(a: argparse.Namespace) -> int:
    from ..jobs.reuse import reuse_files
    from ..reuse import PassageConfig

    cfg = PassageConfig(
        k=a.k, window=a.window, min_words=a.min_words, max_gap=a.max_gap, strip_html=a.strip_html
    )
    s = reuse_files(
        a.inputs,
        a.output,
        config=cfg,
        max_doc_freq=a.max_doc_freq,
        text_fields=a.text_field,
        id_field=a.id_field,
        input_format=a.input_format,
        encoding=a.encoding,
        on_error=a.on_error,
        output_format=a.output_format,
    )
    print_summary(a, s, "neardup reuse", lambda: _rows(s))
    return EXIT_OK
