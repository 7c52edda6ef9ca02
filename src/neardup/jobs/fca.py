"""``neardup fca`` as a library call: files in, clusters per threshold and an evaluation out."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._extras import NO_FIGURES, can_plot
from ..analyze.output import markdown_table
from ..errors import ConfigError, InputError, SkipReason
from ..evaluate.clusters import bisecting_kmeans, pair_scores, pairs_of_groups, read_reference
from ..fca.core import fca
from ..io import SkipReport, prepare_outdir, read_all, write_json_atomic


def fca_files(
    paths: Sequence[str | os.PathLike],
    outdir: str | os.PathLike,
    *,
    min_common: Sequence[int] | None = None,
    length: int = 5,
    offset: int = 1,
    image_size: int = 256,
    kind: str = "word",
    max_doc_freq: int | None = None,
    text_fields: Sequence[str] = ("text",),
    id_field: str | None = None,
    input_format: str | None = None,
    encoding: str = "utf-8",
    on_error: str = "fail",
    truth: str | os.PathLike | None = None,
    baseline_clusters: Sequence[int] = (),
    seed: int = 0,
) -> dict[str, Any]:
    """FCA near-duplicate clusters for each ``min_common`` threshold, written as
    ``clusters-k<K>.jsonl`` (members, common hashes), plus ``summary.json``; with ``truth``
    (a reference file of duplicate pairs or clusters) precision, recall and F1 per threshold and
    for the bisecting k-means baseline per number of clusters, as ``evaluation.csv``, ``.md`` and
    ``.png``. ``min_common`` defaults to :func:`~neardup.fca.core.default_min_common` of the
    images' median size (pairs at Jaccard 0.8 found with probability about 0.95)."""
    t_start = time.perf_counter()
    if baseline_clusters and truth is None:
        raise ConfigError("--baseline-clusters compares with the reference: give --truth too")
    if baseline_clusters:  # before any work: the comparison needs the fca extra
        from .._extras import require

        require("sklearn", "fca", "the k-means comparison (--baseline-clusters)")
    report = SkipReport()
    ids, texts, id_info = read_all(
        paths,
        text_fields=text_fields,
        id_field=id_field,
        on_error=on_error,
        encoding=encoding,
        fmt=input_format,
        report=report,
    )
    if not texts:
        raise InputError(
            "no documents to cluster: the inputs hold no record", reason=SkipReason.EMPTY_FILE
        )
    t_read = time.perf_counter() - t_start
    results = fca(
        texts,
        None if min_common is None else list(min_common),
        length=length,
        offset=offset,
        image_size=image_size,
        kind=kind,
        max_doc_freq=max_doc_freq,
    )
    reference = None
    ref_counts: dict[str, int] = {}
    truth_path = None if truth is None else Path(truth)
    if truth_path is not None:
        reference, ref_counts = read_reference(truth_path, ids)

    outdir = Path(outdir)
    prepare_outdir(outdir)
    rows: list[dict[str, Any]] = []
    outputs: dict[str, str] = {}
    for r in results:
        name = f"clusters-k{r.min_common}.jsonl"
        lines = [
            json.dumps(
                {
                    "cluster": i,
                    "common": c.common,
                    "size": len(c.members),
                    "members": [ids[m] for m in c.members],
                }
            )
            for i, c in enumerate(r.clusters)
        ]
        tmp = outdir / f".{name}.tmp"
        tmp.write_text("".join(x + "\n" for x in lines))
        os.replace(tmp, outdir / name)
        outputs[name] = str(outdir / name)
        row = {
            "method": "fpmax",
            "threshold": r.min_common,
            "clusters": len(r.clusters),
            "documents_in_clusters": len({m for c in r.clusters for m in c.members}),
            "seconds": round(r.seconds, 3),
        }
        if reference is not None:
            row.update(pair_scores(r.pairs(), reference))
        rows.append(row)
    for k in baseline_clusters:
        assert reference is not None  # a baseline comes with the reference (checked above)
        labels, secs = bisecting_kmeans(texts, k, seed)
        pred = pairs_of_groups(labels.tolist())
        rows.append(
            {
                "method": "bisecting-kmeans",
                "requested_clusters": k,
                "clusters": len(set(labels.tolist())),
                "documents_in_clusters": len(texts),
                "seconds": round(secs, 3),
                **pair_scores(pred, reference),
            }
        )
    summary: dict[str, Any] = {
        "documents": len(texts),
        "ids": id_info.to_dict(),
        "skipped": report.to_dict(),
        "parameters": {
            "shingle_length": length,
            "offset": offset,
            "image_size": image_size,
            "kind": kind,
            "max_doc_freq": max_doc_freq,
        },
        "inverted_table": {k: v for k, v in results[0].stats.items() if k != "clusters"},
        "results": rows,
        "read_seconds": round(t_read, 3),
    }
    if reference is not None and truth_path is not None:
        summary["reference"] = {"path": str(truth), "pairs": len(reference), **ref_counts}
        cols = [
            "method",
            "threshold",
            "requested_clusters",
            "clusters",
            "seconds",
            "precision",
            "recall",
            "f1",
            "predicted_pairs",
            "correct_pairs",
        ]
        (outdir / "evaluation.md").write_text(
            f"# FCA clusters against {truth_path.name} ({len(reference):,} reference pairs, "
            f"{len(texts):,} documents)\n\n" + markdown_table(rows, cols)
        )
        import csv

        with open(outdir / "evaluation.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
        outputs.update({k: str(outdir / k) for k in ("evaluation.md", "evaluation.csv")})
        if can_plot():
            _plot(rows, outdir / "evaluation.png", len(texts), image_size)
            outputs["evaluation.png"] = str(outdir / "evaluation.png")
        else:
            summary["figures"] = NO_FIGURES
    summary["outputs"] = {**outputs, "summary": str(outdir / "summary.json")}
    summary["seconds"] = round(time.perf_counter() - t_start, 3)
    write_json_atomic(outdir / "summary.json", summary)
    return summary


def _plot(rows: list[dict[str, Any]], path: Path, n: int, image_size: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fp = sorted((r for r in rows if r["method"] == "fpmax"), key=lambda r: r["threshold"])
    base = [r for r in rows if r["method"] != "fpmax"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ks = [r["threshold"] for r in fp]
    for key, style in (("precision", "o-"), ("recall", "s-"), ("f1", "^-")):
        ax.plot(ks, [r[key] for r in fp], style, label=f"FPmax {key}")
    for r in base:
        ax.axhline(r["f1"], ls=":", lw=1, color="grey")
        ax.annotate(
            f"k-means, {r['clusters']} clusters: F1 {r['f1']:.2f}",
            (ks[0] if ks else 0, r["f1"]),
            fontsize=7,
            xytext=(2, 2),
            textcoords="offset points",
            color="dimgrey",
        )
    ax.set_xlabel(f"threshold: common hashes in the images (image size {image_size})")
    ax.set_ylabel("pair precision / recall / F1")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(f"FCA near-duplicate clusters against the reference ({n:,} documents)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
