"""Describing offers for the matcher (:mod:`.matcher`).

Every offer is described once (:func:`describe`): its title model words, the ones among them that
look like model numbers (:func:`.modelwords.model_ids`), its brand (from a vocabulary learned from
the data), the measurements its title states by unit (``55inch``, ``120hz``, ``1080p``), the
numbers of its attribute values (fractions such as ``30-3/8"`` read as 30.375, thousands
separators dropped) and its cleaned attribute values and key:value pairs. A candidate pair then
becomes a row of :data:`.features.FEATURES` (:func:`.features.pair_features`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import field
from functools import lru_cache
from typing import Any

import numpy as np

from .._records import record
from .blocking import offer_tokens, squared_token_weights
from .candidates import brands_of, main_unit, offer_brands
from .feature_arrays import _joined_index, _kernel_arrays, _seed_sets
from .modelwords import UnitMap, clean_text, model_ids, title_model_words
from .offers import Offers

_MEASURE = re.compile(r"(\d+(?:\.\d+)?)([a-z]+)")
_FRACTION = re.compile(r"(\d+)[- ](\d+)/(\d+)")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
NUMBER_TOLERANCE = 0.11
MIN_INTEGER = 10


def attribute_numbers(attrs: dict[str, str]) -> np.ndarray:
    """The distinctive numbers of an offer's attribute values, sorted: those with a fractional
    part or of at least :data:`MIN_INTEGER` (small integers such as port counts tell offers
    apart poorly).
    ``"30-3/8\\""`` reads as 30.38, ``"100,000:1"`` as 100000."""
    out: set[float] = set()
    for v in attrs.values():
        out.update(_value_numbers(v))
    return np.array(sorted(out), np.float64)


def _fraction(m: re.Match[str]) -> str:
    return f"{int(m.group(1)) + int(m.group(2)) / max(int(m.group(3)), 1):.2f}"


@lru_cache(maxsize=1 << 16)
def _value_numbers(v: str) -> tuple[float, ...]:
    # catalogues repeat attribute values ("1920 x 1080", "60 Hz"): each is read once
    if "/" in v:  # a fraction has a slash
        v = _FRACTION.sub(_fraction, v)
    out = []
    for x in _NUMBER.findall(v):
        try:
            f = float(x.replace(",", ""))
        except ValueError:
            continue
        if f % 1 or f >= MIN_INTEGER:
            out.append(round(f, 2))
    return tuple(out)


def _measures(words: set[str]) -> dict[str, set[str]]:
    d: dict[str, set[str]] = {}
    for w in words:
        m = _MEASURE.fullmatch(w)
        if m is not None:
            d.setdefault(m.group(2), set()).add(m.group(1))
    return d


@record
class OfferDescriptions:
    """What :func:`pair_features` reads of each offer (lists indexed by row)."""

    shops: list[str]
    words: list[set[str]]
    ids: list[set[str]]
    brands: list[str]
    tokens: list[set[str]]
    measures: list[dict[str, set[str]]]
    numbers: list[np.ndarray]
    values: list[set[str]]
    key_values: list[set[str]]
    main_unit: str | None
    units: tuple[str, ...]
    number_df: dict[int, int]
    token_idf: dict[str, float]
    value_idf: dict[str, float]
    desc_tokens: list[set[str]]
    number_lists: list[list[float]]
    number_idf: list[list[float]]
    number_rare: list[list[bool]]
    #: per number, ``log(n / c)``: ``c`` the numbers of all ``n`` offers within the tolerance
    #: of it (``num_idf_sum``)
    number_near_idf: list[list[float]]
    number_idf_total: list[float]
    token_weight: list[float]
    value_weight: list[float]
    seed_sets: list[set[str]]
    block_tokens: list[set[str]]
    block_weight: dict[str, float]  # token -> squared weight
    block_norm: list[float]
    grams: list[set[str]]
    prices: list[float]
    #: the model numbers of ``ids`` as the offer writes them (case and hyphens kept)
    written: list[set[str]]
    #: the word sets of :data:`_INDEXED` as sorted integer sets, made at the first
    #: :func:`pair_features` (:func:`_set_index`), or by :func:`describe` from the coded sets
    #: of :func:`code_parts`
    _index: dict | None = field(default=None, repr=False, compare=False)
    #: the offers as arrays for the features kernel (:func:`_kernel_arrays`), made at the first
    #: :func:`pair_features`, or by :func:`describe` from the sets of :func:`code_parts`
    _arrays: tuple | None = field(default=None, repr=False, compare=False)
    #: :func:`_shop_codes`
    _shop_codes: tuple | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.shops)


