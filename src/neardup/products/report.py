"""Tables (CSV and markdown) and plots (PNG) of a :class:`.study.StudyResult`.

- ``summary.csv`` / ``summary.md``: each method at the default setting of the blocking (budget
  of candidate pairs per offer, or LSH banding), mean and standard deviation over the
  bootstraps, next to the published figures on the TV data;
- ``sweep.csv`` / ``sweep.md``: means per setting (the numbers behind ``sweep.png``);
- ``runs.csv``: every bootstrap, setting and method;
- ``sweep.png``: PC, PQ, F1* and F1 against the fraction of comparisons;
- ``similarity.png``: the baseline's similarity (Jaccard of title words and attribute key:value
  pairs) of the true pairs and of all candidates;
- ``report.md``: all of it on one page.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from .._extras import NO_FIGURES, can_plot
from .study import METHODS, Key, StudyConfig, StudyResult, key_fields, run_key

#: Published results on the TV data (all pairs compared for MSM; MSMP and MSMP+ at about
#: 5% of the comparisons), as reported with the data set.
PUBLISHED: list[dict[str, Any]] = [
    {"method": "MSM (published)", "fraction": 1.0, "f1": 0.475},
    {"method": "MSMP (published, ~9% below MSM)", "fraction": 0.05, "f1": 0.475 * 0.91},
    {"method": "MSMP+ (published, ~6% below MSM)", "fraction": 0.05, "f1": 0.475 * 0.94},
]


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if v != v else f"{v:.4f}" if abs(v) < 0.1 and v != 0 else f"{v:.3f}"
    return str(v)


def write_csv(rows: list[dict], path: str | os.PathLike) -> None:
    cols: list[str] = []
    for r in rows:
        cols.extend(k for k in r if k not in cols)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)


def markdown_table(rows: list[dict], cols: list[str], headers: list[str] | None = None) -> str:
    head = headers or cols
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _pm(r: dict, k: str, spread: bool = True) -> str:
    return f"{r[k]:.3f} ± {r[k + '_sd']:.3f}" if spread else f"{r[k]:.3f}"


def summary_markdown(res: StudyResult, published: bool = False) -> str:
    """The test figures per method (mean ± sd over the bootstraps; the mean alone with one),
    and with ``published`` (the TV data) the published results on that data."""
    sp = res.config.bootstraps > 1
    rows = [
        {
            "method": r["method"],
            "fraction": f"{r['fraction']:.4f}",
            "PC": _pm(r, "pc", sp),
            "PQ": _pm(r, "pq", sp),
            "F1*": _pm(r, "f1_star", sp),
            "precision": _pm(r, "precision", sp),
            "recall": _pm(r, "recall", sp),
            "F1": _pm(r, "f1", sp),
        }
        for r in res.summary
    ]
    rows += [
        {"method": p["method"], "fraction": f"{p['fraction']:.2f}", "F1": f"{p['f1']:.3f}"}
        for p in (PUBLISHED if published else [])
    ]
    cols = ["method", "fraction", "PC", "PQ", "F1*", "precision", "recall", "F1"]
    return markdown_table(rows, cols)


def sweep_rows(res: StudyResult) -> list[dict]:
    """Mean test figures per setting of the sweep (budget or banding; and per method for F1),
    sorted by fraction."""
    out = []
    keys = list(dict.fromkeys(run_key(r) for r in res.runs))
    blocking_only = (res.config.blocking, METHODS[0])  # one row per bootstrap and setting
    for key in keys:
        rs = [r for r in res.runs if run_key(r) == key]
        row = key_fields(key)
        for k in ("fraction", "pc", "pq", "f1_star"):
            row[k] = float(np.mean([r[k] for r in rs if r["method"] in blocking_only]))
        for m in METHODS:
            f = [r["f1"] for r in rs if r["method"] == m]
            row[f"f1_{m}"] = float(np.mean(f)) if f else float("nan")
        out.append(row)
    return sorted(out, key=lambda r: r["fraction"])


def _setting_text(key: Key) -> str:
    """A setting in words: ``60x4`` (a banding) or ``10 per offer`` (a budget)."""
    return f"{key[0]}x{key[1]}" if isinstance(key, tuple) else f"{key:g} per offer"


def _blocking_text(cfg: StudyConfig) -> str:
    """The blocking of the study in words, with its default setting."""
    if cfg.blocking == "tokens":
        return (
            f"token blocking over title words and model words, default budget "
            f"{cfg.per_offer:g} candidate pairs per offer"
        )
    return (
        f"MinHash LSH over title model words and the learned brand, {cfg.num_perm} "
        f"permutations, default banding {cfg.bands}x{cfg.rows}"
    )


def plot_sweep(
    rows: list[dict],
    path: str | os.PathLike,
    default: Key,
    published: bool = False,
    blocking: str = "lsh",
) -> None:
    """``default``: the default setting (a ``(bands, rows)`` banding or a budget of candidate
    pairs per offer), marked on each panel; ``blocking``: ``"lsh"`` or ``"tokens"``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [r["fraction"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.5))
    name = "LSH" if blocking == "lsh" else "token blocking"
    panels = [
        ("pc", f"Pair completeness ({name})"),
        ("pq", f"Pair quality ({name})"),
        ("f1_star", f"F1* ({name})"),
    ]
    for ax, (k, title) in zip(axes.flat[:3], panels):
        ax.plot(x, [r[k] for r in rows], marker="o", ms=3)
        ax.set_title(title)
        ax.set_ylabel(title.split(" (")[0])
    ax = axes.flat[3]
    for m, style in zip(METHODS, ("s--", "^-.", "o-")):
        pts = [(r["fraction"], r[f"f1_{m}"]) for r in rows if r[f"f1_{m}"] == r[f"f1_{m}"]]
        if pts:
            ax.plot(*zip(*pts), style, ms=3, label=m)
    for p, dy in zip(PUBLISHED if published else [], (-10, -12, 4)):
        ax.plot([p["fraction"]], [p["f1"]], "kx", ms=7)
        ax.annotate(
            p["method"].split(" ")[0],
            (p["fraction"], p["f1"]),
            fontsize=7,
            xytext=(5, dy),
            textcoords="offset points",
        )
    ax.set_title("F1 of the duplicates found (test sets)")
    ax.set_ylabel("F1")
    ax.legend(fontsize=8)
    d = [r for r in rows if run_key(r) == default]
    for ax in axes.flat:
        ax.set_xscale("log")
        ax.set_xlabel("fraction of comparisons")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        if d:
            ax.axvline(d[0]["fraction"], color="grey", lw=0.8, ls=":")
    per = "banding" if blocking == "lsh" else "budget"
    fig.suptitle(f"Bootstrap test sets, mean per {per} (dotted: default {_setting_text(default)})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_similarity(res: StudyResult, path: str | os.PathLike) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    bins = np.linspace(0, 1, 41)
    for k, label in (("candidates", "all candidate pairs"), ("true_pairs", "true duplicates")):
        v = res.distributions.get(k, np.zeros(0))
        if len(v):
            ax.hist(
                v,
                bins=cast("Sequence[float]", bins),
                density=True,
                alpha=0.55,
                label=f"{label} ({len(v):,})",
            )
    ax.set_xlabel("Jaccard of title words and attribute key:value pairs")
    ax.set_ylabel("density")
    ax.set_title("Similarity of candidates and of true duplicates (whole data)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _truth_words(res: StudyResult) -> str:
    if not res.partial_truth:
        return "true duplicate pairs"
    return f"known duplicate pairs ({res.partial_truth})"


#: What the report's columns mean, for a reader who does not know the literature's names.
LEGEND = (
    "*fraction*: the share of all pairs of offers compared (the candidates); "
    "*PC* (pair completeness): the share of the true duplicate pairs among the candidates; "
    "*PQ* (pair quality): the share of the candidates that are true duplicates; *F1\\**: "
    "the harmonic mean of PC and PQ (how good the candidates are); *precision*, *recall* "
    "and *F1*: of the duplicates a method finds among the candidates, against the truth. "
    "Methods: *baseline* (the Jaccard similarity of title words and attribute values, "
    "with a tuned threshold), *rule* (neardup's training-free score) and *neardup* (the "
    "trained random forest)."
)


def write_report(
    res: StudyResult,
    outdir: str | os.PathLike,
    title: str = "Bootstrap study",
    published: bool = False,
) -> dict[str, str]:
    """Write the tables, plots and ``report.md`` into ``outdir`` (created); returns the paths.
    ``published``: the data is the TV data, whose published results are shown beside."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    cfg = res.config
    default = cfg.default
    tokens = cfg.blocking == "tokens"
    sweep = sweep_rows(res)
    write_csv(res.summary, out / "summary.csv")
    write_csv(sweep, out / "sweep.csv")
    write_csv(res.runs, out / "runs.csv")
    summary_md = summary_markdown(res, published)
    (out / "summary.md").write_text(summary_md)
    kcols = ["per_offer"] if tokens else ["bands", "rows"]
    scols = kcols + ["fraction", "pc", "pq", "f1_star"] + [f"f1_{m}" for m in METHODS]
    shown = [{**r, "per_offer": f"{r['per_offer']:g}"} if tokens else r for r in sweep]
    sweep_md = markdown_table(
        shown,
        scols,
        (["per offer"] if tokens else kcols)
        + ["fraction", "PC", "PQ", "F1*"]
        + [f"F1 {m}" for m in METHODS],
    )
    (out / "sweep.md").write_text(sweep_md)
    figures = can_plot()
    if figures:
        plot_sweep(sweep, out / "sweep.png", default, published, cfg.blocking)
        plot_similarity(res, out / "similarity.png")
    text = [
        f"# {title}",
        "",
        f"{res.n_offers:,} offers, {res.n_true_pairs:,} {_truth_words(res)}; "
        f"{cfg.bootstraps} bootstraps (seed {cfg.seed}); {_blocking_text(cfg)}; "
        f"thresholds tuned on each training part (the random forest's: one for pairs "
        f"where only one offer names a model number, one for the others); "
        f"{res.seconds:.1f} s.",
        "",
        LEGEND,
        "",
        (
            f"## Test sets at the default budget, {cfg.per_offer:g} candidate pairs per offer"
            if tokens
            else "## Test sets at the default banding"
        )
        + (" (mean ± sd)" if cfg.bootstraps > 1 else " (one bootstrap: no spread)"),
        "",
        summary_md,
        f"## Sweep over the {'budgets of candidate pairs per offer' if tokens else 'bandings'}"
        " (means)",
        "",
        sweep_md,
    ]
    if res.skipped_bandings:
        left_out = ", ".join(
            f"{b}x{r}" for b, r in sorted(res.skipped_bandings, key=lambda br: br[1])
        )
        text += [
            f"Left out of the sweep (their LSH buckets held more than "
            f"{cfg.max_pairs:,} pairs): {left_out}.",
            "",
        ]
    text += (
        [
            "![PC, PQ, F1* and F1 against the fraction of comparisons](sweep.png)",
            "",
            "![Similarity of candidates and true duplicates](similarity.png)",
            "",
        ]
        if figures
        else [f"({NO_FIGURES}.)", ""]
    )
    (out / "report.md").write_text("\n".join(text))
    names = ["report.md", "summary.csv", "summary.md", "sweep.csv", "sweep.md", "runs.csv"]
    names += ["sweep.png", "similarity.png"] if figures else []
    return {k: str(out / k) for k in names}
