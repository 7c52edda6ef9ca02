"""``neardup analyze scurve|params|recall|bands|grid|distribution``: experiments for choosing
the LSH parameters. Each command writes ``<name>.png``, ``<name>.csv`` and ``<name>.md`` into
OUTDIR; ``--json`` prints the numbers, otherwise a short table (``--quiet``: nothing)."""

from __future__ import annotations

import argparse
import inspect
import json
import sys
import time
from typing import Any

from ..config import DedupConfig
from ..errors import ConfigError
from .common import EXIT_OK, add_input_args, add_output_args, add_running_args, print_table


def _default(func, name: str) -> Any:
    """The default of ``func``'s parameter ``name``: an analysis runs with the library's defaults
    unless an option says otherwise."""
    return inspect.signature(func).parameters[name].default


def _spaced(values, shorten: bool = False) -> str:
    """``values`` as the command line takes them; with ``shorten``, a long evenly spaced run as
    ``first second ... last``."""
    words = [str(v) for v in values]
    return " ".join(words[:2] + ["..."] + words[-1:] if shorten and len(words) > 4 else words)


def _common(p: argparse.ArgumentParser) -> None:
    g = add_output_args(p, help="directory for <name>.png, <name>.csv and <name>.md (created)")
    add_running_args(g, json_help="print the numbers as JSON on stdout")


def _corpus_args(p: argparse.ArgumentParser, max_docs_help: str) -> None:
    from ..analyze.corpus import load_corpus

    d = DedupConfig()
    sample_seed = _default(load_corpus, "seed")
    g = add_input_args(p)
    g.add_argument("--max-docs", type=int, default=None, metavar="N", help=max_docs_help)
    g.add_argument(
        "--sample-seed",
        type=int,
        default=sample_seed,
        help=f"seed of the document sample drawn by --max-docs (default: {sample_seed})",
    )
    p.add_argument(
        "--num-perm",
        type=int,
        default=d.sketch.num_perm,
        metavar="K",
        help=f"MinHash values per document (default: {d.sketch.num_perm})",
    )
    p.add_argument(
        "--seed",
        dest="sketch_seed",
        type=int,
        default=d.sketch.seed,
        help=f"seed of the MinHash functions (default: {d.sketch.seed}, as `neardup dedup --seed`)",
    )


def _shingle_arg(p: argparse.ArgumentParser) -> None:
    shingle = str(DedupConfig().shingle)
    p.add_argument(
        "--shingle",
        default=shingle,
        metavar="SPEC",
        help=f"word:K, char:K, word:K:OFFSET or char:K:OFFSET (default: {shingle})",
    )


def _min_recall_arg(p: argparse.ArgumentParser) -> None:
    min_recall = DedupConfig().lsh.min_recall
    p.add_argument(
        "--min-recall",
        type=float,
        default=min_recall,
        metavar="P",
        help="neardup's recall floor at the threshold when it chooses bands x rows "
        f"(default: {min_recall})",
    )


