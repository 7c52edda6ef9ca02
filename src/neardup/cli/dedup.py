"""``neardup dedup``: near-duplicate clusters, pairs and a deduplicated corpus from files, in this
process or on a Dask cluster."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigError
from .common import (
    EXIT_OK,
    ID_DETECT_HELP,
    RichProgress,
    Rows,
    add_input_args,
    add_output_args,
    add_param_arg,
    add_param_args,
    add_running_args,
    config_from_args,
    print_summary,
    set_workers,
    skipped_text,
)

#: The top-level commands of this module and their help.
COMMANDS = {"dedup": "find near-duplicate clusters in a corpus and write a deduplicated copy"}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``dedup`` to the CLI's sub-parsers."""
    d = sub.add_parser(
        "dedup",
        help=COMMANDS["dedup"],
        description="Find near-duplicate clusters in a corpus and write clusters, "
        "pairs, a deduplicated corpus and summary.json.",
    )
    _add_dedup_args(d)
    d.set_defaults(
        func=cmd_dedup,
        on_interrupt="no output of this run was left behind, nor its scratch folder; "
        "run the same command again to start over",
        acyclic=True,
    )


def _add_dedup_args(p: argparse.ArgumentParser) -> None:
    from ..io import OUTPUT_FORMATS

    g = add_input_args(
        p,
        id_help=ID_DETECT_HELP,
        on_error_help="bad records: stop before writing anything (fail, "
        "default) or skip and count them in the summary (skip)",
    )
    g.add_argument(
        "--chunk-size",
        type=int,
        default=10_000,
        metavar="N",
        help="documents read and sketched per chunk (default: 10000)",
    )
    g = add_output_args(p, help="output directory")
    g.add_argument(
        "--output-format",
        choices=OUTPUT_FORMATS,
        default="parquet",
        help="format of the clusters and pairs tables (default: parquet)",
    )
    g.add_argument("--no-corpus", action="store_true", help="do not write the deduplicated corpus")
    add_param_arg(g, "pairs")
    add_param_arg(g, "pairs_max_group")
    g.add_argument(
        "--save-index",
        default=None,
        metavar="PATH",
        help="also build an online index of the documents (a new SQLite file) that "
        "opens as neardup.Index and in `neardup index`/`serve`",
    )
    add_param_args(p)
    rn = p.add_argument_group("running")
    rn.add_argument(
        "--engine",
        choices=["local", "dask"],
        default="local",
        help="run in this process (local, default) or on a Dask cluster (dask); the "
        "results are identical",
    )
    rn.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="with --engine dask: tcp://HOST:PORT of a running Dask scheduler "
        "(default: a LocalCluster of --dask-workers processes); inputs, -o "
        "and --work-dir must be visible to its workers at the same path "
        "(relative paths are taken from this folder; every worker checks it "
        "sees them before the run starts)",
    )
    rn.add_argument(
        "--dask-workers",
        type=int,
        default=2,
        metavar="N",
        help="worker processes of the LocalCluster (default: 2)",
    )
    rn.add_argument(
        "--work-dir",
        default=None,
        metavar="DIR",
        help="where the scratch folder goes (default: the output directory); with "
        "--engine dask on storage every worker sees; removed at the end",
    )
    rn.add_argument(
        "--memory-budget",
        default=None,
        metavar="SIZE",
        help="memory for the run's band keys and shingle fingerprints (e.g. 4G, 512M; "
        "default: a quarter of this machine's memory); past it they move to the "
        "scratch folder and are read back in order, with the same results",
    )
    rn.add_argument(
        "--partitioned-output",
        action="store_true",
        help="with --engine dask: write clusters/ and pairs/ as folders of Parquet "
        "parts, one per partition, and each input file's deduplicated output "
        "as a folder of parts in its format, instead of one file each",
    )
    add_running_args(rn, workers=True, quiet_help="no progress bars or summary text")