def offer_parts(
    offers: Offers, units: UnitMap | None = None, model_keys: Sequence[str] = ("model",)
) -> dict[str, Any]:
    """What :func:`describe` reads of each offer on its own, whatever catalogue it is in:
    ``{name: list with one entry per offer}``. A study describes many parts of one catalogue:
    it makes these once and passes each part's rows of them to :func:`describe`
    (:func:`select_parts`)."""
    words = [set(title_model_words(t, units)) for t in offers.titles]
    keys = tuple(k.lower() for k in model_keys)
    ids, written, spelled = [], [], []
    for w, title, attrs in zip(words, offers.titles, offers.attributes):
        found = model_ids(w)
        texts = [title]
        for k, v in attrs.items():
            if any(m in k.lower() for m in keys):
                found |= model_ids(set(title_model_words(v, units)))
                texts.append(v)
        ids.append(found)
        written.append(_written_ids(texts, found, units) if found else set())
        spelled.append(spellings(texts))
    values, kv = [], []
    for attrs in offers.attributes:
        cv = {k: clean_text(v, units) for k, v in attrs.items()}
        values.append(set(cv.values()) - {""})
        kv.append({clean_text(k, units) + ":" + v for k, v in cv.items()})
    number_lists = [attribute_numbers(a).tolist() for a in offers.attributes]
    descs = offers.descriptions if len(offers.descriptions) == len(offers) else []
    return {
        "words": words,
        "ids": ids,
        "measures": [_measures(w) for w in words],
        "tokens": [set(clean_text(t, units).split(" ")) for t in offers.titles],
        "values": values,
        "kv": kv,
        "number_lists": number_lists,
        "number_keys": [[_number_key(x) for x in v] for v in number_lists],
        "desc": (
            [set(clean_text(t, units).split(" ")) - {""} for t in descs] or [set()] * len(offers)
        ),
        "block": offer_tokens(offers, units),
        "grams": [_grams(t, units) for t in offers.titles],
        "prices": [_price(a) for a in offers.attributes],
        "written": written,
        "spelled": spelled,
    }


_RAW_WORDS = re.compile(r"[^\s()'\"/,\[\]]+")


def _written_ids(texts: list[str], ids: set[str], units: UnitMap | None) -> set[str]:
    """The model numbers ``ids`` as ``texts`` write them (case, hyphens)."""
    return {w for t in texts for w in _RAW_WORDS.findall(t) if clean_text(w, units) in ids}


#: :func:`spellings`: the most words joined, and the longest word that may follow another
SPELL_RUN = 3
SPELL_TAIL = 4
_SPELL_SPLIT = re.compile(r"[^0-9a-z]+")


def spellings(texts: Sequence[str]) -> frozenset[str]:
    """The ways ``texts`` may write a model number in pieces, lower-cased: each word that holds
    a letter and a digit, alone and joined with the next one or two words of at most
    :data:`SPELL_TAIL` characters. Words are split at every character that is not a Latin
    letter, a digit or a hyphen; hyphens join, as in :func:`.modelwords.clean_text`. A shop
    writes ``DSC-W120/P``, ``SX110 IS``, ``9S00.006`` or ``#EL012A`` where another writes
    ``DSCW120P``, ``SX110IS``, ``9S00006`` or ``EL012A``: the run joins the pieces. A run
    never ends inside a word (neither ``UN55ES6500FXZA`` nor ``PN58C680-RB``, a refurbished
    set, spells the model number without its suffix) nor starts with a word without digits
    (``1920 X 1080`` does not spell ``X1080``, nor ``RS 232`` ``RS232``)."""
    out: set[str] = set()
    for t in texts:
        words = [w for w in _SPELL_SPLIT.split(t.lower().replace("-", "")) if w]
        for i, w in enumerate(words):
            if len(w) < 2 or w.isdigit() or w.isalpha():
                continue
            run = w
            out.add(run)
            for tail in words[i + 1 : i + SPELL_RUN]:
                if len(tail) > SPELL_TAIL:
                    break
                run += tail
                out.add(run)
    return frozenset(out)