#: The top-level commands of this module and their help.
COMMANDS = {
    "analyze": "parameter experiments: S-curves, bands x rows, LSH recall, duplicates per threshold"
}


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add ``analyze`` and its six sub-commands to the CLI's sub-parsers."""
    from ..analyze.corpus import (
        DEFAULT_BIN_EDGES,
        MAX_BRUTE_FORCE_DOCS,
        bands,
        distribution,
        grid,
        recall,
    )
    from ..analyze.curves import DEFAULT_BANDS_ROWS, DEFAULT_POINTS, params

    an = sub.add_parser(
        "analyze",
        help=COMMANDS["analyze"],
        description="Experiments for choosing the shingle, MinHash and LSH "
        "parameters. Each command writes <name>.png, <name>.csv and <name>.md "
        "into OUTDIR.",
    )
    asub = an.add_subparsers(
        dest="analyze_command", required=True, metavar="ANALYSIS", help="the experiment to run"
    )

    p = asub.add_parser(
        "scurve",
        help="P(candidate) against Jaccard for several bands x rows",
        description="The S-curve 1-(1-s^r)^b of each BANDSxROWS, with a table "
        "of the probability at several similarities and the approximate "
        "threshold (1/b)^(1/r).",
    )
    _common(p)
    bands_rows = [f"{b}x{r}" for b, r in DEFAULT_BANDS_ROWS]
    p.add_argument(
        "--bands-rows",
        nargs="+",
        metavar="BxR",
        default=bands_rows,
        help=f"bands x rows settings (default: {_spaced(bands_rows)})",
    )
    p.add_argument(
        "--points",
        nargs="+",
        type=float,
        metavar="S",
        default=list(DEFAULT_POINTS),
        help="similarities of the table's columns (default: "
        f"{_spaced(DEFAULT_POINTS, shorten=True)})",
    )
    p.set_defaults(func=cmd_scurve, linear_algebra=True)

    p = asub.add_parser(
        "params",
        help="neardup's choice of bands x rows against datasketch's",
        description="For each threshold: neardup's bands x rows (recall floor "
        "--min-recall) and datasketch's _optimal_param (weights FP/FN), with "
        "their false-positive and false-negative areas and the recall at the "
        "threshold and at threshold+0.1.",
    )
    _common(p)
    thresholds = list(_default(params, "thresholds"))
    p.add_argument(
        "--thresholds",
        "--threshold",
        nargs="+",
        type=float,
        default=thresholds,
        metavar="T",
        dest="thresholds",
        help=f"Jaccard thresholds (default: {_spaced(thresholds)})",
    )
    num_perm = DedupConfig().sketch.num_perm
    p.add_argument(
        "--num-perm",
        type=int,
        default=num_perm,
        metavar="K",
        help=f"MinHash values per document (default: {num_perm})",
    )
    _min_recall_arg(p)
    weights = list(_default(params, "weights"))
    p.add_argument(
        "--weights",
        nargs=2,
        type=float,
        default=weights,
        metavar=("FP", "FN"),
        help="datasketch's false-positive and false-negative weights (default: "
        f"{_spaced(weights)})",
    )
    p.set_defaults(func=cmd_params, linear_algebra=True)

    p = asub.add_parser(
        "recall",
        help="LSH candidates against brute-force Jaccard, per similarity bin",
        description="Compare all pairs of documents (exact "
        "Jaccard of the shingle sets) with the LSH candidates of each setting: "
        "per similarity bin, the true pairs, those LSH found and the number the "
        "S-curve expects.",
    )
    _common(p)
    _corpus_args(
        p,
        "brute force limit: more documents than this is an error unless "
        "--max-docs is given, which draws a sample of N documents (default limit: "
        f"{MAX_BRUTE_FORCE_DOCS})",
    )
    _shingle_arg(p)
    thresholds = list(_default(recall, "thresholds"))
    p.add_argument(
        "--thresholds",
        "--threshold",
        nargs="+",
        type=float,
        default=thresholds,
        metavar="T",
        dest="thresholds",
        help=f"thresholds; each gives neardup's bands x rows (default: {_spaced(thresholds)})",
    )
    p.add_argument(
        "--bands-rows",
        nargs="+",
        default=[],
        metavar="BxR",
        help="also these fixed settings, e.g. 20x5 (default: none)",
    )
    p.add_argument(
        "--bins",
        nargs="+",
        type=float,
        metavar="EDGE",
        default=list(DEFAULT_BIN_EDGES),
        help=f"similarity bin edges (default: {_spaced(DEFAULT_BIN_EDGES)})",
    )
    _min_recall_arg(p)
    p.set_defaults(func=cmd_recall, linear_algebra=True)

    p = asub.add_parser(
        "bands",
        help="candidate pairs against the number of bands",
        description="Sketch once, then band the signature as B bands of "
        "num_perm // B rows for each B: candidate pairs and true candidates "
        "(exact Jaccard >= --threshold).",
    )
    _common(p)
    _corpus_args(p, "use a sample of N documents (seeded by --seed; default: all)")
    _shingle_arg(p)
    bands_list = list(_default(bands, "bands_list"))
    p.add_argument(
        "--bands-list",
        nargs="+",
        type=int,
        metavar="B",
        default=bands_list,
        help=f"numbers of bands (default: {_spaced(bands_list)})",
    )
    threshold = _default(bands, "threshold")
    p.add_argument(
        "--threshold",
        type=float,
        default=threshold,
        metavar="T",
        help=f"Jaccard threshold of a true candidate (default: {threshold})",
    )
    p.set_defaults(func=cmd_bands, linear_algebra=True)

    p = asub.add_parser(
        "grid",
        help="duplicates per threshold and shingle size",
        description="Run neardup dedup once per shingle size at the lowest "
        "threshold and count the verified pairs and the documents with at "
        "least one near-duplicate at each threshold.",
    )
    _common(p)
    _corpus_args(p, "use a sample of N documents (seeded by --seed; default: all)")
    thresholds = list(_default(grid, "thresholds"))
    p.add_argument(
        "--thresholds",
        "--threshold",
        nargs="+",
        type=float,
        metavar="T",
        default=thresholds,
        dest="thresholds",
        help=f"thresholds (default: {_spaced(thresholds, shorten=True)})",
    )
    sizes = list(_default(grid, "sizes"))
    p.add_argument(
        "--shingle-sizes",
        nargs="+",
        type=int,
        default=sizes,
        metavar="K",
        help=f"shingle sizes (default: {_spaced(sizes)})",
    )
    kind = _default(grid, "kind")
    p.add_argument(
        "--kind",
        choices=["word", "char"],
        default=kind,
        help=f"word or character shingles (default: {kind})",
    )
    _min_recall_arg(p)
    p.set_defaults(func=cmd_grid, linear_algebra=True)

    p = asub.add_parser(
        "distribution",
        help="Jaccard similarity of candidates and verified pairs",
        description="Histogram of the exact Jaccard similarity of all "
        "LSH candidate pairs and of the verified pairs (>= --threshold).",
    )
    _common(p)
    _corpus_args(p, "use a sample of N documents (seeded by --seed; default: all)")
    _shingle_arg(p)
    threshold = _default(distribution, "threshold")
    p.add_argument(
        "--threshold",
        type=float,
        default=threshold,
        metavar="T",
        help=f"verification threshold; also chooses bands x rows (default: {threshold})",
    )
    p.add_argument(
        "--bands-rows",
        default=None,
        metavar="BxR",
        help="band the signatures this way instead (e.g. 20x5)",
    )
    n_bins = _default(distribution, "bins")
    p.add_argument(
        "--bins",
        type=int,
        default=n_bins,
        metavar="N",
        help=f"histogram bins over [0, 1] (default: {n_bins})",
    )
    _min_recall_arg(p)
    p.set_defaults(func=cmd_distribution, linear_algebra=True)


