"""Closed-form LSH analyses: S-curves, and how (bands, rows) are chosen.

For two documents of Jaccard similarity ``s``, banding with ``b`` bands of ``r`` rows makes them
a candidate pair with probability ``1 - (1 - s**r)**b``; the curve is steepest near
``(1/b)**(1/r)``. The false-positive area is the integral of that probability over ``[0, t]``,
the false-negative area the integral of its complement over ``[t, 1]``. Both integrands are
polynomials of degree ``b*r <= num_perm``, so Gauss-Legendre quadrature with
``num_perm // 2 + 1`` nodes integrates them exactly (datasketch uses scipy's adaptive ``quad``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from ..config import LSHConfig, check_threshold
from ..errors import ConfigError
from ..lsh import lsh_params, s_curve
from ..validate import check_int, check_real
from .result import Analysis

#: (bands, rows) shown by default: the textbook 20x5 (Mining of Massive Datasets, ch. 3) and
#: 5x20, 10x10, neardup's choice at 0.8/128 (16x8), datasketch's (9x13) and a low-threshold 32x4.
DEFAULT_BANDS_ROWS: tuple[tuple[int, int], ...] = (
    (20, 5),
    (5, 20),
    (10, 10),
    (16, 8),
    (9, 13),
    (32, 4),
)
#: Similarities at which the S-curve table gives the probability.
DEFAULT_POINTS: tuple[float, ...] = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))


def parse_bands_rows(spec: str) -> tuple[int, int]:
    """``"20x5"`` -> ``(20, 5)``; a :class:`ConfigError` saying what is allowed otherwise."""
    parts = str(spec).lower().replace("×", "x").split("x")
    try:
        b, r = (int(p) for p in parts)
    except ValueError:
        raise ConfigError(f"bands-rows={spec!r} is invalid: use BANDSxROWS, e.g. 20x5") from None
    if b < 1 or r < 1:
        raise ConfigError(f"bands-rows={spec!r} is invalid: bands and rows must be >= 1")
    return b, r


def threshold_approx(bands: int, rows: int) -> float:
    """``(1/b)**(1/r)``: roughly where the S-curve of ``b`` bands of ``r`` rows rises."""
    return float((1.0 / bands) ** (1.0 / rows))


@lru_cache(maxsize=16)
def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n)


def lsh_areas(
    bands: np.ndarray | int, rows: np.ndarray | int, threshold: float, degree: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """False-positive and false-negative areas of the S-curves of ``bands`` x ``rows``
    (broadcast arrays or ints) at ``threshold``, exact up to rounding (Gauss-Legendre with
    enough nodes for polynomials of ``degree``, default ``max(bands * rows)``)."""
    b = np.atleast_1d(np.asarray(bands, dtype=np.float64))
    r = np.atleast_1d(np.asarray(rows, dtype=np.float64))
    deg = int(degree if degree is not None else np.max(b * r))
    x, w = _gauss_legendre(max(8, deg // 2 + 1))

    def integral(lo: float, hi: float, fn: bool) -> np.ndarray:
        s = (hi - lo) / 2 * x + (hi + lo) / 2  # nodes mapped from [-1, 1] to [lo, hi]
        p = 1.0 - (1.0 - s[None, :] ** r[:, None]) ** b[:, None]
        f = 1.0 - p if fn else p
        return (hi - lo) / 2 * (f @ w)

    b, r = np.broadcast_arrays(b, r)
    return integral(0.0, threshold, False), integral(threshold, 1.0, True)


def datasketch_optimal_param(
    threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5
) -> tuple[int, int]:
    """datasketch's ``MinHashLSH._optimal_param``: the ``(b, r)`` with ``b * r <= num_perm``
    minimising ``fp_weight * FP area + fn_weight * FN area``, scanning ``b`` then ``r`` in
    increasing order and keeping the first minimum. No recall floor: at 0.8/128 it picks 9x13."""
    check_threshold(threshold)
    check_int("num_perm", num_perm, 2, 4096)
    bs = np.concatenate([np.full(num_perm // b, b) for b in range(1, num_perm + 1)])
    rs = np.concatenate([np.arange(1, num_perm // b + 1) for b in range(1, num_perm + 1)])
    fp, fn = lsh_areas(bs, rs, threshold, degree=num_perm)
    err = fp_weight * fp + fn_weight * fn
    i = int(np.argmin(err))  # the first of equal minima, as datasketch's strict "<"
    return int(bs[i]), int(rs[i])


def scurve(
    bands_rows: Sequence[tuple[int, int]] = DEFAULT_BANDS_ROWS,
    points: Sequence[float] = DEFAULT_POINTS,
    resolution: int = 501,
) -> Analysis:
    """Probability of becoming a candidate against Jaccard similarity for each (bands, rows).

    Rows of the table: bands, rows, signature values used, the approximate threshold
    ``(1/b)**(1/r)`` and the probability at each similarity of ``points``. ``data["s"]`` and
    ``data["p"]`` (``float64[len(bands_rows), resolution]``) hold the curves for the plot.
    """
    if not bands_rows:
        raise ConfigError("bands-rows is empty: give at least one BANDSxROWS")
    for b, r in bands_rows:
        if b < 1 or r < 1:
            raise ConfigError(f"bands-rows={b}x{r} is invalid: bands and rows must be >= 1")
    for s in points:
        check_real("points", s, 0.0, 1.0, allowed="similarities in [0, 1]")
    xs = np.linspace(0.0, 1.0, resolution)
    cols = ["bands", "rows", "values", "threshold_approx"] + [f"p@{s:g}" for s in points]
    rows = []
    curves = np.empty((len(bands_rows), resolution))
    for i, (b, r) in enumerate(bands_rows):
        curves[i] = s_curve(xs, b, r)
        row = {
            "bands": b,
            "rows": r,
            "values": b * r,
            "threshold_approx": round(threshold_approx(b, r), 4),
        }
        for s in points:
            row[f"p@{s:g}"] = round(float(s_curve(s, b, r)), 6)
        rows.append(row)
    summary = {
        "bands_rows": [f"{b}x{r}" for b, r in bands_rows],
        "points": list(points),
        # the textbook example: 20 bands of 5 rows find a pair of
        # similarity 0.8 almost surely
        "p_20x5_at_0.8": round(float(s_curve(0.8, 20, 5)), 6),
    }
    return Analysis(
        "scurve",
        "Probability of becoming an LSH candidate",
        cols,
        rows,
        summary,
        {"s": xs, "p": curves, "bands_rows": list(bands_rows)},
    )


def params(
    thresholds: Sequence[float] = (0.8,),
    num_perm: int = 128,
    min_recall: float = 0.9,
    weights: tuple[float, float] = (0.5, 0.5),
    resolution: int = 501,
) -> Analysis:
    """neardup's choice of (bands, rows) (:func:`neardup.lsh.lsh_params`: the fewest false
    positives with recall at the threshold >= ``min_recall``) against datasketch's
    (:func:`datasketch_optimal_param` with ``weights`` = (fp, fn)), for each threshold.

    One row per threshold and method: bands, rows, values used, FP and FN areas, the weighted
    cost and the probability of finding a pair exactly at the threshold and at threshold+0.1.
    """
    if not thresholds:
        raise ConfigError("thresholds is empty: give at least one threshold")
    for t in thresholds:
        check_threshold(t)
    check_int("num_perm", num_perm, 2, 4096)
    check_real("min_recall", min_recall, 0.0, 1.0, lo_open=True, hi_open=True)
    wfp, wfn = weights
    if wfp < 0 or wfn < 0 or wfp + wfn <= 0:
        raise ConfigError(
            f"weights={tuple(weights)!r} are invalid: two non-negative numbers "
            "(false positive, false negative), not both 0"
        )
    cols = [
        "threshold",
        "method",
        "bands",
        "rows",
        "values",
        "fp_area",
        "fn_area",
        "weighted_cost",
        "recall_at_threshold",
        "recall_at_threshold_plus_0.1",
        "threshold_approx",
    ]
    rows = []
    xs = np.linspace(0.0, 1.0, resolution)
    panels = []
    for t in thresholds:
        ours = lsh_params(LSHConfig(threshold=float(t), min_recall=float(min_recall)), num_perm)
        theirs = datasketch_optimal_param(t, num_perm, wfp, wfn)
        panel: dict[str, Any] = {"threshold": t, "curves": []}
        for method, (b, r) in (
            (f"neardup (min_recall {min_recall:g})", ours),
            (f"datasketch (weights {wfp:g}/{wfn:g})", theirs),
        ):
            fp, fn = lsh_areas(b, r, t, degree=num_perm)
            rows.append(
                {
                    "threshold": t,
                    "method": method,
                    "bands": b,
                    "rows": r,
                    "values": b * r,
                    "fp_area": round(float(fp[0]), 6),
                    "fn_area": round(float(fn[0]), 6),
                    "weighted_cost": round(float(wfp * fp[0] + wfn * fn[0]), 6),
                    "recall_at_threshold": round(float(s_curve(t, b, r)), 6),
                    "recall_at_threshold_plus_0.1": round(
                        float(s_curve(min(t + 0.1, 1.0), b, r)), 6
                    ),
                    "threshold_approx": round(threshold_approx(b, r), 4),
                }
            )
            panel["curves"].append(
                {"label": f"{method}: {b}x{r}", "bands": b, "rows": r, "p": s_curve(xs, b, r)}
            )
        panels.append(panel)
    summary = {
        "num_perm": num_perm,
        "min_recall": min_recall,
        "weights": list(weights),
        "choices": {
            f"{t:g}": {
                "neardup": f"{rows[2 * i]['bands']}x{rows[2 * i]['rows']}",
                "datasketch": f"{rows[2 * i + 1]['bands']}x{rows[2 * i + 1]['rows']}",
            }
            for i, t in enumerate(thresholds)
        },
    }
    return Analysis(
        "params",
        f"Choice of bands and rows ({num_perm} permutations)",
        cols,
        rows,
        summary,
        {"s": xs, "panels": panels},
    )
