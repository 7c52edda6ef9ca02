"""Small array helpers shared by the stages."""

from __future__ import annotations

import numpy as np


def sorted_unique(x: np.ndarray, overwrite: bool = False) -> np.ndarray:
    """The distinct values of a 1-D array, sorted: ``np.unique(x)`` by sorting.

    numpy 2's hash-based ``np.unique`` measured 40x slower than this on the large integer
    arrays of the pipeline (0.36 s against 0.009 s on 377k values). ``overwrite=True`` sorts
    ``x`` itself instead of a copy."""
    x = np.ravel(x)
    s = x if overwrite else x.copy()
    s.sort()
    if len(s) < 2:
        return s
    return s[np.concatenate(([True], s[1:] != s[:-1]))]
