"""neardup: find near-duplicate documents and product offers.

Shingling, MinHash (one-permutation with densification, or classic), LSH with a recall-aware
choice of bands, exact verification of every candidate, and clusters that resist chaining.

>>> import neardup
>>> result = neardup.dedup(texts, threshold=0.8)
>>> result.clusters()
"""

from ._version import __version__
from .cluster import connected_components, strict_clusters  # noqa: E402
from .config import (  # noqa: E402
    ClusterConfig,
    DedupConfig,
    LSHConfig,
    NormalizeConfig,
    ShingleConfig,
    SketchConfig,
    VerifyConfig,
)
from .engines.local import Deduplicator, dedup, dedup_files  # noqa: E402
from .errors import ConfigError, InputError, NeardupError, OutputError, SkipReason  # noqa: E402
from .index import DuplicateIdError, Index, Match  # noqa: E402
from .lsh import candidate_pairs, choose_bands, s_curve  # noqa: E402
from .result import Pairs, Result  # noqa: E402
from .sketch import sketch  # noqa: E402
from .text import normalize, shingle  # noqa: E402
from .verify import estimate_pairs, jaccard_pairs  # noqa: E402

__all__ = [
    "__version__", "dedup", "dedup_files", "Deduplicator", "Index", "Match", "DuplicateIdError", "Result", "Pairs",
    "DedupConfig", "NormalizeConfig", "ShingleConfig", "SketchConfig", "LSHConfig",
    "VerifyConfig", "ClusterConfig",
    "NeardupError", "ConfigError", "InputError", "OutputError", "SkipReason",
    "normalize", "shingle", "sketch", "s_curve", "choose_bands", "candidate_pairs",
    "jaccard_pairs", "estimate_pairs", "connected_components", "strict_clusters",
]
