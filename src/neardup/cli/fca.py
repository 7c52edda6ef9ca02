"""``neardup fca``: near-duplicate clusters by Formal Concept Analysis (maximal frequent
itemsets of document images), with an optional evaluation against reference duplicates."""

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
COMMANDS = {"fca": "near-duplicate clusters by Formal Concept Analysis"}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``fca`` to the CLI's sub-parsers."""
    f = sub.add_parser(
        "fca",
        help=COMMANDS["fca"],
        description="Clusters of documents whose images (the N smallest shingle "
        "hashes) share at least K hashes: the largest such groups, found as "
        "maximal frequent itemsets of the table of which documents hold each "
        "hash (Formal Concept Analysis). Writes clusters-k<K>.jsonl and "
        "summary.json; "
        "with --truth, precision/recall/F1 per K (evaluation.csv, "
        ".md, .png).",
    )
    add_input_args(f, id_help=ID_DETECT_HELP)
    add_output_args(
        f,
        help="output directory: clusters-k<K>.jsonl and summary.json; with "
        "--truth also evaluation.csv, .md and .png",
    )
    f.add_argument(
        "--shingle",
        default="word:5",
        metavar="SPEC",
        help="shingles: word:K (K consecutive words) or char:K (K characters), "
        "':O' to start one every O (default: word:5, as neardup dedup)",
    )
    f.add_argument(
        "--image-size",
        type=int,
        default=256,
        metavar="N",
        help="hashes per document image (default: 256)",
    )
    f.add_argument(
        "--min-common",
        type=int,
        nargs="+",
        default=None,
        metavar="K",
        help="one or more thresholds, each giving its own clusters: the documents "
        "of a cluster share at least K of their image hashes (K <= "
        "--image-size; higher K, closer duplicates). Default: from the median "
        "image size N (--image-size, or fewer hashes for short texts), the K "
        "that two documents of Jaccard 0.8 reach with probability about 0.95, "
        "floor(N d - 1.645 sqrt(N d (1 - d))) with d = 2 x 0.8 / 1.8 (219 for "
        "N = 256, 107 for 128)",
    )
    f.add_argument(
        "--max-doc-freq",
        type=int,
        default=None,
        metavar="M",
        help="leave out hashes held by more than M images (boilerplate; counted in "
        "summary.json) (default: keep them all)",
    )
    f.add_argument(
        "--truth",
        default=None,
        metavar="FILE",
        help="reference duplicates: "
        "JSONL or CSV of id pairs (id_a,id_b / id,source_id) or id,cluster",
    )
    f.add_argument(
        "--baseline-clusters",
        type=int,
        nargs="+",
        default=None,
        metavar="C",
        help="with --truth: also evaluate bisecting k-means on TF-IDF vectors with C "
        "clusters, once per C (default: no baseline)",
    )
    f.add_argument(
        "--seed", type=int, default=0, help="random seed of the k-means baseline (default: 0)"
    )
    add_running_args(f.add_argument_group("running"))
    f.set_defaults(func=cmd_fca, linear_algebra=True)


def cmd_fca(a: argparse.Namespace) -> int:
    from ..config import ShingleConfig
    from ..jobs.fca import fca_files

    sh = ShingleConfig.parse(a.shingle)
    s = fca_files(
        a.inputs,
        a.output,
        min_common=a.min_common,
        length=sh.k,
        offset=sh.offset,
        image_size=a.image_size,
        kind=sh.kind,
        max_doc_freq=a.max_doc_freq,
        text_fields=a.text_field,
        id_field=a.id_field,
        input_format=a.input_format,
        encoding=a.encoding,
        on_error=a.on_error,
        truth=a.truth,
        baseline_clusters=a.baseline_clusters or (),
        seed=a.seed,
    )
    print_summary(a, s, "neardup fca", lambda: _summary_rows(a, s))
    return EXIT_OK


def _summary_rows(a: argparse.Namespace, s: dict) -> Rows:
    inv = s["inverted_table"]
    rows = [
        ("documents", f"{s['documents']:,}"),
        ("skipped", skipped_text(s["skipped"])),
        (
            "inverted table",
            f"{inv['shared_hashes']:,} of {inv['hashes']:,} hashes in 2+ "
            f"images -> {inv['transactions']:,} transactions "
            f"({inv['prepare_seconds']:.2f} s)",
        ),
    ]
    for r in s["results"]:
        name = f"FPmax K={r['threshold']}" if r["method"] == "fpmax" else f"k-means {r['clusters']}"
        scores = (
            f"; P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}" if "f1" in r else ""
        )
        rows.append((name, f"{r['clusters']:,} clusters, {r['seconds']:.2f} s{scores}"))
    rows.append(("outputs", str(a.output).rstrip("/") + "/"))
    return rows