# -- running ------------------------------------------------------------------------------------


def _load(a: argparse.Namespace, max_docs: int | None):
    from ..analyze.corpus import load_corpus

    if max_docs is not None and max_docs < 2:
        raise ConfigError(f"--max-docs={max_docs} is invalid: an integer >= 2")
    return load_corpus(
        a.inputs,
        text_fields=tuple(a.text_field),
        id_field=a.id_field,
        max_docs=max_docs,
        seed=a.sample_seed,
        fmt=a.input_format,
        encoding=a.encoding,
        on_error=a.on_error,
    )


def _corpus_summary(analysis, corpus) -> None:
    analysis.summary["documents_read"] = corpus.read
    analysis.summary["sampled"] = corpus.sampled
    analysis.summary["skipped"] = corpus.skipped["total"]
    analysis.summary["skipped_by_reason"] = corpus.skipped["by_reason"]


def _finish(a: argparse.Namespace, analysis, t0: float, lines: list[tuple[str, str]]) -> int:
    from .._extras import NO_FIGURES
    from ..analyze.output import write_analysis

    paths = write_analysis(analysis, a.output)
    if "png" not in paths:
        print(f"neardup analyze {analysis.name}: {NO_FIGURES}", file=sys.stderr)
    seconds = time.perf_counter() - t0
    if a.json:
        data = analysis.to_dict()
        data["outputs"] = paths
        data["seconds"] = round(seconds, 3)
        print(json.dumps(data, indent=2))
    elif not a.quiet:
        lines = lines + [("outputs", ", ".join(paths.values())), ("time", f"{seconds:.2f} s")]
        print_table(f"neardup analyze {analysis.name}: {analysis.title}", lines)
    return EXIT_OK


