"""Evaluation: pair metrics, bootstrap splits and threshold tuning (a bootstrap study design:
train on the drawn items, test on the others); ground truth read from files (:mod:`.truth`,
what is known about pairs: :mod:`.known`).

The names below load on first use, so that reading a truth file loads no study."""

from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

_LAZY = {
    "bootstrap_split": ".bootstrap",
    "pair_metrics": ".bootstrap",
    "subset_pairs": ".bootstrap",
    "tune_threshold": ".bootstrap",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    setattr(sys.modules[__name__], name, value)
    return value


if TYPE_CHECKING:
    from .bootstrap import bootstrap_split, pair_metrics, subset_pairs, tune_threshold

__all__ = ["bootstrap_split", "pair_metrics", "subset_pairs", "tune_threshold"]
