"""The plain-data result every analysis returns: a table, headline numbers and plot arrays."""

from __future__ import annotations

from dataclasses import field
from typing import Any

import numpy as np

from .._records import record


def plain(v: Any) -> Any:
    """``v`` with numpy scalars and arrays turned into Python numbers and lists (for JSON)."""
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return plain(v.tolist())
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    return v


@record
class Analysis:
    """One analysis: ``rows`` (the table written as CSV and markdown, one dict per row, columns
    in ``columns`` order), ``summary`` (parameters and headline numbers) and ``data`` (numpy
    arrays and extra tables for the plot; not part of the JSON output)."""

    name: str
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    summary: dict[str, Any] = field(default_factory=dict)
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, title, summary and rows."""
        return plain(
            {"analysis": self.name, "title": self.title, "summary": self.summary, "rows": self.rows}
        )