def cmd_scurve(a: argparse.Namespace) -> int:
    from ..analyze.curves import parse_bands_rows, scurve

    t0 = time.perf_counter()
    res = scurve([parse_bands_rows(s) for s in a.bands_rows], a.points)
    lines = [
        (
            f"{r['bands']} x {r['rows']}",
            f"threshold ≈ {r['threshold_approx']:.3f}; "
            + ", ".join(
                f"P({s:g}) = {r[f'p@{s:g}']:.4f}" for s in a.points if s in (0.5, 0.7, 0.8, 0.9)
            ),
        )
        for r in res.rows
    ]
    lines.append(("20 x 5 at J = 0.8", f"{res.summary['p_20x5_at_0.8']:.4f}"))
    return _finish(a, res, t0, lines)


def cmd_params(a: argparse.Namespace) -> int:
    from ..analyze.curves import params

    t0 = time.perf_counter()
    res = params(a.thresholds, a.num_perm, a.min_recall, tuple(a.weights))
    lines = [
        (
            f"t={r['threshold']:g} {r['method'].split(' (')[0]}",
            f"{r['bands']} x {r['rows']}: recall {r['recall_at_threshold']:.3f} at t, "
            f"{r['recall_at_threshold_plus_0.1']:.3f} at t+0.1; FP area "
            f"{r['fp_area']:.4f}, FN area {r['fn_area']:.4f}",
        )
        for r in res.rows
    ]
    return _finish(a, res, t0, lines)


def cmd_recall(a: argparse.Namespace) -> int:
    from ..analyze.corpus import MAX_BRUTE_FORCE_DOCS, recall
    from ..analyze.curves import parse_bands_rows

    t0 = time.perf_counter()
    bands_rows = [parse_bands_rows(s) for s in a.bands_rows]
    corpus = _load(a, a.max_docs)
    limit = a.max_docs if a.max_docs is not None else MAX_BRUTE_FORCE_DOCS
    if a.max_docs is None and len(corpus.ids) > limit:
        raise ConfigError(
            f"recall compares all pairs of documents: {len(corpus.ids):,} documents is more "
            f"than the {limit:,} it compares by default; pass --max-docs N to sample N "
            f"documents (seeded by --seed), or --max-docs {len(corpus.ids)} to compare them all"
        )
    res = recall(
        corpus.texts,
        corpus.ids,
        thresholds=a.thresholds,
        bands_rows=bands_rows,
        bins=a.bins,
        shingle=a.shingle,
        num_perm=a.num_perm,
        seed=a.sketch_seed,
        min_recall=a.min_recall,
        max_docs=max(limit, len(corpus.ids)),
    )
    _corpus_summary(res, corpus)
    lines = [
        (
            "documents",
            f"{res.summary['documents']:,}"
            + (f" (sample of {corpus.read:,})" if corpus.sampled else "")
            + f", {res.summary['pairs_compared']:,} pairs compared",
        ),
        (
            "true pairs per bin",
            ", ".join(
                f"{r['bin']}: {r['true_pairs']}"
                for r in res.rows
                if r["setting"] == res.rows[0]["setting"]
            ),
        ),
    ]
    for s in res.summary["settings"]:
        if "threshold" in s:
            rec = s["recall_at_threshold"]
            text = (
                f"{s['found_at_threshold']:,} of {s['true_pairs_at_threshold']:,} pairs ≥ "
                f"{s['threshold']:g} found"
                + (
                    f" (recall {rec:.3f}, expected {s['expected_recall_at_threshold']:.3f})"
                    if rec is not None
                    else ""
                )
            )
        else:
            text = f"{s['top_bin_found']} pairs in {s['top_bin']} found"
        lines.append((s["setting"], f"{text}; {s['candidates']:,} candidates"))
    return _finish(a, res, t0, lines)


