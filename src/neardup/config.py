"""Frozen, validated parameter sets for every stage.

Each dataclass checks its fields on construction and raises :class:`ConfigError` saying which
field was wrong, what it was, and what is allowed. :class:`DedupConfig` groups them and can be
built from flat keyword arguments (``DedupConfig.from_kwargs(threshold=0.7, shingle="char:5")``),
which is what :func:`neardup.dedup` and the CLI do.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from ._records import record
from .errors import ConfigError
from .validate import check_bool, check_choice, check_int, check_real


@record(frozen=True)
class NormalizeConfig:
    """Text normalisation, applied before fingerprinting and shingling.

    NFKC, case folding and whitespace collapsing are on by default; the ``strip_*`` options
    (HTML tags, punctuation, digits, English stop words) are off by default.
    """

    nfkc: bool = True
    casefold: bool = True
    strip_html: bool = False
    strip_punctuation: bool = False
    strip_digits: bool = False
    strip_stopwords: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check_bool(f.name, getattr(self, f.name))


@record(frozen=True)
class ShingleConfig:
    """Shingles: ``kind`` "word" (k consecutive tokens) or "char" (k consecutive characters).

    ``offset`` is the distance between the starts of two consecutive shingles; 1 takes
    every shingle. A non-empty document shorter than one shingle gets exactly one shingle: its
    whole normalised text. An empty document gets no shingles.
    """

    kind: str = "word"
    k: int = 5
    offset: int = 1

    def __post_init__(self) -> None:
        check_choice("shingle kind", self.kind, SHINGLE_KINDS)
        check_int("shingle k", self.k, 1, 64)
        check_int("shingle offset", self.offset, 1, 1024)

    @classmethod
    def parse(cls, spec: str) -> ShingleConfig:
        """Parse ``"word:K[:OFFSET]"`` or ``"char:K[:OFFSET]"``."""
        if isinstance(spec, ShingleConfig):
            return spec
        parts = str(spec).split(":")
        if len(parts) not in (2, 3) or parts[0] not in ("word", "char"):
            raise ConfigError(
                f"shingle={spec!r} is invalid: use 'word:K', 'word:K:OFFSET', 'char:K' or 'char:K:OFFSET'"
            )
        try:
            nums = [int(p) for p in parts[1:]]
        except ValueError:
            raise ConfigError(
                f"shingle={spec!r} is invalid: K and OFFSET must be integers"
            ) from None
        return cls(parts[0], *nums)

    def __str__(self) -> str:
        return f"{self.kind}:{self.k}" + (f":{self.offset}" if self.offset != 1 else "")


SCHEMES = ("oph", "classic")
SHINGLE_KINDS = ("word", "char")
VERIFY_MODES = ("exact", "estimate")
CLUSTER_METHODS = ("components", "strict")
KEEP_CHOICES = ("first", "longest")


def check_threshold(value: Any, name: str = "threshold") -> float:
    """A similarity threshold: a number in (0, 1]."""
    return check_real(name, value, 0.0, 1.0, lo_open=True)


def check_banding(num_perm: Any, bands: Any, rows: Any) -> tuple[int, int, int]:
    """``num_perm`` MinHash values cut into ``bands`` bands of ``rows`` values (``None`` for
    bands or rows: chosen later); ``bands * rows`` must not exceed ``num_perm``."""
    n = check_int("num_perm", num_perm, 2, 4096)
    b = check_int("bands", bands, 1, none=True)
    r = check_int("rows", rows, 1, none=True)
    if b is not None and r is not None and b * r > n:
        raise ConfigError(f"bands*rows={b}*{r}={b * r} is invalid: it exceeds num_perm={n}")
    return n, b, r


@record(frozen=True)
class SketchConfig:
    """MinHash signatures: ``num_perm`` values per document, ``scheme`` "oph" (one-permutation
    hashing with optimal densification, the fast default) or "classic" ((a*x+b) mod 2^61-1)."""

    num_perm: int = 128
    seed: int = 1
    scheme: str = "oph"

    def __post_init__(self) -> None:
        check_int("num_perm", self.num_perm, 2, 4096)
        check_int("seed", self.seed, 0, 2**63 - 1, allowed="an integer from 0 to 2**63-1")
        check_choice("scheme", self.scheme, SCHEMES)


@record(frozen=True)
class LSHConfig:
    """Banding. ``bands``/``rows`` default to the choice made by :func:`neardup.lsh.choose_bands`
    for ``threshold``: the fewest false positives whose probability of finding a pair exactly at
    the threshold is at least ``min_recall``. Buckets with more than ``bucket_cap`` documents are
    reported and linked as a star (each member paired with the bucket's first member)."""

    threshold: float = 0.8
    bands: int | None = None
    rows: int | None = None
    min_recall: float = 0.99
    bucket_cap: int = 500

    def __post_init__(self) -> None:
        check_threshold(self.threshold)
        check_real("min_recall", self.min_recall, 0.0, 1.0, lo_open=True, hi_open=True)
        for name in ("bands", "rows"):
            check_int(
                name,
                getattr(self, name),
                1,
                none=True,
                allowed="a positive integer or None (chosen from the threshold)",
            )
        check_int("bucket_cap", self.bucket_cap, 2)


@record(frozen=True)
class VerifyConfig:
    """How candidate pairs are scored: "exact" Jaccard of the shingle sets, or the signature
    "estimate" (no shingles kept in memory)."""

    mode: str = "exact"

    def __post_init__(self) -> None:
        check_choice("verify", self.mode, VERIFY_MODES)


@record(frozen=True)
class ClusterConfig:
    """``method`` "components" (connected components of verified pairs) or "strict" (every member
    is verified against its cluster's representative, so chains cannot merge unrelated texts).
    ``keep`` picks the representative: the "first" in input order or the "longest" text."""

    method: str = "components"
    keep: str = "first"

    def __post_init__(self) -> None:
        check_choice("cluster", self.method, CLUSTER_METHODS)
        check_choice("keep", self.keep, KEEP_CHOICES)


@record(frozen=True)
class PairsConfig:
    """The pairs table. ``mode`` "all": every pair known to be a duplicate, the verified ones
    and those implied by exact-duplicate groups (two copies of one text; a copy of a text and a
    near-duplicate of it); "edges": only the pairs compared (each copy with its group's first
    document, and the verified pairs). Exact groups of more than ``max_group`` documents are
    written as edges only and the pairs left out are counted (see :mod:`neardup.expand`)."""

    mode: str = "all"
    max_group: int = 1000

    def __post_init__(self) -> None:
        check_choice("pairs", self.mode, ("all", "edges"))
        check_int("pairs_max_group", self.max_group, 1)


@record(frozen=True)
class DedupConfig:
    """All parameters of a batch deduplication run."""

    normalize: NormalizeConfig = field(default_factory=NormalizeConfig)
    shingle: ShingleConfig = field(default_factory=ShingleConfig)
    sketch: SketchConfig = field(default_factory=SketchConfig)
    lsh: LSHConfig = field(default_factory=LSHConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    pairs: PairsConfig = field(default_factory=PairsConfig)

    def __post_init__(self) -> None:
        check_banding(self.sketch.num_perm, self.lsh.bands, self.lsh.rows)

    # flat keyword name -> (section, field)
    _FLAT = {
        "nfkc": ("normalize", "nfkc"),
        "casefold": ("normalize", "casefold"),
        "strip_html": ("normalize", "strip_html"),
        "strip_punctuation": ("normalize", "strip_punctuation"),
        "strip_digits": ("normalize", "strip_digits"),
        "strip_stopwords": ("normalize", "strip_stopwords"),
        "num_perm": ("sketch", "num_perm"),
        "seed": ("sketch", "seed"),
        "scheme": ("sketch", "scheme"),
        "threshold": ("lsh", "threshold"),
        "bands": ("lsh", "bands"),
        "rows": ("lsh", "rows"),
        "min_recall": ("lsh", "min_recall"),
        "bucket_cap": ("lsh", "bucket_cap"),
        "verify": ("verify", "mode"),
        "cluster": ("cluster", "method"),
        "keep": ("cluster", "keep"),
        "pairs": ("pairs", "mode"),
        "pairs_max_group": ("pairs", "max_group"),
    }

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> DedupConfig:
        """Build from flat names: ``shingle="char:5"``, ``threshold=0.7``, ``verify="estimate"``,
        ``cluster="strict"``, ``num_perm=256``, ``strip_html=True``, ..."""
        sections: dict[str, dict[str, Any]] = {
            "normalize": {},
            "sketch": {},
            "lsh": {},
            "verify": {},
            "cluster": {},
            "pairs": {},
        }
        shingle = ShingleConfig()
        for key, value in kwargs.items():
            if key == "shingle":
                shingle = ShingleConfig.parse(value)
            elif key in cls._FLAT:
                sec, name = cls._FLAT[key]
                sections[sec][name] = value
            else:
                allowed = ", ".join(sorted([*cls._FLAT, "shingle"]))
                raise ConfigError(f"unknown parameter {key!r}; allowed: {allowed}")
        return cls(
            normalize=NormalizeConfig(**sections["normalize"]),
            shingle=shingle,
            sketch=SketchConfig(**sections["sketch"]),
            lsh=LSHConfig(**sections["lsh"]),
            verify=VerifyConfig(**sections["verify"]),
            cluster=ClusterConfig(**sections["cluster"]),
            pairs=PairsConfig(**sections["pairs"]),
        )

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["shingle"] = str(self.shingle)
        return d


def flat_defaults() -> dict[str, Any]:
    """The default of every flat keyword of :meth:`DedupConfig.from_kwargs`."""
    d = DedupConfig()
    out: dict[str, Any] = {"shingle": str(d.shingle)}
    for key, (sec, name) in DedupConfig._FLAT.items():
        out[key] = getattr(getattr(d, sec), name)
    return out


def config_from(config: DedupConfig | None, params: dict[str, Any]) -> DedupConfig:
    """The configuration of a run: ``config`` as given, or one built from the flat keyword
    ``params`` (:meth:`DedupConfig.from_kwargs`). Giving ``config`` and changing a keyword
    from its default is an error: one of the two would be ignored."""
    if config is None:
        return DedupConfig.from_kwargs(**params)
    if not isinstance(config, DedupConfig):
        raise ConfigError(f"config={config!r} is invalid: a neardup.DedupConfig")
    defaults = flat_defaults()
    changed = sorted(
        k for k, v in params.items() if not (type(v) is type(defaults[k]) and v == defaults[k])
    )
    if changed:
        raise ConfigError(
            f"pass either config= or the keyword parameters, not both (given: "
            f"config and {', '.join(changed)})"
        )
    return config
