"""neardup: find near-duplicate documents and product offers.

Shingling, MinHash (one-permutation with densification, or classic), LSH with a recall-aware
choice of bands, exact verification of every candidate, and clusters that resist chaining.

>>> import neardup
>>> result = neardup.dedup(texts, threshold=0.8)
>>> result.clusters()

The library logs what a run did and what it skipped to the ``"neardup"`` logger (INFO and
WARNING), shown only where the application configures :mod:`logging`.

The public names load on first use (``import neardup`` itself loads neither numpy nor the kernels),
so that a command such as ``neardup --help`` starts at once; ``from neardup import dedup`` and
``neardup.dedup`` work as usual.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .errors import ConfigError, InputError, NeardupError, OutputError, SkipReason

# public name -> the module that defines it
_LAZY = {
    "connected_components": ".cluster",
    "strict_clusters": ".cluster",
    "ClusterConfig": ".config",
    "DedupConfig": ".config",
    "LSHConfig": ".config",
    "NormalizeConfig": ".config",
    "ShingleConfig": ".config",
    "SketchConfig": ".config",
    "VerifyConfig": ".config",
    "PairsConfig": ".config",
    "Client": ".client",
    "ServiceError": ".client",
    "Deduplicator": ".engines.local",
    "dedup": ".engines.local",
    "dedup_files": ".jobs.dedup",
    "DuplicateIdError": ".index",
    "Index": ".index",
    "Match": ".index",
    "candidate_pairs": ".lsh",
    "choose_bands": ".lsh",
    "s_curve": ".lsh",
    "Pairs": ".result",
    "Result": ".result",
    "PassageConfig": ".reuse",
    "PassageIndex": ".reuse",
    "reused_passages": ".reuse",
    "find_reuse": ".reuse",
    "sketch": ".sketch",
    "normalize": ".text",
    "shingle": ".text",
    "estimate_pairs": ".verify",
    "jaccard_pairs": ".verify",
}

__all__ = [
    "__version__",
    "dedup",
    "dedup_files",
    "Deduplicator",
    "Index",
    "Match",
    "DuplicateIdError",
    "Result",
    "Pairs",
    "PassageConfig",
    "PassageIndex",
    "reused_passages",
    "find_reuse",
    "DedupConfig",
    "NormalizeConfig",
    "ShingleConfig",
    "SketchConfig",
    "LSHConfig",
    "VerifyConfig",
    "ClusterConfig",
    "PairsConfig",
    "Client",
    "ServiceError",
    "NeardupError",
    "ConfigError",
    "InputError",
    "OutputError",
    "SkipReason",
    "normalize",
    "shingle",
    "sketch",
    "s_curve",
    "choose_bands",
    "candidate_pairs",
    "jaccard_pairs",
    "estimate_pairs",
    "connected_components",
    "strict_clusters",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    object.__setattr__(sys.modules[__name__], name, value)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package module: ``neardup.sketch`` is the function, as the public API says, even
    once the submodule of the same name has been imported (the import system would set the
    attribute to the submodule; that is ``sys.modules["neardup.sketch"]``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _LAZY and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:  # for type checkers and IDEs: the names as if imported eagerly
    from .client import Client, ServiceError
    from .cluster import connected_components, strict_clusters
    from .config import (
        ClusterConfig,
        DedupConfig,
        LSHConfig,
        NormalizeConfig,
        PairsConfig,
        ShingleConfig,
        SketchConfig,
        VerifyConfig,
    )
    from .engines.local import Deduplicator, dedup
    from .index import DuplicateIdError, Index, Match
    from .jobs.dedup import dedup_files
    from .lsh import candidate_pairs, choose_bands, s_curve
    from .result import Pairs, Result
    from .reuse import PassageConfig, PassageIndex, find_reuse, reused_passages
    from .sketch import sketch
    from .text import normalize, shingle
    from .verify import estimate_pairs, jaccard_pairs