def cmd_bands(a: argparse.Namespace) -> int:
    from ..analyze.corpus import bands

    t0 = time.perf_counter()
    corpus = _load(a, a.max_docs)
    res = bands(
        corpus.texts,
        num_perm=a.num_perm,
        bands_list=a.bands_list,
        threshold=a.threshold,
        shingle=a.shingle,
        seed=a.sketch_seed,
    )
    _corpus_summary(res, corpus)
    lines = [("documents", f"{res.summary['documents']:,}")]
    lines += [
        (
            f"{r['bands']} x {r['rows']}",
            f"{r['candidates']:,} candidates, {r['true_candidates']:,} with J ≥ {a.threshold:g}",
        )
        for r in res.rows
    ]
    return _finish(a, res, t0, lines)


def cmd_grid(a: argparse.Namespace) -> int:
    from ..analyze.corpus import grid

    t0 = time.perf_counter()
    corpus = _load(a, a.max_docs)
    res = grid(
        corpus.texts,
        corpus.ids,
        thresholds=a.thresholds,
        sizes=a.shingle_sizes,
        kind=a.kind,
        num_perm=a.num_perm,
        seed=a.sketch_seed,
        min_recall=a.min_recall,
    )
    _corpus_summary(res, corpus)
    lines = [
        ("documents", f"{res.summary['documents']:,}"),
        ("thresholds", " ".join(f"{t:g}" for t in res.summary["thresholds"])),
    ]
    for k in res.summary["sizes"]:
        rows = [r for r in res.rows if r["k"] == k]
        lines.append((f"{a.kind}:{k} pairs", " ".join(f"{r['pairs']:,}" for r in rows)))
        lines.append((f"{a.kind}:{k} documents", " ".join(f"{r['documents']:,}" for r in rows)))
    return _finish(a, res, t0, lines)


def cmd_distribution(a: argparse.Namespace) -> int:
    from ..analyze.corpus import distribution
    from ..analyze.curves import parse_bands_rows

    t0 = time.perf_counter()
    bands_rows = parse_bands_rows(a.bands_rows) if a.bands_rows else None
    corpus = _load(a, a.max_docs)
    res = distribution(
        corpus.texts,
        threshold=a.threshold,
        num_perm=a.num_perm,
        shingle=a.shingle,
        seed=a.sketch_seed,
        min_recall=a.min_recall,
        bands_rows=bands_rows,
        bins=a.bins,
    )
    _corpus_summary(res, corpus)
    s: dict[str, Any] = res.summary
    lines = [
        ("documents", f"{s['documents']:,}"),
        ("LSH", f"{s['bands']} x {s['rows']}"),
        ("candidates", f"{s['candidates']:,} (median Jaccard {s['median_candidate_similarity']})"),
        (
            "verified",
            f"{s['verified']:,} with J ≥ {s['threshold']:g}; "
            f"{s['identical_shingle_sets']:,} identical shingle sets",
        ),
    ]
    return _finish(a, res, t0, lines)
