"""Writing an analysis into a directory: ``<name>.csv`` (the table), ``<name>.md`` (its
parameters, the table and any per-setting tables) and ``<name>.png`` (the figure)."""

from __future__ import annotations

import csv
import os
from typing import Any

from ..errors import OutputError
from .result import Analysis, plain


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10_000 else str(v)
    if isinstance(v, (list, tuple)):
        return ", ".join(_fmt(x) for x in v)
    return str(v).replace("|", "\\|")


def markdown_table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    """A GitHub markdown table of ``rows`` with ``columns``."""
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def to_markdown(a: Analysis) -> str:
    """The analysis as a markdown page: title, parameters, table, then each list of records
    in the summary (per-setting results) as a table of its own."""
    s = plain(a.summary)
    out = [f"# {a.title}\n"]
    scalars = [
        (k, v)
        for k, v in s.items()
        if not (isinstance(v, list) and v and isinstance(v[0], dict)) and not isinstance(v, dict)
    ]
    out += [f"- **{k}**: {_fmt(v)}" for k, v in scalars]
    out.append("")
    out.append(markdown_table(plain(a.rows), a.columns))
    for k, v in s.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            cols: list[str] = []
            for r in v:
                cols.extend(c for c in r if c not in cols)
            out.append(f"## {k}\n")
            out.append(markdown_table(v, cols))
        elif isinstance(v, dict) and v and all(isinstance(x, dict) for x in v.values()):
            rows = [{"": key, **x} for key, x in v.items()]
            cols = [""] + [c for c in rows[0] if c]
            out.append(f"## {k}\n")
            out.append(markdown_table(rows, cols))
    return "\n".join(out)


def write_csv(a: Analysis, path: str | os.PathLike) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=a.columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(plain(a.rows))


def write_analysis(a: Analysis, outdir: str | os.PathLike, plot: bool = True) -> dict[str, str]:
    """Write ``<name>.csv``, ``<name>.md`` and (with ``plot``, when matplotlib is installed)
    ``<name>.png`` into ``outdir`` (created); return their paths by kind (no ``png`` when the
    figure was not drawn)."""
    from .._extras import can_plot
    from ..io import prepare_outdir

    plot = plot and can_plot()

    out = prepare_outdir(outdir)
    paths = {"csv": out / f"{a.name}.csv", "md": out / f"{a.name}.md", "png": out / f"{a.name}.png"}
    try:
        write_csv(a, paths["csv"])
        paths["md"].write_text(to_markdown(a), encoding="utf-8")
        if plot:
            from .plots import PLOTS

            PLOTS[a.name](a, paths["png"])
        else:
            del paths["png"]
    except OSError as e:
        raise OutputError(f"{out}: cannot write the {a.name} outputs ({e})") from None
    return {k: str(v) for k, v in paths.items()}
