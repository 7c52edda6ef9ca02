"""Optional features and the extras that install them.

The core install (``pip install neardup``) holds the batch library and the command line. What
goes beyond it comes with an extra, named for what it enables:

============ ===================================================== ===========================
extra        enables                                               installs
============ ===================================================== ===========================
``server``   ``neardup serve`` (the web service and page)          fastapi, uvicorn,
                                                                   python-multipart
``redis``    an index stored in Redis (``redis://`` locations)     redis
``dask``     ``neardup dedup --engine dask``                       dask, distributed
``plots``    the PNG figures of ``analyze``, ``fca`` and           matplotlib
             ``products`` reports
``products`` the trained product matcher (``--train``) and the     scikit-learn, matplotlib
             figures of the product study
``fca``      the k-means comparison and the figure of ``neardup    scikit-learn, matplotlib
             fca`` (mining itself needs no extra)
``client``   :class:`neardup.Client`, the Python client of the     httpx
             web service
``all``      everything above
============ ===================================================== ===========================

:func:`require` imports a module of an extra, or raises :class:`MissingExtraError`, whose one
line names the extra to install.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from .errors import ConfigError

#: distribution (as pip names it) of each top-level module an extra provides
DISTRIBUTIONS = {
    "fastapi": "fastapi",
    "starlette": "fastapi",
    "uvicorn": "uvicorn",
    "multipart": "python-multipart",
    "python_multipart": "python-multipart",
    "redis": "redis",
    "dask": "dask",
    "distributed": "distributed",
    "matplotlib": "matplotlib",
    "sklearn": "scikit-learn",
    "httpx": "httpx",
}


class MissingExtraError(ConfigError):
    """A feature needs a package that is not installed; the message names the extra that
    installs it (``pip install 'neardup[EXTRA]'``), or the package itself where no extra
    brings it (``extra=None``: pandas, polars). Its exit code in the command line is 2."""

    def __init__(self, feature: str, extra: str | None, module: str):
        top = module.split(".")[0]
        dist = DISTRIBUTIONS.get(top, top)
        install = f"'neardup[{extra}]'" if extra else dist
        super().__init__(f"{feature} needs {dist}, which is not installed: pip install {install}")
        self.feature = feature
        self.extra = extra
        self.module = module


def require(module: str, extra: str | None, feature: str) -> ModuleType:
    """Import ``module`` (e.g. ``"fastapi"``) for ``feature`` (words a user knows: "neardup
    serve"); if it, or a package it needs, is not installed, raise :class:`MissingExtraError`
    naming ``extra``. Other import failures (a broken installation) propagate as they are."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] == "neardup":
            raise
        raise MissingExtraError(feature, extra, e.name or module) from None


def available(module: str) -> bool:
    """Whether ``module`` can be imported (found on the path), without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


#: What a report says in place of its figures when matplotlib is not installed.
NO_FIGURES = (
    "figures not drawn: matplotlib is not installed (pip install 'neardup[plots]'); "
    "the tables are complete"
)


def can_plot() -> bool:
    """Whether the PNG figures of the reports can be drawn (matplotlib is installed)."""
    return available("matplotlib")