def spelled_ids(ids: Sequence[set[str]], spelled: Sequence[frozenset[str]]) -> list[set[str]]:
    """Each offer's model numbers, with the model numbers of the other offers that it spells in
    pieces (:func:`spellings`): ``DSC-W120/P`` states ``dscw120p`` where another offer of the
    catalogue writes ``DSCW120P``."""
    known = set().union(*ids) if ids else set()
    return [s | (sp & known) if not known.isdisjoint(sp) else s for s, sp in zip(ids, spelled)]


def select_parts(parts: dict[str, Any], rows) -> dict[str, Any]:
    """The entries of :func:`offer_parts` of the offers at ``rows``, in that order."""
    rows = np.asarray(rows).tolist()
    # what is not a list holds for the whole catalogue (code_parts' vocabularies)
    return {k: [v[i] for i in rows] if isinstance(v, list) else v for k, v in parts.items()}


def describe(
    offers: Offers,
    units: UnitMap | None = None,
    brand_vocab: frozenset[str] | None = None,
    model_keys: Sequence[str] = ("model",),
    parts: dict[str, Any] | None = None,
) -> OfferDescriptions:
    """Describe every offer once (module docstring). ``brand_vocab``: brands to recognise
    (default: learned from the data, :func:`.candidates.brands_of`).
    ``model_keys``: attributes whose name contains one of these (case-insensitive) may state
    the model number; their model words count as the offer's model numbers too. ``parts``:
    :func:`offer_parts` of these offers, if already made (with the same ``units`` and
    ``model_keys``); what depends on the whole catalogue (brands, units, document
    frequencies) is computed here."""
    if parts is None:
        parts = offer_parts(offers, units, model_keys)
    words, measures, tokens = parts["words"], parts["measures"], parts["tokens"]
    ids = spelled_ids(parts["ids"], parts["spelled"])
    values, kv, number_lists = parts["values"], parts["kv"], parts["number_lists"]
    number_keys, desc, block = parts["number_keys"], parts["desc"], parts["block"]
    brands = same_brands(
        brands_of(offers, units)
        if brand_vocab is None
        else offer_brands(offers, brand_vocab, units),
        ids,
    )
    unit = main_unit(offers, units, words)
    freq = Counter(u for m in measures for u in m)
    others = tuple(u for u, _ in freq.most_common() if u != unit)[:3]
    numbers = [np.array(v, np.float64) for v in number_lists]
    number_df = Counter(k for v in number_keys for k in set(v))
    n = max(len(offers), 1)
    rare_cut = max(2, n // 200)
    logs: dict[int, float] = {}  # document frequency -> IDF (one np.log per distinct count)

    def idf(c: int) -> float:
        got = logs.get(c)
        if got is None:
            got = logs[c] = _exact(float(np.log(n / c)))
        return got

    number_idf = [[idf(number_df[k]) for k in v] for v in number_keys]
    number_rare = [[number_df[k] <= rare_cut for k in v] for v in number_keys]
    number_near_idf = _near_idf(number_lists, n)
    token_idf = {t: idf(c) for t, c in Counter(t for s in tokens for t in s).items()}
    value_idf = {t: idf(c) for t, c in Counter(t for s in values for t in s).items()}
    bweight = {t: _exact(v) for t, v in squared_token_weights(block).items()}
    d = OfferDescriptions(
        list(offers.shops),
        words,
        ids,
        brands,
        tokens,
        measures,
        numbers,
        values,
        kv,
        unit,
        others,
        dict(number_df),
        token_idf,
        value_idf,
        desc,
        number_lists,
        number_idf,
        number_rare,
        number_near_idf,
        [sum(v) for v in number_idf],
        [sum(token_idf[t] for t in s) for s in tokens],
        [sum(value_idf[t] for t in s) for s in values],
        parts["seed_sets"] if "seed_sets" in parts else _seed_sets(tokens, kv),
        block,
        bweight,
        [float(np.sqrt(sum(bweight[t] for t in toks))) for toks in block],
        parts["grams"],
        parts["prices"],
        parts["written"],
        _joined_index(parts["coded"]) if "coded" in parts else None,
    )
    if "kernel" in parts:
        d._arrays = _kernel_arrays(d, parts["kernel"], parts["kernel_vocab"])
    return d


#: :func:`_exact`: weights are whole multiples of ``1 / WEIGHT_QUANTUM``
WEIGHT_QUANTUM = 2.0**32


def _exact(w: float) -> float:
    """``w`` rounded to a whole multiple of ``1 / WEIGHT_QUANTUM``. The features sum word
    weights over sets, in the order a set iterates, which changes with the process's string
    hashing; sums of such multiples (below ``2 ** 20``) are exact in any order, so that the
    features, and ties at a threshold, do not change from one run to the next."""
    return round(w * WEIGHT_QUANTUM) / WEIGHT_QUANTUM


def _near_idf(number_lists: list[list[float]], n: int) -> list[list[float]]:
    """For each number of each offer, ``log(n / c)``, ``c`` the numbers of all offers within
    :data:`NUMBER_TOLERANCE` of it, itself included (``num_idf_sum``)."""
    flat = [x for v in number_lists for x in v]
    if not flat:
        return [[] for _ in number_lists]
    x = np.asarray(flat, np.float64)
    allv = np.sort(x)
    tol = NUMBER_TOLERANCE + 1e-9
    c = np.searchsorted(allv, x + tol, "right") - np.searchsorted(allv, x - tol, "left")
    # an offer may state two numbers within the tolerance of one another: c may pass n, and a
    # number that common weighs nothing (never negative)
    idf = np.log(n / np.clip(c, 1, n)).tolist()
    out, k = [], 0
    for v in number_lists:
        out.append(idf[k : k + len(v)])
        k += len(v)
    return out


def _grams(title: str, units: UnitMap | None, k: int = 3) -> set[str]:
    """The character ``k``-grams of a title, cleaned, its words run together."""
    t = clean_text(title, units).replace(" ", "")
    return {t[i : i + k] for i in range(len(t) - k + 1)}


def _price(attrs: dict[str, str]) -> float:
    """The offer's price: the first number of the first attribute whose name holds "price"
    (``"$1,299.99"`` -> 1299.99); 0 when none states one."""
    for k, v in attrs.items():
        if "price" in k.lower():
            m = _NUMBER.search(v)
            if m is not None:
                try:
                    return float(m.group().replace(",", ""))
                except ValueError:
                    continue
    return 0.0


#: :func:`same_brands`: brand words of at least this many characters stand for the longer
#: brand words they begin (``fuji`` for ``fujifilm``, ``hewlett`` for ``hewlettpackard``)
BRAND_PREFIX = 3
#: :func:`same_brands`: two brand words are one brand when offers of each state this many
#: distinct model numbers in common
BRAND_SHARED_IDS = 2
#: :func:`same_brands`: model numbers that offers of more brands than this state are too
#: generic to tell brands apart or bring them together
BRAND_ID_SPREAD = 3


def same_brands(brands: Sequence[str], ids: Sequence[set[str]]) -> list[str]:
    """Each offer's brand word replaced by one name for all the words that, as the data shows,
    name one brand: a word and the longer words it begins (``fuji``, ``fujifilm``; at least
    :data:`BRAND_PREFIX` characters), and words whose offers state :data:`BRAND_SHARED_IDS` or
    more model numbers in common (``hp`` and ``hewlett``, a maker and its former name, a shop
    that puts its own name in the brand field). The name is the most common word of the group.
    Nothing is looked up in a list: what is one brand is learned from these offers."""
    words = sorted({b for b in brands if b})
    parent = {w: w for w in words}

    def find(w: str) -> str:
        while parent[w] != w:
            parent[w] = parent[parent[w]]
            w = parent[w]
        return w

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for i, w in enumerate(words):  # sorted: the words that begin with w follow it
        if len(w) < BRAND_PREFIX:
            continue
        for v in words[i + 1 :]:
            if not v.startswith(w):
                break
            union(w, v)
    by_id: dict[str, set[str]] = {}  # model number -> the brands (so far) that state it
    for b, found in zip(brands, ids):
        if b:
            for m in found:
                by_id.setdefault(m, set()).add(find(b))
    shared: Counter[tuple[str, str]] = Counter()
    for group in by_id.values():
        if 1 < len(group) <= BRAND_ID_SPREAD:
            g = sorted(group)
            for i, a in enumerate(g):
                for b in g[i + 1 :]:
                    shared[a, b] += 1
    for (a, b), c in shared.items():
        if c >= BRAND_SHARED_IDS:
            union(a, b)
    counts = Counter(b for b in brands if b)
    name: dict[str, str] = {}
    for w in sorted(words, key=lambda w: (-counts[w], w)):
        name.setdefault(find(w), w)
    return [name[find(b)] if b else "" for b in brands]


def _number_key(x: float) -> int:
    return int(x)  # 30.38 and 30.3 (one shop rounds, the other truncates) count as one
