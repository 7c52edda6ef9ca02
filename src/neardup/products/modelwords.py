"""Title cleaning, unit normalisation and model words of product offers.

A *model word* is a token that mixes digits and other characters ("un46es6580", "1080p",
"46inch"): such tokens name models and specifications, and two offers of one product share them
even when shops word their titles differently. Definitions follow the MSM/MSMP papers that seed
000 builds on:

- title model words match :data:`TITLE_MODEL_WORD`,
  ``[a-zA-Z0-9]*(([0-9]+[^0-9, ]+)|([^0-9, ]+[0-9]+))[a-zA-Z0-9]*``, on the cleaned title;
- attribute-value model words are the numeric part of every token of a value that is a decimal
  number, optionally followed by letters (``"60hz"`` -> ``"60"``, ``"46.50 in."`` -> ``"46.5"``),
  written without trailing zeros so that ``46.0`` and ``46`` agree.

Cleaning (:func:`clean_text`): lower case; unit spellings mapped to one canonical unit and
attached to the number before them (``32 Inch``, ``32-inch``, ``32"``, ``32 inches`` ->
``32inch``; ``120 Hertz``, ``120-Hz`` -> ``120hz``); then the symbols that carry no
information go: hyphens are removed (``LC-60LE650U`` -> ``lc60le650u``, as another shop writes
it), ``( ) ' " / , [ ]`` become spaces, and whitespace is collapsed. Units are configuration
(:class:`UnitMap`), not TV-specific code: :data:`DEFAULT_UNITS` covers common ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field
from functools import lru_cache

from .._records import record
from ..errors import ConfigError

#: The MSMP title model-word pattern.
TITLE_MODEL_WORD = re.compile(r"[a-zA-Z0-9]*(([0-9]+[^0-9, ]+)|([^0-9, ]+[0-9]+))[a-zA-Z0-9]*")

#: Canonical unit -> the spellings that mean it (lower case; longest spellings are tried first).
DEFAULT_UNITS: dict[str, tuple[str, ...]] = {
    "inch": ("inches", "inch", "in.", '"', "”", "''"),
    "hz": ("hertz", "hz"),
    "lb": ("pounds", "pound", "lbs", "lb"),
    "w": ("watts", "watt", "w"),
    "mm": ("millimeters", "millimetres", "mm"),
    "cm": ("centimeters", "centimetres", "cm"),
    "kg": ("kilograms", "kg"),
    "gb": ("gigabytes", "gb"),
}

_SYMBOLS = re.compile(r"[()'\"/,\[\]]")
_DIGIT = re.compile(r"\d").search
_VALUE_MW = re.compile(r"^(\d+(?:\.\d+)?)[a-z]*$")


@record(frozen=True)
class UnitMap:
    """Unit spellings to normalise: ``{canonical: (spelling, ...)}``.

    A spelling counts as a unit only right after a number, optionally separated by a space or a
    hyphen (``46 inch``, ``46-inch``, ``46inch``); it is then written as the canonical unit
    attached to the number. The number must stand on its own: digits that end a word
    (``D7000 w/``, ``LX100 mm``) are a model number, and the spelling after them stays a word.
    """

    units: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: dict(DEFAULT_UNITS))

    def __post_init__(self) -> None:
        for canon, spellings in self.units.items():
            if not isinstance(canon, str) or not canon or not canon.isalnum():
                raise ConfigError(f"unit {canon!r} is invalid: a non-empty alphanumeric name")
            if isinstance(spellings, str) or not all(isinstance(s, str) and s for s in spellings):
                raise ConfigError(f"unit {canon!r}: spellings must be a list of non-empty strings")

    def pattern(self) -> re.Pattern[str]:
        pairs = sorted(
            ((s.lower(), c) for c, ss in self.units.items() for s in ss), key=lambda p: -len(p[0])
        )
        alt = "|".join(re.escape(s) for s, _ in pairs)
        # a number of its own (not the tail of a model number: "D7000 w/" is no 7000 watts),
        # an optional space or hyphen, the spelling, and no letter right after it
        return re.compile(rf"(?<![a-z0-9.])(\d+(?:\.\d+)?)[ \-]?({alt})(?![a-z])")

    def canonical(self) -> dict[str, str]:
        return {s.lower(): c for c, ss in self.units.items() for s in ss}


_DEFAULT_MAP = UnitMap()
_PATTERNS: dict[int, tuple[re.Pattern[str], dict[str, str]]] = {}


def _unit_regex(units: UnitMap) -> tuple[re.Pattern[str], dict[str, str]]:
    key = id(units)
    got = _PATTERNS.get(key)
    if got is None or len(_PATTERNS) > 64:
        if len(_PATTERNS) > 64:
            _PATTERNS.clear()
        got = _PATTERNS[key] = (units.pattern(), units.canonical())
    return got


def clean_text(text: str, units: UnitMap | None = None) -> str:
    """Lower-case ``text``, normalise units after numbers, drop the uninformative symbols
    (hyphens removed, ``( ) ' " / , [ ]`` to spaces) and collapse whitespace."""
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    if units is None or units is _DEFAULT_MAP:
        return _clean_default(text)
    return _clean(text, units)


@lru_cache(maxsize=1 << 18)
def _clean_default(text: str) -> str:
    # catalogues repeat attribute values ("Yes", "1080p") and studies clean each offer often
    return _clean(text, _DEFAULT_MAP)


def _clean(text: str, units: UnitMap) -> str:
    rx, canon = _unit_regex(units)
    s = text.lower()
    if _DIGIT(s):  # a unit follows a number: no digit, nothing to normalise
        s = rx.sub(lambda m: m.group(1) + canon[m.group(2)], s)
    s = s.replace("-", "")  # hyphens join: "LC-60LE650U" and "LC60LE650U" are one model
    s = _SYMBOLS.sub(" ", s)
    # runs of whitespace to one space, none at the ends (str.split's whitespace is \s's)
    return " ".join(s.split())


def title_model_words(title: str, units: UnitMap | None = None) -> list[str]:
    """Distinct model words of a title, in order of appearance (see the module docstring)."""
    seen: dict[str, None] = {}
    for tok in clean_text(title, units).split(" "):
        m = TITLE_MODEL_WORD.fullmatch(tok)
        if m is not None:
            seen.setdefault(tok, None)
    return list(seen)


def value_model_words(value: str, units: UnitMap | None = None) -> list[str]:
    """Distinct numeric model words of an attribute value (``"46.0 in."`` -> ``["46"]``)."""
    seen: dict[str, None] = {}
    for tok in clean_text(value, units).split(" "):
        m = _VALUE_MW.match(tok)
        if m is not None:
            num = m.group(1)
            if "." in num:  # one spelling per number: "46.0" and "46" are the same value
                num = num.rstrip("0").rstrip(".")
            seen.setdefault(num, None)
    return list(seen)


_MEASURE = re.compile(r"[\d.]+[a-z]{1,6}")


#: dimensions such as a resolution (``1920x1080``) or a size (``60x40x12``)
_DIMENSIONS = re.compile(r"[\d.]+(?:x[\d.]+){1,2}")


def model_ids(words: list[str] | set[str], min_len: int = 5, min_digits: int = 2) -> set[str]:
    """The model words that look like model numbers: at least ``min_len`` characters, a Latin
    letter and ``min_digits`` digits, and not a measurement (a number followed by a unit-like
    suffix, such as ``1080p``, ``46inch``, ``120hz``) or dimensions (``1920x1080``).
    ``["un46es6580", "1080p", "46inch", "1920x1080"]`` -> ``{"un46es6580"}``."""
    return {
        w
        for w in words
        if len(w) >= min_len
        and any("a" <= c <= "z" for c in w)
        and sum(c.isdigit() for c in w) >= min_digits
        and not _MEASURE.fullmatch(w)
        and not _DIMENSIONS.fullmatch(w)
    }
