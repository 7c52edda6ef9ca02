"""Frozen, validated parameter sets for every stage, and the one table of the flat parameters.

Each deduplication parameter (``threshold``, ``shingle``, ``num_perm``, ...) is declared once,
in :data:`PARAMETERS`: its keyword, the configuration section and field it sets, its default,
what it allows, its command-line option and help. The checks of the configuration records,
:meth:`DedupConfig.from_kwargs`, :func:`flat_defaults`, the command line's options, the web
service's fields and the parameter reference (``python -m neardup.config --markdown``) are
made from it.

Each dataclass checks its fields on construction and raises :class:`ConfigError` saying which
field was wrong, what it was, and what is allowed. :class:`DedupConfig` groups them and can be
built from flat keyword arguments (``DedupConfig.from_kwargs(threshold=0.7, shingle="char:5")``),
which is what :func:`neardup.dedup` and the CLI do.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import field
from typing import Any

from ._records import record
from .errors import ConfigError
from .validate import check_bool, check_choice, check_int, check_real

SCHEMES = ("oph", "classic")
SHINGLE_KINDS = ("word", "char")
VERIFY_MODES = ("exact", "estimate")
CLUSTER_METHODS = ("components", "strict")
KEEP_CHOICES = ("first", "longest")
PAIRS_MODES = ("all", "edges")


@record(frozen=True)
class Param:
    """One flat parameter: the keyword ``name`` of :func:`neardup.dedup`,
    :class:`~neardup.Deduplicator`, :class:`~neardup.Index` and
    :meth:`DedupConfig.from_kwargs`, which sets ``field`` of the configuration ``section``.

    ``kind`` is "bool", "int", "real", "choice" (one of ``choices``) or "shingle" (a
    specification that :meth:`ShingleConfig.parse` reads: the whole section). ``lo``/``hi``
    bound a number (``lo_open``/``hi_open`` leave the bound out); ``none``: ``None`` is allowed
    too (chosen later); ``allowed``: what an error message says is allowed, where not the
    generated words. ``flag``, ``metavar`` and ``help`` (``{default}`` is replaced by the
    default) make the command-line option; a boolean that is on by default has a ``--no-``
    flag that turns it off."""

    name: str
    section: str
    field: str | None
    kind: str
    default: Any
    help: str
    flag: str
    metavar: str | None = None
    choices: tuple[Any, ...] = ()
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    none: bool = False
    allowed: str | None = None

    @property
    def negated(self) -> bool:
        """Whether the option turns the parameter off (``--no-nfkc`` for ``nfkc=True``)."""
        return self.kind == "bool" and self.default is True

    @property
    def dest(self) -> str:
        """The attribute of the parsed command line that holds the option."""
        return self.flag.lstrip("-").replace("-", "_")

    def help_text(self) -> str:
        """The help of the option, its default filled in."""
        return self.help.format(default=self.default)

    def check(self, value: Any, name: str | None = None) -> Any:
        """``value`` if the parameter allows it (ints as ``int``, reals as ``float``), else a
        :class:`ConfigError` naming the parameter (or ``name``)."""
        name = name or self.name
        if self.kind == "bool":
            return check_bool(name, value)
        if self.kind == "int":
            lo = None if self.lo is None else int(self.lo)
            hi = None if self.hi is None else int(self.hi)
            return check_int(name, value, lo, hi, none=self.none, allowed=self.allowed)
        if self.kind == "real":
            return check_real(
                name,
                value,
                self.lo,
                self.hi,
                lo_open=self.lo_open,
                hi_open=self.hi_open,
                none=self.none,
                allowed=self.allowed,
            )
        if self.kind == "choice":
            return check_choice(name, value, self.choices)
        return ShingleConfig.parse(value)

    def allowed_text(self) -> str:
        """What the parameter allows, in words (the parameter reference's column)."""
        if self.kind == "bool":
            return "`True` or `False`"
        if self.kind == "choice":
            return " or ".join(f"`{c}`" for c in self.choices)
        if self.kind == "shingle":
            return "`word:K[:OFFSET]` or `char:K[:OFFSET]`"
        if self.allowed is not None:
            return self.allowed
        if self.kind == "int":
            words = (
                f"an integer >= {self.lo:g}"
                if self.hi is None
                else (f"an integer from {self.lo:g} to {self.hi:g}")
            )
            return words + (" or None" if self.none else "")
        lo_b, hi_b = "(" if self.lo_open else "[", ")" if self.hi_open else "]"
        return f"a number in {lo_b}{self.lo:g}, {self.hi:g}{hi_b}"


_NORMALIZE = "normalize"

#: Every flat parameter, in the order of the keywords of :func:`neardup.dedup`.
PARAMETERS: tuple[Param, ...] = (
    Param(
        "threshold",
        "lsh",
        "threshold",
        "real",
        0.8,
        "Jaccard similarity at which two texts are near-duplicates (default: {default})",
        "--threshold",
        lo=0.0,
        hi=1.0,
        lo_open=True,
    ),
    Param(
        "shingle",
        "shingle",
        None,
        "shingle",
        "word:5",
        "word:K[:OFFSET] (K-word shingles, OFFSET words apart) or char:K[:OFFSET] "
        "(default: {default})",
        "--shingle",
        metavar="SPEC",
    ),
    Param(
        "num_perm",
        "sketch",
        "num_perm",
        "int",
        128,
        "MinHash values per document (default: {default})",
        "--num-perm",
        metavar="K",
        lo=2,
        hi=4096,
    ),
    Param(
        "scheme",
        "sketch",
        "scheme",
        "choice",
        "oph",
        "how the MinHash signature is computed: oph (default) hashes each "
        "shingle once and spreads the hashes over the signature's values "
        "(fast); classic computes one hash function (a*x+b) mod 2^61-1 per "
        "value (the textbook method, slower); both estimate the same Jaccard "
        "similarity",
        "--scheme",
        choices=SCHEMES,
    ),
    Param(
        "seed",
        "sketch",
        "seed",
        "int",
        1,
        "hash seed (default: {default})",
        "--seed",
        lo=0,
        hi=2**63 - 1,
        allowed="an integer from 0 to 2**63-1",
    ),
    Param(
        "bands",
        "lsh",
        "bands",
        "int",
        None,
        "number of bands (default: chosen)",
        "--bands",
        lo=1,
        none=True,
        allowed="a positive integer or None (chosen from the threshold)",
    ),
    Param(
        "rows",
        "lsh",
        "rows",
        "int",
        None,
        "rows per band (default: chosen)",
        "--rows",
        lo=1,
        none=True,
        allowed="a positive integer or None (chosen from the threshold)",
    ),
    Param(
        "min_recall",
        "lsh",
        "min_recall",
        "real",
        0.99,
        "lowest probability of finding a pair exactly at the threshold when "
        "bands and rows are chosen (default: {default})",
        "--min-recall",
        lo=0.0,
        hi=1.0,
        lo_open=True,
        hi_open=True,
    ),
    Param(
        "bucket_cap",
        "lsh",
        "bucket_cap",
        "int",
        500,
        "a band value shared by more documents than this is not paired "
        "all with all: each of them is paired with the bucket's first "
        "document only, and the summary counts such buckets "
        "(default: {default})",
        "--bucket-cap",
        metavar="N",
        lo=2,
    ),
    Param(
        "verify",
        "verify",
        "mode",
        "choice",
        "exact",
        "exact Jaccard of the shingle sets (default) or the MinHash estimate",
        "--verify",
        choices=VERIFY_MODES,
    ),
    Param(
        "cluster",
        "cluster",
        "method",
        "choice",
        "components",
        "components (union-find, default) or strict (every member verified "
        "against its representative: no chaining)",
        "--cluster",
        choices=CLUSTER_METHODS,
    ),
    Param(
        "keep",
        "cluster",
        "keep",
        "choice",
        "first",
        "representative kept from each cluster (default: {default})",
        "--keep",
        choices=KEEP_CHOICES,
    ),
    Param(
        "pairs",
        "pairs",
        "mode",
        "choice",
        "all",
        "rows of the pairs table: every pair known to be a duplicate, the "
        "verified ones and those implied by exact duplicates (column implied; "
        "all, default), or only the pairs compared (edges)",
        "--pairs",
        choices=PAIRS_MODES,
    ),
    Param(
        "pairs_max_group",
        "pairs",
        "max_group",
        "int",
        1000,
        "exact-duplicate groups of more documents are written as edges only "
        "(each copy with the group's first document); the summary counts the "
        "pairs left out (default: {default})",
        "--pairs-max-group",
        metavar="N",
        lo=1,
    ),
    Param("nfkc", _NORMALIZE, "nfkc", "bool", True, "skip Unicode NFKC normalisation", "--no-nfkc"),
    Param("casefold", _NORMALIZE, "casefold", "bool", True, "keep letter case", "--no-casefold"),
    Param(
        "strip_html",
        _NORMALIZE,
        "strip_html",
        "bool",
        False,
        "remove HTML tags and entities",
        "--strip-html",
    ),
    Param(
        "strip_punctuation",
        _NORMALIZE,
        "strip_punctuation",
        "bool",
        False,
        "replace punctuation by spaces",
        "--strip-punctuation",
    ),
    Param(
        "strip_digits",
        _NORMALIZE,
        "strip_digits",
        "bool",
        False,
        "remove digits",
        "--strip-digits",
    ),
    Param(
        "strip_stopwords",
        _NORMALIZE,
        "strip_stopwords",
        "bool",
        False,
        "remove English stop words",
        "--strip-stopwords",
    ),
)

#: :data:`PARAMETERS` by keyword.
PARAMS: dict[str, Param] = {p.name: p for p in PARAMETERS}

#: The index's own parameters (section "index"): keywords of :class:`neardup.Index` and options
#: of ``neardup index create``, in no :class:`DedupConfig`. (``Index`` takes ``passages`` as
#: ``True``, ``False`` or a :class:`neardup.PassageConfig`.)
INDEX_PARAMETERS: tuple[Param, ...] = (
    Param(
        "store_text",
        "index",
        "store_text",
        "bool",
        True,
        "do not store the texts (smaller; "
        "side-by-side passages, reused passages and query by id need them)",
        "--no-texts",
    ),
    Param(
        "passages",
        "index",
        "passages",
        "bool",
        False,
        "also index passage fingerprints, so that checks (the web page, "
        "Index.check) find passages copied into otherwise different texts; "
        "adding documents is about 3x slower and the index ~40% larger "
        "(default: whole-text near-duplicates only)",
        "--passages",
    ),
)
_BY_FIELD = {(p.section, p.field): p for p in PARAMETERS}


def _default(name: str) -> Any:
    return PARAMS[name].default


def _check_fields(section: str, rec: Any, names: tuple[str, ...] = ()) -> None:
    """Check the fields of ``rec``, the record of ``section``, against :data:`PARAMETERS`, in
    the order of ``names`` (default: the record's)."""
    for name in names or tuple(f.name for f in dataclasses.fields(rec)):
        _BY_FIELD[(section, name)].check(getattr(rec, name))


@record(frozen=True)
class NormalizeConfig:
    """Text normalisation, applied before fingerprinting and shingling.

    NFKC, case folding and whitespace collapsing are on by default; the ``strip_*`` options
    (HTML tags, punctuation, digits, English stop words) are off by default.
    """

    nfkc: bool = _default("nfkc")
    casefold: bool = _default("casefold")
    strip_html: bool = _default("strip_html")
    strip_punctuation: bool = _default("strip_punctuation")
    strip_digits: bool = _default("strip_digits")
    strip_stopwords: bool = _default("strip_stopwords")

    def __post_init__(self) -> None:
        _check_fields("normalize", self)


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


def check_threshold(value: Any, name: str = "threshold") -> float:
    """A similarity threshold: a number in (0, 1]."""
    return float(PARAMS["threshold"].check(value, name))


def check_banding(num_perm: Any, bands: Any, rows: Any) -> tuple[int, int | None, int | None]:
    """``num_perm`` MinHash values cut into ``bands`` bands of ``rows`` values (``None`` for
    bands or rows: chosen later); ``bands * rows`` must not exceed ``num_perm``."""
    n = int(PARAMS["num_perm"].check(num_perm))
    b = check_int("bands", bands, 1, none=True)
    r = check_int("rows", rows, 1, none=True)
    if b is not None and r is not None and b * r > n:
        raise ConfigError(f"bands*rows={b}*{r}={b * r} is invalid: it exceeds num_perm={n}")
    return n, b, r


@record(frozen=True)
class SketchConfig:
    """MinHash signatures: ``num_perm`` values per document, ``scheme`` "oph" (one-permutation
    hashing with optimal densification, the fast default) or "classic" ((a*x+b) mod 2^61-1)."""

    num_perm: int = _default("num_perm")
    seed: int = _default("seed")
    scheme: str = _default("scheme")

    def __post_init__(self) -> None:
        _check_fields("sketch", self)


@record(frozen=True)
class LSHConfig:
    """Banding. ``bands``/``rows`` default to the choice made by :func:`neardup.lsh.choose_bands`
    for ``threshold``: the fewest false positives whose probability of finding a pair exactly at
    the threshold is at least ``min_recall``. Buckets with more than ``bucket_cap`` documents are
    reported and linked as a star (each member paired with the bucket's first member)."""

    threshold: float = _default("threshold")
    bands: int | None = _default("bands")
    rows: int | None = _default("rows")
    min_recall: float = _default("min_recall")
    bucket_cap: int = _default("bucket_cap")

    def __post_init__(self) -> None:
        _check_fields("lsh", self, ("threshold", "min_recall", "bands", "rows", "bucket_cap"))


@record(frozen=True)
class VerifyConfig:
    """How candidate pairs are scored: "exact" Jaccard of the shingle sets, or the signature
    "estimate" (no shingles kept in memory)."""

    mode: str = _default("verify")

    def __post_init__(self) -> None:
        _check_fields("verify", self)


@record(frozen=True)
class ClusterConfig:
    """``method`` "components" (connected components of verified pairs) or "strict" (every member
    is verified against its cluster's representative, so chains cannot merge unrelated texts).
    ``keep`` picks the representative: the "first" in input order or the "longest" text."""

    method: str = _default("cluster")
    keep: str = _default("keep")

    def __post_init__(self) -> None:
        _check_fields("cluster", self)


@record(frozen=True)
class PairsConfig:
    """The pairs table. ``mode`` "all": every pair known to be a duplicate, the verified ones
    and those implied by exact-duplicate groups (two copies of one text; a copy of a text and a
    near-duplicate of it); "edges": only the pairs compared (each copy with its group's first
    document, and the verified pairs). Exact groups of more than ``max_group`` documents are
    written as edges only and the pairs left out are counted (see :mod:`neardup.expand`)."""

    mode: str = _default("pairs")
    max_group: int = _default("pairs_max_group")

    def __post_init__(self) -> None:
        _check_fields("pairs", self)


#: The record of each section of :class:`DedupConfig` but ``shingle`` (parsed whole).
_SECTIONS: dict[str, Any] = {
    "normalize": NormalizeConfig,
    "sketch": SketchConfig,
    "lsh": LSHConfig,
    "verify": VerifyConfig,
    "cluster": ClusterConfig,
    "pairs": PairsConfig,
}


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

    @classmethod
    def from_kwargs(cls, **kwargs: Any) -> DedupConfig:
        """Build from flat names (:data:`PARAMETERS`): ``shingle="char:5"``, ``threshold=0.7``,
        ``verify="estimate"``, ``cluster="strict"``, ``num_perm=256``, ``strip_html=True``, ..."""
        sections: dict[str, dict[str, Any]] = {name: {} for name in _SECTIONS}
        shingle = ShingleConfig()
        for key, value in kwargs.items():
            p = PARAMS.get(key)
            if p is None:
                allowed = ", ".join(sorted(PARAMS))
                raise ConfigError(f"unknown parameter {key!r}; allowed: {allowed}")
            if p.field is None:  # the shingle specification: the whole section
                shingle = ShingleConfig.parse(value)
            else:
                sections[p.section][p.field] = value
        made = {name: rec(**sections[name]) for name, rec in _SECTIONS.items()}
        return cls(shingle=shingle, **made)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["shingle"] = str(self.shingle)
        return d


def flat_defaults() -> dict[str, Any]:
    """The default of every flat keyword of :meth:`DedupConfig.from_kwargs`."""
    return {p.name: p.default for p in PARAMETERS}


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


def markdown() -> str:
    """The parameter reference: a Markdown table of :data:`PARAMETERS` (what the README
    shows)."""

    def shown(p: Param) -> str:
        return "chosen" if p.default is None else f"`{p.default}`"

    def cell(text: str) -> str:  # no emphasis made of 2**63 or a*x+b
        return text if text.startswith("`") else text.replace("*", "\\*")

    lines = [
        "| keyword | option | default | allowed | meaning |",
        "|---|---|---|---|---|",
    ]
    for p in PARAMETERS + INDEX_PARAMETERS:
        option = p.flag + (f" {p.metavar}" if p.metavar else "")
        # the default has a column of its own
        meaning = p.help.removesuffix(" (default: {default})").format(default=p.default)
        if p.negated:
            meaning = f"`{p.flag}`: {meaning}"
        keyword = f"`{p.name}`" + (" (`Index` only)" if p.section == "index" else "")
        cells = [keyword, f"`{option}`", shown(p), p.allowed_text(), meaning]
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] != ["--markdown"]:
        sys.exit("usage: python -m neardup.config --markdown")
    sys.stdout.write(markdown())
