"""The ``neardup`` command line: a thin layer of argument parsing and progress over the library.

Exit codes: 0 success; 2 invalid arguments or parameters; 3 bad input (the message names the
file, line and field); 4 an output could not be written; 130 interrupted (see
:mod:`neardup.cli.common`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import __version__
from ..errors import ConfigError
from .common import (
    EXIT_OK,
    RichProgress,
    add_param_args,
    config_from_args,
    print_table,
    run_command,
    set_workers,
    skipped_text,
)


def _add_dedup_args(p: argparse.ArgumentParser) -> None:
    io = p.add_argument_group("input and output")
    io.add_argument("inputs", nargs="+", metavar="INPUT",
                    help="JSONL, CSV, TSV or Parquet files (optionally .gz or .zst), or folders of "
                         "text files (one document per file)")
    io.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="output directory")
    io.add_argument("--text-field", nargs="+", default=["text"], metavar="FIELD",
                    help="field(s) holding the text; several are joined with a newline "
                         "(default: text)")
    io.add_argument("--id-field", default=None, metavar="FIELD",
                    help="field holding the document id (default: the row number across all "
                         "inputs, or the file path inside a folder)")
    io.add_argument("--input-format", choices=["jsonl", "csv", "tsv", "parquet", "textdir"],
                    default=None, help="input format (default: from the file name)")
    io.add_argument("--encoding", default="utf-8", help="text encoding of the inputs (default: "
                    "utf-8; e.g. latin-1)")
    io.add_argument("--output-format", choices=["parquet", "jsonl", "csv"], default="parquet",
                    help="format of the clusters and pairs tables (default: parquet)")
    io.add_argument("--no-corpus", action="store_true",
                    help="do not write the deduplicated corpus")
    io.add_argument("--on-error", choices=["fail", "skip"], default="fail",
                    help="bad records: stop before writing anything (fail, default) or skip and "
                         "count them in the summary (skip)")
    io.add_argument("--chunk-size", type=int, default=10_000, metavar="N",
                    help="documents read and sketched per chunk (default: 10000)")
    io.add_argument("--save-index", default=None, metavar="PATH",
                    help="also build an online index of the documents (a new SQLite file) that "
                         "opens as neardup.Index and in `neardup index`/`serve`")
    add_param_args(p)
    rn = p.add_argument_group("running")
    rn.add_argument("--engine", choices=["local", "dask"], default="local",
                    help="run in this process (local, default) or on a Dask cluster (dask); the "
                         "results are identical")
    rn.add_argument("--scheduler", default=None, metavar="ADDRESS",
                    help="with --engine dask: tcp://HOST:PORT of a running Dask scheduler "
                         "(default: a LocalCluster of --dask-workers processes); inputs and -o "
                         "must be visible to its workers")
    rn.add_argument("--dask-workers", type=int, default=2, metavar="N",
                    help="worker processes of the LocalCluster (default: 2)")
    rn.add_argument("--work-dir", default=None, metavar="DIR",
                    help="with --engine dask: where the scratch folder goes, on storage every "
                         "worker sees (default: the output directory); removed at the end")
    rn.add_argument("--partitioned-output", action="store_true",
                    help="with --engine dask: write clusters/ and pairs/ as folders of Parquet "
                         "parts, one per partition, instead of one file each")
    rn.add_argument("--workers", type=int, default=None,
                    help="threads for the compiled stages (default: all cores)")
    rn.add_argument("--quiet", "-q", action="store_true", help="no progress bars or summary text")
    rn.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _print_summary(s: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="neardup dedup", show_header=False, box=None, padding=(0, 2))
    lsh = s["lsh"]
    sk = s["skipped"]
    rows = [
        ("documents", f"{s['documents']:,}  ({s['text_bytes'] / 1e6:,.1f} MB of text)"),
        ("skipped", f"{sk['total']:,}" + (f"  {sk['by_reason']}" if sk["total"] else "")),
        ("empty documents", f"{s['empty_documents']:,}"),
        ("exact duplicates", f"{s['exact_duplicates']:,}"),
        ("near duplicates", f"{s['near_duplicates']:,}"),
        ("kept", f"{s['kept']:,}  in {s['clusters']:,} clusters of 2+ "
                 f"(largest {s['largest_cluster']:,})"),
        ("LSH", f"{lsh['bands']} bands x {lsh['rows']} rows; expected recall "
                f"{lsh['expected_recall_at_threshold']:.3f} at J={lsh['threshold']:g}, "
                f"{lsh['expected_recall_at_threshold_plus_0.1']:.4f} at "
                f"J={min(lsh['threshold'] + 0.1, 1):g}"),
        ("candidates", f"{lsh['candidates']:,} -> {s['verified_pairs']:,} verified pairs"),
        ("capped buckets", f"{lsh['capped_buckets']:,}" + (
            f" ({lsh['capped_bucket_docs']:,} documents, largest {lsh['largest_bucket']:,})"
            if lsh["capped_buckets"] else "")),
        ("time", f"{s['seconds']:.2f} s  ({s['documents_per_s']:,.0f} docs/s, "
                 f"{s['mb_per_s']:.1f} MB/s)"),
        ("outputs", s["outputs"]["summary"].rsplit("/", 1)[0] + "/"),
    ]
    for k, v in rows:
        t.add_row(f"[bold]{k}[/bold]", v)
    Console().print(t)


def cmd_dedup(a: argparse.Namespace) -> int:
    from ..job import dedup_files

    config = config_from_args(a)
    set_workers(a.workers)
    for opt, given in (("--scheduler", a.scheduler), ("--work-dir", a.work_dir),
                       ("--partitioned-output", a.partitioned_output)):
        if given and a.engine != "dask":
            raise ConfigError(f"{opt} needs --engine dask")
    if a.engine == "dask" and a.save_index:
        raise ConfigError("--save-index is not supported with --engine dask yet; build the "
                          "index with `neardup index add`")
    progress = None if a.quiet else RichProgress()
    try:
        if a.engine == "dask":
            from ..engines.dask import dedup_dask

            summary = dedup_dask(
                a.inputs, a.output, config=config, text_fields=a.text_field,
                id_field=a.id_field, input_format=a.input_format, encoding=a.encoding,
                on_error=a.on_error, output_format=a.output_format,
                write_corpus=not a.no_corpus, scheduler=a.scheduler,
                n_workers=a.dask_workers, work_dir=a.work_dir,
                partitioned_tables=a.partitioned_output, progress=progress)
        else:
            summary = dedup_files(
                a.inputs, a.output, config=config, text_fields=a.text_field, id_field=a.id_field,
                input_format=a.input_format, encoding=a.encoding, on_error=a.on_error,
                chunk_size=a.chunk_size, output_format=a.output_format,
                write_corpus=not a.no_corpus, progress=progress, save_index=a.save_index,
            )
    finally:
        if progress is not None:
            progress.close()
    if a.json:
        print(json.dumps(summary, indent=2))
    elif not a.quiet:
        _print_summary(summary)
    return EXIT_OK


def _add_offer_input_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("inputs", nargs="+", metavar="OFFERS",
                   help="offer files (JSON, JSONL or CSV, optionally .gz; one per shop is fine), "
                   "or seed 000's TV format (an object modelID -> [offers])")
    p.add_argument("--format", dest="input_format", default="auto",
                   choices=["auto", "json", "jsonl", "csv", "tv"], help="input format (default: "
                   "from the file name and content)")
    p.add_argument("--id-field", default="id", help="id field or column (default: id; missing: "
                   "file:line)")
    p.add_argument("--title-field", default="title")
    p.add_argument("--description-field", default="description")
    p.add_argument("--shop-field", default="shop", help="shop field or column (default: shop; "
                   "missing: the file's name)")
    p.add_argument("--attributes-field", default="attributes", help="JSON: the attribute map "
                   "(featuresMap is also read)")
    p.add_argument("--attribute-columns", nargs="+", default=None, metavar="COLUMN",
                   help="CSV: the attribute columns (default: every other column)")
    p.add_argument("--encoding", default="auto", help="auto (UTF-8, latin-1 for lines that are "
                   "not UTF-8) or a codec name, used strictly")
    p.add_argument("--on-error", choices=["fail", "skip"], default="fail",
                   help="bad records: stop with an error (default) or skip and count them")
    p.add_argument("--qualify-ids", action="store_true", help="prefix ids with the file name, "
                   "for shops whose ids collide")
    p.add_argument("--num-perm", type=int, default=240, help="MinHash permutations (240)")
    p.add_argument("--bands", type=int, default=60, help="LSH bands (60)")
    p.add_argument("--rows", type=int, default=4, help="LSH rows per band (4)")
    p.add_argument("--max-df", type=float, default=0.2, help="title model words in more than "
                   "this fraction of offers are not used for LSH (0.2)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")


def _load_offers_from_args(a: argparse.Namespace, truth_field: str | None = None):
    from ..products.loaders import load_offers

    return load_offers(a.inputs, format=a.input_format, id_field=a.id_field,
                       title_field=a.title_field, description_field=a.description_field,
                       shop_field=a.shop_field, attributes_field=a.attributes_field,
                       attribute_columns=a.attribute_columns, truth_field=truth_field,
                       encoding=a.encoding, on_error=a.on_error, qualify_ids=a.qualify_ids)


def cmd_products_dedup(a: argparse.Namespace) -> int:
    from ..products.job import dedup_offers

    offers, _ = _load_offers_from_args(a)
    s = dedup_offers(offers, a.output, model=a.model, threshold=a.threshold,
                     num_perm=a.num_perm, bands=a.bands, rows=a.rows, max_df=a.max_df)
    if a.json:
        print(json.dumps(s, indent=2))
    elif not a.quiet:
        print_table("neardup products dedup", [
            ("offers", f"{s['offers']:,}  " + ", ".join(f"{k} {v:,}" for k, v in
                                                       s["shops"].items())),
            ("skipped", skipped_text(s["skipped"])),
            ("candidates", f"{s['candidates']:,}  ({s['fraction_of_comparisons']:.4f} of all "
                           "pairs)"),
            ("duplicates", f"{s['duplicate_pairs']:,} pairs in {s['clusters']:,} clusters "
                           f"({s['offers_in_clusters']:,} offers, largest "
                           f"{s['largest_cluster']})"),
            ("matcher", f"{s['matcher']}, threshold {s['threshold']:.3f}"),
            ("time", f"{s['seconds']:.2f} s"),
            ("outputs", str(a.output).rstrip("/") + "/  pairs.jsonl, clusters.csv, "
                        "summary.json"),
        ])
    return EXIT_OK


def cmd_products_eval(a: argparse.Namespace) -> int:
    from ..products.job import evaluate_offers
    from ..products.study import StudyConfig

    if a.truth and a.truth_pairs:
        raise ConfigError("give the truth as --truth COLUMN or --truth-pairs FILE, not both")
    # the TV format carries its truth (modelID) and returns it whatever --truth says
    offers, labels = _load_offers_from_args(a, truth_field=a.truth)
    if a.truth_pairs:
        from ..products.loaders import labels_from_pairs, load_truth_pairs

        got = load_truth_pairs(a.truth_pairs, offers, on_error=a.on_error)
        left, right = got[0], got[1]
        labels = labels_from_pairs(len(offers), left, right)
    if labels is None:
        raise ConfigError("no ground truth: give --truth COLUMN (a label per offer, such as a "
                          "model id) or --truth-pairs FILE (matching id pairs)")
    cfg = StudyConfig(bootstraps=a.bootstraps, seed=a.seed, num_perm=a.num_perm,
                      bands=a.bands, rows=a.rows, max_df=a.max_df)
    say = None if a.quiet or a.json else (lambda m: print(m, file=sys.stderr))
    s = evaluate_offers(offers, list(labels), a.output, cfg, save_model_to=a.save_model,
                        progress=say)
    if a.json:
        print(json.dumps(s, indent=2, default=float))
    elif not a.quiet:
        rows = [("offers", f"{s['offers']:,}, {s['true_pairs']:,} true duplicate pairs"),
                ("skipped", skipped_text(s["skipped"]))]
        for r in s["summary"]:
            rows.append((r["method"], f"F1 {r['f1']:.3f} ± {r['f1_sd']:.3f}  (P "
                         f"{r['precision']:.3f}, R {r['recall']:.3f}; PC {r['pc']:.3f} at "
                         f"fraction {r['fraction']:.4f})"))
        rows += [("time", f"{s['seconds']:.1f} s"),
                 ("report", s["outputs"]["report.md"])]
        print_table(f"neardup products eval ({a.bootstraps} bootstraps, test sets)", rows)
    return EXIT_OK


def cmd_fca(a: argparse.Namespace) -> int:
    from ..fca_job import fca_files

    s = fca_files(a.inputs, a.output, min_common=a.min_common, length=a.shingle_length,
                  offset=a.offset, image_size=a.image_size, kind=a.kind,
                  max_doc_freq=a.max_doc_freq, text_fields=a.text_field, id_field=a.id_field,
                  input_format=a.input_format, encoding=a.encoding, on_error=a.on_error,
                  truth=a.truth, baseline_clusters=a.baseline_clusters or (), seed=a.seed)
    if a.json:
        print(json.dumps(s, indent=2))
    elif not a.quiet:
        inv = s["inverted_table"]
        rows = [("documents", f"{s['documents']:,}"), ("skipped", skipped_text(s["skipped"])),
                ("inverted table", f"{inv['shared_hashes']:,} of {inv['hashes']:,} hashes in 2+ "
                                   f"images -> {inv['transactions']:,} transactions "
                                   f"({inv['prepare_seconds']:.2f} s)")]
        for r in s["results"]:
            name = (f"FPmax K={r['threshold']}" if r["method"] == "fpmax"
                    else f"k-means {r['clusters']}")
            scores = (f"; P {r['precision']:.3f} R {r['recall']:.3f} F1 {r['f1']:.3f}"
                      if "f1" in r else "")
            rows.append((name, f"{r['clusters']:,} clusters, {r['seconds']:.2f} s{scores}"))
        rows.append(("outputs", str(a.output).rstrip("/") + "/"))
        print_table("neardup fca", rows)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="neardup", description="Find near-duplicate documents.")
    p.add_argument("--version", action="version", version=f"neardup {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("dedup", help="find near-duplicate clusters in a corpus and write a "
                       "deduplicated copy", description="Find near-duplicate clusters in a corpus "
                       "and write clusters, pairs, a deduplicated corpus and summary.json.")
    _add_dedup_args(d)
    d.set_defaults(func=cmd_dedup)
    pr = sub.add_parser("products", help="duplicate product offers across web shops",
                        description="Duplicate product offers across web shops.")
    psub = pr.add_subparsers(dest="products_command", required=True, metavar="COMMAND")
    pd = psub.add_parser("dedup", help="find duplicate offers; write pairs with evidence and "
                         "clusters", description="Find duplicate offers and write pairs.jsonl "
                         "(with the evidence for each pair), clusters.csv and summary.json.")
    _add_offer_input_args(pd)
    pd.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    pd.add_argument("--model", default=None, metavar="PATH", help="a matcher saved by "
                    "`neardup products eval --save-model` (default: the training-free rule "
                    "score)")
    pd.add_argument("--threshold", type=float, default=None, help="score threshold (default: "
                    "the model's tuned one, or 0.45 for the rule score)")
    pd.set_defaults(func=cmd_products_dedup)
    pe = psub.add_parser("eval", help="bootstrap study against a ground truth: tables and "
                         "plots", description="Run seed 000's bootstrap study: thresholds tuned "
                         "on each training part, figures on the test parts; writes report.md, "
                         "CSV and markdown tables and PNG plots.")
    _add_offer_input_args(pe)
    pe.add_argument("-o", "--output", required=True, metavar="REPORTDIR")
    pe.add_argument("--truth", default=None, metavar="COLUMN", help="the label field or column "
                    "(offers with equal labels are duplicates; the TV format's modelID is read "
                    "by default); never used as a feature")
    pe.add_argument("--truth-pairs", default=None, metavar="FILE", help="a CSV or JSONL file "
                    "of matching id pairs")
    pe.add_argument("--bootstraps", type=int, default=5)
    pe.add_argument("--seed", type=int, default=0)
    pe.add_argument("--save-model", default=None, metavar="PATH", help="also fit the matcher "
                    "on all labelled pairs and save it for `products dedup --model`")
    pe.set_defaults(func=cmd_products_eval)
    f = sub.add_parser("fca", help="near-duplicate clusters by Formal Concept Analysis "
                       "(seed 001)", description="Clusters of documents whose images (the N "
                       "smallest shingle hashes) share at least K hashes: maximal frequent "
                       "itemsets of the inverted table (FPmax). Writes clusters-k<K>.jsonl and "
                       "summary.json; with --truth, precision/recall/F1 per K (evaluation.csv, "
                       ".md, .png).")
    f.add_argument("inputs", nargs="+", metavar="INPUT")
    f.add_argument("-o", "--output", required=True, metavar="OUTDIR")
    f.add_argument("--shingle-length", type=int, default=10, metavar="L",
                   help="units per shingle (default: 10)")
    f.add_argument("--offset", type=int, default=1, metavar="O",
                   help="units between the starts of two shingles (default: 1)")
    f.add_argument("--kind", choices=["word", "char"], default="word")
    f.add_argument("--image-size", type=int, default=256, metavar="N",
                   help="hashes per document image (default: 256)")
    f.add_argument("--min-common", type=int, nargs="+", required=True, metavar="K",
                   help="one or more thresholds: common image hashes of a cluster")
    f.add_argument("--max-doc-freq", type=int, default=None, metavar="M",
                   help="leave out hashes held by more than M images (boilerplate); counted")
    f.add_argument("--truth", default=None, metavar="FILE", help="reference duplicates: "
                   "JSONL or CSV of id pairs (id_a,id_b / id,source_id) or id,cluster")
    f.add_argument("--baseline-clusters", type=int, nargs="+", default=None, metavar="C",
                   help="also evaluate bisecting k-means on TF-IDF with C clusters")
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--text-field", nargs="+", default=["text"], metavar="FIELD")
    f.add_argument("--id-field", default=None, metavar="FIELD")
    f.add_argument("--input-format", choices=["jsonl", "csv", "tsv", "parquet", "textdir"],
                   default=None)
    f.add_argument("--encoding", default="utf-8")
    f.add_argument("--on-error", choices=["fail", "skip"], default="fail")
    f.add_argument("--json", action="store_true")
    f.add_argument("--quiet", "-q", action="store_true")
    f.set_defaults(func=cmd_fca)
    from .index import add_index_commands

    add_index_commands(sub)
    from .analyze import add_analyze_commands

    add_analyze_commands(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run_command(args)