def _summary_rows(s: dict[str, Any]) -> Rows:
    from ..io import ids_text

    lsh = s["lsh"]
    return [
        ("documents", f"{s['documents']:,}  ({s['text_bytes'] / 1e6:,.1f} MB of text)"),
        ("ids", ids_text(s["ids"])),
        ("skipped", skipped_text(s["skipped"])),
        ("empty documents", f"{s['empty_documents']:,}"),
        ("exact duplicates", f"{s['exact_duplicates']:,}"),
        ("near duplicates", f"{s['near_duplicates']:,}"),
        (
            "kept",
            f"{s['kept']:,}  in {s['clusters']:,} clusters of 2+ "
            f"(largest {s['largest_cluster']:,})",
        ),
        (
            "LSH",
            f"{lsh['bands']} bands x {lsh['rows']} rows; expected recall "
            f"{lsh['expected_recall_at_threshold']:.4f} at J={lsh['threshold']:g}, "
            f"{lsh['expected_recall_at_threshold_plus_0.05']:.4f} at "
            f"J={min(lsh['threshold'] + 0.05, 1):g}, "
            f"{lsh['expected_recall_at_threshold_plus_0.1']:.4f} at "
            f"J={min(lsh['threshold'] + 0.1, 1):g}",
        ),
        ("candidates", f"{lsh['candidates']:,} -> {s['verified_pairs']:,} verified pairs"),
        ("pairs", pairs_text(s["pairs"])),
        (
            "capped buckets",
            f"{lsh['capped_buckets']:,}"
            + (
                f" ({lsh['capped_bucket_docs']:,} documents, largest {lsh['largest_bucket']:,})"
                if lsh["capped_buckets"]
                else ""
            ),
        ),
        (
            "time",
            f"{s['seconds']:.2f} s  ({s['documents_per_s']:,.0f} docs/s, {s['mb_per_s']:.1f} MB/s)",
        ),
        ("outputs", s["outputs"]["summary"].rsplit("/", 1)[0] + "/"),
    ]


def pairs_text(p: dict[str, Any]) -> str:
    """The pairs table's line of the summary: its rows, and the pairs it leaves out and why."""
    text = (
        f"{p['rows']:,} written ({p['verified']:,} verified, {p['identical']:,} identical "
        f"texts; {p['implied']:,} implied by exact duplicates)"
    )
    if p["left_out"]:
        why = (
            "--pairs edges"
            if p["mode"] == "edges"
            else f"{p['groups_over_max']:,} exact groups of more than {p['max_group']:,} documents, "
            f"largest {p['largest_exact_group']:,}"
        )
        text += f"; {p['left_out']:,} implied pairs left out ({why})"
    return text


def cmd_dedup(a: argparse.Namespace) -> int:
    from ..jobs.dedup import dedup_files

    config = config_from_args(a)
    set_workers(a.workers)
    for opt, given in (
        ("--scheduler", a.scheduler),
        ("--partitioned-output", a.partitioned_output),
    ):
        if given and a.engine != "dask":
            raise ConfigError(f"{opt} needs --engine dask")
    if a.engine == "dask":
        from ..io.streams import is_stream

        streams = [p for p in a.inputs if is_stream(p)]
        if streams:
            raise ConfigError(
                f"{streams[0]}: standard input and pipes are read by the local "
                "engine only (Dask workers read files); write the stream to a file "
                "that every worker sees, or leave out --engine dask"
            )
    if a.engine == "dask" and a.memory_budget is not None:
        raise ConfigError(
            "--memory-budget is the local engine's: the Dask engine's workers keep their "
            "state in the scratch folder (--work-dir) already"
        )
    if a.engine == "dask" and a.save_index:
        raise ConfigError(
            "--save-index is not supported with --engine dask yet; build the "
            "index with `neardup index add`"
        )
    progress = None if a.quiet else RichProgress()
    try:
        if a.engine == "dask":
            from ..engines.dask import dedup_dask

            summary = dedup_dask(
                a.inputs,
                a.output,
                config=config,
                text_fields=a.text_field,
                id_field=a.id_field,
                input_format=a.input_format,
                encoding=a.encoding,
                on_error=a.on_error,
                output_format=a.output_format,
                write_corpus=not a.no_corpus,
                scheduler=a.scheduler,
                n_workers=a.dask_workers,
                work_dir=a.work_dir,
                partitioned_tables=a.partitioned_output,
                progress=progress,
            )
        else:
            summary = dedup_files(
                a.inputs,
                a.output,
                config=config,
                text_fields=a.text_field,
                id_field=a.id_field,
                input_format=a.input_format,
                encoding=a.encoding,
                on_error=a.on_error,
                chunk_size=a.chunk_size,
                output_format=a.output_format,
                write_corpus=not a.no_corpus,
                progress=progress,
                save_index=a.save_index,
                memory_budget=a.memory_budget,
                work_dir=a.work_dir,
            )
    finally:
        if progress is not None:
            progress.close()
    print_summary(a, summary, "neardup dedup", lambda: _summary_rows(summary))
    return EXIT_OK
