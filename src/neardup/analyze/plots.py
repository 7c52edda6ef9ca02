"""PNG figures of the analyses (matplotlib, Agg backend): one function per analysis, each taking
the :class:`~neardup.analyze.result.Analysis` and a path."""

from __future__ import annotations

import math
import os

import numpy as np

from ..lsh import s_curve
from .result import Analysis

DPI = 120


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike, bottom: float = 0.0) -> None:
    fig.tight_layout(rect=(0, bottom, 1, 1))
    fig.savefig(path, dpi=DPI)
    _plt().close(fig)


def _panels(n: int, width: float = 5.2, height: float = 4.0, max_cols: int = 3):
    plt = _plt()
    cols = min(n, max_cols)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def plot_scurve(a: Analysis, path: str | os.PathLike) -> None:
    """The S-curves, each with a dot at its approximate threshold ``(1/b)**(1/r)``."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.5, 5.5))
    s, curves = a.data["s"], a.data["p"]
    for (b, r), p, row in zip(a.data["bands_rows"], curves, a.rows):
        t = row["threshold_approx"]
        (line,) = ax.plot(s, p, lw=2, label=f"{b} × {r}  ({b * r} values, threshold ≈ {t:.2f})")
        ax.plot([t], [s_curve(t, b, r)], "o", color=line.get_color(), ms=5)
        if (b, r) == (20, 5):
            p8 = s_curve(0.8, 20, 5)
            ax.annotate(
                f"20 × 5 at J = 0.8: {p8:.4f}",
                (0.8, p8),
                xytext=(0.2, 0.95),
                textcoords="data",
                fontsize=9,
                arrowprops={"arrowstyle": "->", "color": line.get_color()},
            )
            ax.plot([0.8], [p8], "s", color=line.get_color(), ms=6)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.04)
    ax.set_xlabel("Jaccard similarity of the pair")
    ax.set_ylabel("P(candidate) = 1 − (1 − sʳ)ᵇ")
    ax.set_title(
        "Probability of becoming an LSH candidate (b bands × r rows)\n"
        "dots: approximate threshold (1/b)^(1/r)"
    )
    ax.grid(alpha=0.3)
    ax.legend(title="bands × rows", loc="lower right", fontsize=9)
    _save(fig, path)


def plot_params(a: Analysis, path: str | os.PathLike) -> None:
    """Per threshold: neardup's and datasketch's S-curves, the threshold and threshold+0.1."""
    s = a.data["s"]
    panels = a.data["panels"]
    fig, axes = _panels(len(panels), width=5.6, height=5.4)
    for ax, panel in zip(axes, panels):
        t = panel["threshold"]
        ax.axvline(t, color="black", ls="--", lw=1)
        ax.axvspan(t, 1.0, color="grey", alpha=0.08)
        for c in panel["curves"]:
            b, r = c["bands"], c["rows"]
            p_t, p_t1 = s_curve(t, b, r), s_curve(min(t + 0.1, 1.0), b, r)
            name = c["label"].split(":")[0]
            row = next(
                x for x in a.rows if x["threshold"] == t and x["bands"] == b and x["rows"] == r
            )
            (line,) = ax.plot(
                s,
                c["p"],
                lw=2,
                label=f"{name}: {b} × {r}\n  P(t) = {p_t:.3f}, P(t+0.1) = "
                f"{p_t1:.3f}, FP area {row['fp_area']:.3f}, "
                f"FN area {row['fn_area']:.4f}",
            )
            ax.plot([t, min(t + 0.1, 1.0)], [p_t, p_t1], "o", color=line.get_color(), ms=5)
            ax.annotate(
                f"{p_t:.2f}",
                (t, p_t),
                xytext=(-30, 4 if p_t > 0.5 else -14),
                textcoords="offset points",
                color=line.get_color(),
                fontsize=9,
            )
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.04)
        ax.set_xlabel("Jaccard similarity of the pair")
        ax.set_ylabel("P(candidate)")
        ax.set_title(
            f"threshold t = {t:g} (dashed; shaded: J ≥ t), {a.summary['num_perm']} permutations",
            fontsize=10,
        )
        ax.grid(alpha=0.3)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=8, frameon=False)
    fig.suptitle("Choice of bands × rows: neardup (recall floor) vs datasketch (equal weights)")
    _save(fig, path)


def plot_recall(a: Analysis, path: str | os.PathLike) -> None:
    """Per LSH setting: found / true pairs per similarity bin (bars, with counts), the mean
    S-curve probability of the bin's pairs (black ticks) and the S-curve itself."""
    edges = a.data["edges"]
    settings = a.data["settings"]
    fig, axes = _panels(len(settings), width=5.2, height=4.0)
    xs = np.linspace(0, 1, 401)
    lo = max(0.0, float(edges[0]) - 0.1)
    nb = len(edges) - 1
    for ax, st, summ in zip(axes, settings, a.summary["settings"]):
        rows = [r for r in a.rows if r["setting"] == st["setting"]]
        b, r = st["bands"], st["rows"]
        ax.plot(xs, s_curve(xs, b, r), color="tab:blue", lw=1.5, label="S-curve")
        centers = (edges[:-1] + edges[1:]) / 2
        widths = np.diff(edges) * 0.8
        rec = [row["recall"] if row["recall"] is not None else 0.0 for row in rows]
        ax.bar(
            centers,
            rec,
            width=widths,
            color="tab:orange",
            alpha=0.7,
            label="found / true pairs in the bin (counts above the bars)",
        )
        exp = [
            (c, row["expected_recall"])
            for c, row in zip(centers, rows)
            if row["expected_recall"] is not None
        ]
        if exp:
            ax.plot(
                *zip(*exp),
                "_",
                color="black",
                ms=16,
                mew=2,
                label="expected: mean S-curve of the bin's pairs",
            )
        for c, row in zip(centers, rows):
            txt = f"{row['found']}/{row['true_pairs']}"
            y = row["recall"] if row["recall"] is not None else 0.0
            ax.annotate(
                txt, (c, y), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=8
            )
        if st["threshold"] is not None:
            ax.axvline(st["threshold"], color="black", ls="--", lw=1)
            title = (
                f"threshold {st['threshold']:g}: {b} × {r}, "
                f"{summ['found_at_threshold']} of {summ['true_pairs_at_threshold']} "
                f"pairs ≥ {st['threshold']:g} found"
            )
        else:
            title = f"{b} × {r}: {summ['top_bin_found']} pairs in {rows[nb - 1]['bin']} found"
        ax.set_title(title, fontsize=10)
        ax.set_xlim(lo, 1.0)
        ax.set_ylim(0, 1.12)
        ax.set_xlabel("exact Jaccard similarity (bins)")
        ax.set_ylabel("recall of LSH candidates")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    labels[0] = "S-curve of the setting"
    fig.legend(handles, labels, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(
        f"LSH candidates against brute force ({a.summary['documents']:,} documents, "
        f"{a.summary['shingle']}, {a.summary['num_perm']} permutations)"
    )
    _save(fig, path, bottom=0.5 / fig.get_figheight())


def plot_bands(a: Analysis, path: str | os.PathLike) -> None:
    """Candidate pairs and true candidates (>= threshold) per number of bands."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(7.0, 0.75 * len(a.rows) + 3), 5))
    labels = [f"{r['bands']} × {r['rows']}" for r in a.rows]
    x = np.arange(len(a.rows))
    cand = np.array([r["candidates"] for r in a.rows])
    good = np.array([r["true_candidates"] for r in a.rows])
    w = 0.4
    b1 = ax.bar(x - w / 2, cand, w, label="candidate pairs", color="tab:blue")
    b2 = ax.bar(
        x + w / 2,
        good,
        w,
        label=f"true candidates (J ≥ {a.summary['threshold']:g})",
        color="tab:green",
    )
    for bars in (b1, b2):
        for rect in bars:
            h = rect.get_height()
            ax.annotate(
                f"{int(h):,}",
                (rect.get_x() + rect.get_width() / 2, max(h, 0.9)),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                fontsize=7,
            )
    positive = np.concatenate([cand[cand > 0], good[good > 0]])
    if len(positive) and positive.max() / positive.min() > 50:
        ax.set_yscale("log")
        ax.set_ylim(0.8, positive.max() * 3)
    ax.set_xticks(x, labels)
    ax.set_xlabel("bands × rows")
    ax.set_ylabel("pairs")
    ax.set_title(
        f"Candidate pairs per number of bands, one signature of "
        f"{a.summary['num_perm']} values\n({a.summary['documents']:,} documents, "
        f"{a.summary['shingle']}, {a.summary['all_pairs']:,} pairs in all)"
    )
    ax.grid(alpha=0.3, axis="y")
    ax.legend()
    _save(fig, path)


def plot_grid(a: Analysis, path: str | os.PathLike) -> None:
    """Documents with a near-duplicate and pairs, per threshold,
    one line per shingle size."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    kind = a.summary["kind"]
    for k in a.summary["sizes"]:
        rows = [r for r in a.rows if r["k"] == k]
        ts = [r["threshold"] for r in rows]
        axes[0].plot(ts, [r["documents"] for r in rows], "o-", label=f"{kind} {k}-shingles")
        axes[1].plot(ts, [r["pairs"] for r in rows], "o-", label=f"{kind} {k}-shingles")
    for ax, what in zip(
        axes, ("documents with at least one near-duplicate", "near-duplicate pairs (verified)")
    ):
        ax.set_xlabel("Jaccard threshold")
        ax.set_ylabel(what.split(" (")[0])
        ax.set_title(what[0].upper() + what[1:])
        ax.grid(alpha=0.3)
        ax.legend()
    if max((r["pairs"] for r in a.rows), default=0) > 50 * max(
        1, min((r["pairs"] for r in a.rows if r["pairs"] > 0), default=1)
    ):
        axes[1].set_yscale("log")
    fig.suptitle(
        f"Duplicates per threshold and shingle size ({a.summary['documents']:,} "
        f"documents, {a.summary['num_perm']} permutations)"
    )
    _save(fig, path)


def plot_distribution(a: Analysis, path: str | os.PathLike) -> None:
    """Histogram (log counts) of the exact Jaccard of all candidates and of the verified ones,
    with the S-curve that produced the candidates."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.5, 5))
    edges = a.data["edges"]
    sim = a.data["similarity"]
    t = a.summary["threshold"]
    b, r = a.summary["bands"], a.summary["rows"]
    ax.hist(
        sim,
        bins=edges,
        color="tab:blue",
        alpha=0.55,
        label=f"all candidates ({a.summary['candidates']:,})",
    )
    ax.hist(
        sim[sim >= np.float32(t)],
        bins=edges,
        color="tab:green",
        alpha=0.8,
        label=f"verified, J ≥ {t:g} ({a.summary['verified']:,})",
    )
    ax.axvline(t, color="black", ls="--", lw=1)
    counts = np.histogram(sim, bins=edges)[0]
    if len(sim) and counts.max() > 50 * counts[counts > 0].min():
        ax.set_yscale("log")
        ax.set_ylabel("pairs (log scale)")
    else:
        ax.set_ylabel("pairs")
        ax.yaxis.get_major_locator().set_params(integer=True)
    ax.set_xlim(0, 1)
    ax.set_xlabel("exact Jaccard similarity of the candidate pair")
    ax2 = ax.twinx()
    xs = np.linspace(0, 1, 401)
    ax2.plot(
        xs, s_curve(xs, b, r), color="grey", ls=":", lw=1.5, label=f"S-curve {b} × {r} (right axis)"
    )
    ax2.set_ylim(0, 1.05)
    ax2.set_ylabel("P(candidate)")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=9)
    ax.set_title(
        f"Similarity of LSH candidates ({a.summary['documents']:,} documents, "
        f"{a.summary['shingle']}, {b} × {r})"
    )
    ax.grid(alpha=0.3)
    _save(fig, path)


PLOTS = {
    "scurve": plot_scurve,
    "params": plot_params,
    "recall": plot_recall,
    "bands": plot_bands,
    "grid": plot_grid,
    "distribution": plot_distribution,
}
