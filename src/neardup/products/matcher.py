"""Scoring candidate pairs of offers, and turning scores into duplicates and clusters.

Every offer is described once (:func:`describe`): its title model words, the ones among them that
look like model numbers (:func:`.modelwords.model_ids`), its brand (from a vocabulary learned from
the data), the measurements its title states by unit (``55inch``, ``120hz``, ``1080p``), the
numbers of its attribute values (fractions such as ``30-3/8"`` read as 30.375, thousands
separators dropped) and its cleaned attribute values and key:value pairs. A candidate pair then
becomes a row of :data:`FEATURES` (:func:`pair_features`), all of them plain evidence a person
can check:

==============  ============================================================================
``id_share``    both titles carry a model number and share one (also where one offer writes
                it in pieces, ``DSC-W120/P`` or ``SX110 IS``, that another writes whole:
                :func:`spelled_ids`)
``id_prefix``   no shared model number, but one is a prefix of the other (6+ characters)
``id_conflict`` both carry model numbers, none shared or prefix-related
``id_one``      only one of the two carries a model number
``id_written``  they share a model number written alike (case and hyphens as the offers write
                them: ``LC-70LE550U`` and ``LC70LE550U`` share the model number, not the
                writing). Labels may follow the writing: in the TV offers' labels, 37 of 40
                candidate pairs across shops that share a model number written differently
                are two products, against 29 of 277 written alike. Only a trained model uses
                it, and it learns from the labels whether the writing matters
``brand``       +1 same brand, -1 different brands
``size``        the main unit (learned: the unit most titles state, e.g. inch): +1 a shared
                value, -1 both state values and none is shared, 0 otherwise
``unit1..3``    the same for the next three most frequent title units (e.g. p, hz)
``units_agree`` / ``units_conflict``: counts over all other title units
``same_shop``   both offers come from one shop (shops rarely list a product twice)
``title_jac``   Jaccard of the cleaned title words
``mw_jac``      Jaccard of the title model words
``num_match``   share of the attribute numbers of the offer with fewer of them that the other
                offer's attributes also state (within ``0.11``: ``30-3/8`` matches ``30.3``);
                -1 when one side states none
``num_rare``    how many of the matched numbers at most ``max(2, n/200)`` offers state
``num_idf``     ``num_match`` weighted by each number's inverse document frequency
``num_shared``  how many of the shorter side's numbers the other offer states too (one
                product's two pages share many: sizes, weights, power, contrast; a sibling
                model shares a few)
``num_long``    the share of the longer side's numbers that the shorter side states (-1 when
                one side states none; ``num_shared`` and ``num_unmatched`` are 0 then)
``num_unmatched`` how many of the shorter side's numbers the other offer does not state
``num_idf_sum`` the matched numbers of the shorter side, each weighted by ``log(n / c)``,
                ``c`` the numbers of all ``n`` offers within the tolerance of it: a
                weight of ``19.9`` lbs that few offers state counts more than ``1080``
                (``num_idf`` counts a number by its integer part, so ``30.7`` and ``30.2``
                are one there)
``value_jac``   Jaccard of the cleaned attribute values (whatever their keys)
``seed_jac``    the baseline's similarity: Jaccard of title words and attribute key:value pairs
``title_idf``   IDF-weighted Jaccard of the title words
``value_idf``   IDF-weighted Jaccard of the attribute values
``desc_jac``    Jaccard of the description words (0 when either offer has none)
``title_cos``   cosine of the two titles' IDF-weighted words and model-word prefixes
                (:func:`.blocking.title_cosine`: model words count 4 times more)
``char_jac``    Jaccard of the character 3-grams of the cleaned titles (spelling variants,
                ``LM-46X210`` and ``LM46X210``, words run together)
``price_ratio`` the lower price over the higher (an attribute whose name holds ``price``, or
                the ``--price-field`` column); -1 when either offer states none
==============  ============================================================================

Nothing here knows about televisions: units, brands and the main unit come from the data or
from configuration. A classifier (:class:`PairModel`, a random forest, fitted
on labelled pairs) or, without labels, the fixed :func:`rule_score` maps the rows to scores;
:func:`one_per_shop` keeps, among the pairs without model-number evidence, only the mutually
best one per offer and shop (a shop lists a product once); pairs scoring at least a threshold
(tuned on labelled data, or :data:`RULE_THRESHOLD`) are duplicates, and :func:`offer_clusters`
groups them.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import field
from functools import lru_cache
from itertools import chain

import numpy as np

from .._records import record
from .blocking import offer_tokens, squared_token_weights
from .candidates import brands_of, main_unit, offer_brands
from .modelwords import UnitMap, clean_text, model_ids, title_model_words
from .offers import Offers

FEATURES = (
    "id_share",
    "id_prefix",
    "id_conflict",
    "id_one",
    "brand",
    "size",
    "unit1",
    "unit2",
    "unit3",
    "units_agree",
    "units_conflict",
    "same_shop",
    "title_jac",
    "mw_jac",
    "num_match",
    "num_rare",
    "num_idf",
    "value_jac",
    "seed_jac",
    "title_idf",
    "value_idf",
    "desc_jac",
    "title_cos",
    "char_jac",
    "price_ratio",
    "num_shared",
    "num_long",
    "num_unmatched",
    "id_written",
    "num_idf_sum",
)

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
) -> dict[str, list]:
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


def select_parts(parts: dict[str, list], rows) -> dict[str, list]:
    """The entries of :func:`offer_parts` of the offers at ``rows``, in that order."""
    rows = np.asarray(rows).tolist()
    # what is not a list holds for the whole catalogue (code_parts' vocabularies)
    return {k: [v[i] for i in rows] if isinstance(v, list) else v for k, v in parts.items()}


def describe(
    offers: Offers,
    units: UnitMap | None = None,
    brand_vocab: frozenset[str] | None = None,
    model_keys: Sequence[str] = ("model",),
    parts: dict[str, list] | None = None,
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


def _seed_sets(tokens: list[set[str]], kv: list[set[str]]) -> list[set[str]]:
    return [{w for w in t if len(w) > 1} | k for t, k in zip(tokens, kv)]


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


def _jac(a: set, b: set) -> float:
    inter = len(a & b)
    u = len(a) + len(b) - inter
    return inter / u if u else 0.0


def _number_key(x: float) -> int:
    return int(x)  # 30.38 and 30.3 (one shop rounds, the other truncates) count as one


def _number_evidence(
    d: OfferDescriptions, a: int, b: int
) -> tuple[float, float, float, float, float, float, float]:
    """``num_match``, ``num_rare`` (matched numbers that at most ``max(2, n/200)`` offers
    state), ``num_idf`` (IDF-weighted share of the shorter side's numbers matched),
    ``num_shared``, ``num_long``, ``num_unmatched`` and ``num_idf_sum`` (module docstring)."""
    na, nb = d.number_lists[a], d.number_lists[b]
    if not na or not nb:
        return -1.0, 0.0, -1.0, 0.0, -1.0, 0.0, 0.0
    if len(na) > len(nb):
        a, b, na, nb = b, a, nb, na
    tol = NUMBER_TOLERANCE + 1e-9
    m = len(nb)
    left = bisect.bisect_left
    hit = []
    for k, x in enumerate(na):
        i = left(nb, x - tol)
        if i < m and nb[i] - x <= tol:
            hit.append(k)
    if not hit:
        return 0.0, 0.0, 0.0, 0.0, 0.0, float(len(na)), 0.0
    idf, rare = d.number_idf[a], d.number_rare[a]
    total = d.number_idf_total[a]
    h = len(hit)
    return (
        h / len(na),
        float(sum(rare[k] for k in hit)),
        sum(idf[k] for k in hit) / total if total > 0 else 0.0,
        float(h),
        h / m,
        float(len(na) - h),
        sum(d.number_near_idf[a][k] for k in hit),
    )


def id_relation(a: set[str], b: set[str]) -> str:
    """``"share"``, ``"prefix"``, ``"conflict"``, ``"one"`` or ``"none"`` (module docstring)."""
    if a and b:
        if a & b:
            return "share"
        if any(
            x.startswith(y) or y.startswith(x) for x in a for y in b if min(len(x), len(y)) >= 6
        ):
            return "prefix"
        return "conflict"
    return "one" if a or b else "none"


#: the plain Jaccard features computed by the compiled overlap kernel, and the description
#: field each one reads
_INDEXED = {
    "mw_jac": "words",
    "seed_jac": "seed_sets",
    "desc_jac": "desc_tokens",
    "char_jac": "grams",
}


#: :func:`code_parts`: the entry of :func:`offer_parts` that each :data:`_INDEXED` set comes
#: from (``seed_sets`` from two)
_PART_SETS = {"mw_jac": "words", "desc_jac": "desc", "char_jac": "grams"}


def code_parts(parts: dict[str, list]) -> dict[str, list]:
    """``parts`` (:func:`offer_parts`) with each offer's :data:`_INDEXED` sets as sorted
    ``uint32`` arrays, coded once for the whole catalogue (``"coded"``). A study describes
    many parts of one catalogue: with these, each part's set index is a concatenation
    (:func:`describe`) rather than a new coding of every set. Also ``"seed_sets"`` (the
    baseline's sets), and the features kernel's sets (``"kernel"``, per offer) with their
    vocabularies (``"kernel_vocab"``, for the whole catalogue: :func:`select_parts` keeps it
    whole)."""
    sets = {f: parts[name] for f, name in _PART_SETS.items()}
    sets["seed_jac"] = _seed_sets(parts["tokens"], parts["kv"])
    coded = {f: [np.array(c, np.uint32) for c in _code_sets(col)] for f, col in sets.items()}
    # the sets of the features kernel (:func:`_kernel_arrays`), and their vocabularies: the
    # weights of a part's words are looked up by code
    kernel, vocab = {}, {}
    for name in ("tokens", "values", "block", "written"):
        flat, off, vocab[name] = _coded(parts[name])
        kernel[name] = np.split(flat, off[1:-1]) if len(off) > 1 else []
    keys, vocab["units"] = _measure_keys(parts["measures"])
    kernel["measures"] = [np.array(k, np.uint64) for k in keys]
    return {
        **parts,
        "seed_sets": sets["seed_jac"],
        "coded": [dict(zip(coded, v)) for v in zip(*coded.values())],
        "kernel": [dict(zip(kernel, v)) for v in zip(*kernel.values())],
        "kernel_vocab": vocab,
    }


def _joined_index(coded: list[dict[str, np.ndarray]]) -> dict[str, tuple]:
    """The set index of :func:`_indexed_jaccards` from the coded sets of :func:`code_parts`."""
    return {f: _joined([c[f] for c in coded], np.uint32) for f in _INDEXED}


def _code_sets(sets: Sequence[set[str]], vocab: dict[str, int] | None = None) -> list[list[int]]:
    """Each set as the sorted distinct numbers of its members, numbered by first appearance
    (in ``vocab``, member -> number, when given)."""
    vocab = {} if vocab is None else vocab
    return [sorted({vocab.setdefault(t, len(vocab)) for t in s}) for s in sets]


def _set_index(sets: list[set[str]]) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, offsets)``: each set as the sorted distinct ``uint32`` ids of its members
    (``ids[offsets[i]:offsets[i + 1]]``), ids numbered by first appearance."""
    flat, off, _ = _coded(sets)
    return flat, off


def _indexed_jaccards(
    d: OfferDescriptions, left: np.ndarray, right: np.ndarray
) -> dict[str, np.ndarray]:
    """The :data:`_INDEXED` features of the pairs, by the compiled kernel (0 for two empty
    sets, as :func:`_jac` has it)."""
    from ..verify import overlap_pairs

    if d._index is None:
        d._index = {f: _set_index(getattr(d, name)) for f, name in _INDEXED.items()}
    out = {}
    for f, (flat, off) in d._index.items():
        sim = overlap_pairs(flat, off[:-1], off[1:], left, right).astype(np.float64)
        size = np.diff(off)
        sim[(size[left] == 0) & (size[right] == 0)] = 0.0
        out[f] = sim
    return out


def pair_features(d: OfferDescriptions, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``float64[m, len(FEATURES)]``: the features of the pairs ``(left[k], right[k])``, by
    the compiled kernel (:mod:`neardup._kernels.offers`) and, for the plain Jaccards, the
    overlap kernel (``tests/oracles.py`` has the same in plain Python, the tests' oracle)."""
    from .._kernels import offers as _k
    from .._threads import parallel

    left = np.ascontiguousarray(left, np.int64)
    right = np.ascontiguousarray(right, np.int64)
    n = len(d)
    if len(left) and (min(left.min(), right.min()) < 0 or max(left.max(), right.max()) >= n):
        raise IndexError(f"pairs must hold offer numbers 0..{n - 1}")
    x = np.zeros((len(left), len(FEATURES)), np.float64)
    if not len(left):
        return x
    if d._arrays is None:
        d._arrays = _kernel_arrays(d)
    k = d._arrays
    tol = NUMBER_TOLERANCE + 1e-9
    parallel(
        lambda lo, hi: _k.pair_rows(left, right, *k, tol, x, lo, hi), len(left), min_weight=1 << 12
    )
    for f, col in _indexed_jaccards(d, left, right).items():
        x[:, FEATURES.index(f)] = col
    return x


def _coded(
    sets: Sequence[set[str]], weight: dict[str, float] | None = None
) -> tuple[np.ndarray, ...]:
    """``(flat, offsets)`` of the sets as sorted codes (:func:`_code_sets`), with the weight of
    each code when ``weight`` is given; the vocabulary (code -> member) last."""
    vocab: dict[str, int] = {}
    coded = _code_sets(sets, vocab)
    off = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(c) for c in coded], out=off[1:])
    flat = np.fromiter((x for c in coded for x in c), np.uint32, int(off[-1]))
    words = list(vocab)
    if weight is None:
        return flat, off, words
    return flat, off, np.array([weight[t] for t in words], np.float64), words


def _kernel_arrays(
    d: OfferDescriptions, coded: list[dict] | None = None, vocab: dict | None = None
) -> tuple:
    """The arguments of ``pair_rows`` up to ``tol`` that describe the offers of ``d``; with the
    ``"kernel"`` sets and ``"kernel_vocab"`` of :func:`code_parts` (of these offers, in
    order), the word sets are joined rather than coded again."""
    if coded is None or vocab is None:
        t_flat, t_off, t_w, _ = _coded(d.tokens, d.token_idf)
        v_flat, v_off, v_w, _ = _coded(d.values, d.value_idf)
        b_flat, b_off, b_w, _ = _coded(d.block_tokens, d.block_weight)
        w_flat, w_off, _ = _coded(d.written)
        keys, unit_code = _measure_keys(d.measures)
        m_flat, m_off = _joined([np.array(k, np.uint64) for k in keys], np.uint64)
    else:
        t_flat, t_off = _joined([c["tokens"] for c in coded], np.uint32)
        v_flat, v_off = _joined([c["values"] for c in coded], np.uint32)
        b_flat, b_off = _joined([c["block"] for c in coded], np.uint32)
        w_flat, w_off = _joined([c["written"] for c in coded], np.uint32)
        m_flat, m_off = _joined([c["measures"] for c in coded], np.uint64)
        # a part's weights by code (words of other parts: never looked up)
        t_w = np.array([d.token_idf.get(t, 0.0) for t in vocab["tokens"]], np.float64)
        v_w = np.array([d.value_idf.get(t, 0.0) for t in vocab["values"]], np.float64)
        b_w = np.array([d.block_weight.get(t, 0.0) for t in vocab["block"]], np.float64)
        unit_code = vocab["units"]
    i_flat, i_off, id_words = _coded(d.ids)
    encoded = [w.encode("utf-8", "surrogatepass") for w in id_words]
    i_start = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=i_start[1:])
    i_text = np.frombuffer(b"".join(encoded), np.uint8)
    i_chars = np.array([len(w) for w in id_words], np.int64)
    units = d.units + ("",) * (3 - len(d.units))
    special = np.array([unit_code.get(u, -1) for u in units[:3]], np.int64)
    main = unit_code.get(d.main_unit, -1) if d.main_unit is not None else -1
    brand, shop = _label_codes(d.brands), _label_codes(d.shops)
    n_off = np.zeros(len(d.number_lists) + 1, np.int64)
    np.cumsum([len(v) for v in d.number_lists], out=n_off[1:])
    size = int(n_off[-1])
    n_val = np.fromiter(chain.from_iterable(d.number_lists), np.float64, size)
    n_idf = np.fromiter(chain.from_iterable(d.number_idf), np.float64, size)
    n_rare = np.fromiter(chain.from_iterable(d.number_rare), np.uint8, size)
    n_near = np.fromiter(chain.from_iterable(d.number_near_idf), np.float64, size)
    f64 = np.float64
    return (
        t_flat,
        t_off,
        t_w,
        np.asarray(d.token_weight, f64),
        v_flat,
        v_off,
        v_w,
        np.asarray(d.value_weight, f64),
        b_flat,
        b_off,
        b_w,
        np.asarray(d.block_norm, f64),
        i_flat,
        i_off,
        i_text,
        i_start,
        i_chars,
        w_flat,
        w_off,
        m_flat,
        m_off,
        main,
        special,
        brand,
        shop,
        np.asarray(d.prices, f64),
        n_val,
        n_off,
        n_idf,
        n_rare,
        n_near,
        np.asarray(d.number_idf_total, f64),
    )


def _measure_keys(
    measures: Sequence[dict[str, set[str]]],
) -> tuple[list[list[int]], dict[str, int]]:
    """Each offer's title measures as sorted keys ``unit << 32 | value`` (units and values
    numbered by first appearance), and the units' numbers."""
    unit_code: dict[str, int] = {}
    value_code: dict[str, int] = {}
    keys = [
        sorted(
            (unit_code.setdefault(u, len(unit_code)) << 32)
            | value_code.setdefault(v, len(value_code))
            for u, vals in m.items()
            for v in vals
        )
        for m in measures
    ]
    return keys, unit_code


def _label_codes(labels: Sequence[str]) -> np.ndarray:
    """Each label as a number, by first appearance; -1 for an empty one (no brand, no shop)."""
    code: dict[str, int] = {}
    return np.array([code.setdefault(x, len(code)) if x else -1 for x in labels], np.int64)


def _joined(arrays: list[np.ndarray], dtype: type) -> tuple[np.ndarray, np.ndarray]:
    """``(flat, offsets)`` of the arrays one after another."""
    off = np.zeros(len(arrays) + 1, np.int64)
    np.cumsum([len(a) for a in arrays], out=off[1:])
    flat = np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
    return flat, off


#: Weights of :func:`rule_score`, the matcher used when no labelled pairs are at hand.
#: ``id_prefix`` has none: a model number that extends another (a suffix for a colour, a
#: region or a revision) names another product as often as the same one (on the shared
#: monitor pages 389 of 593 such candidate pairs are two products, on the TV offers 66 of 75),
#: so only the rest of the evidence may pair them.
RULE_WEIGHTS = {
    "id_share": 0.6,
    "id_conflict": -0.6,
    "brand": 0.1,
    "size": 0.1,
    "units_conflict": -0.15,
    "same_shop": -0.2,
    "title_jac": 0.2,
    "num_idf": 0.3,
    "value_jac": 0.1,
}
#: The threshold on :func:`rule_score` used when none is tuned.
RULE_THRESHOLD = 0.45


#: :func:`rule_score`: what a brand or size conflict costs a pair that shares a model number
#: (without one, a conflict scores 0)
RULE_CONFLICT_PENALTY = 0.2


def rule_score(x: np.ndarray) -> np.ndarray:
    """A training-free score of feature rows: a weighted sum (:data:`RULE_WEIGHTS`), clipped to
    [0, 1]. A brand or size conflict scores 0, unless the two titles share a model number:
    then it costs :data:`RULE_CONFLICT_PENALTY` (a shop's brand field may name a maker's
    other name, or a reseller; a title may state a size another way)."""
    col = {f: i for i, f in enumerate(FEATURES)}
    s = np.zeros(len(x))
    for f, w in RULE_WEIGHTS.items():
        s += w * (np.maximum(x[:, col[f]], 0) if f == "num_idf" else x[:, col[f]])
    conflict = (x[:, col["brand"]] < 0) | (x[:, col["size"]] < 0)
    share = x[:, col["id_share"]] > 0
    s[conflict & share] -= RULE_CONFLICT_PENALTY
    s[conflict & ~share] = 0.0
    return np.clip(s, 0.0, 1.0)


class PairModel:
    """A classifier of feature rows into duplicate / not: a random forest (scikit-learn's
    ``RandomForestClassifier``) fitted on labelled candidate pairs. On the TV data it
    scored 0.777 mean bootstrap test F1 over 15 draws, against 0.766 for gradient-boosted trees
    and 0.705 for logistic regression (``docs/products.md``); with the features of saved-model
    version 3, over the same 10 draws: 0.812, against 0.779 for histogram gradient boosting,
    0.813 for extremely randomised trees and 0.800 with balanced class weights (3 rows a
    leaf), measured before version 4 added ``id_written`` and ``num_idf_sum``.

    ``max_tree_samples``: each tree is grown on a bootstrap sample of at most this many rows
    (all rows below it, as a random forest does by default), so that fitting on the candidates
    of a large catalogue (millions of pairs) costs what fitting on this many does."""

    def __init__(
        self,
        n_estimators: int = 300,
        min_samples_leaf: int = 1,
        random_state: int = 0,
        n_jobs: int = -1,
        max_tree_samples: int = 20_000,
    ):
        from .._extras import require

        require("sklearn", "products", "the trained product matcher")
        self.params = {
            "n_estimators": n_estimators,
            "min_samples_leaf": min_samples_leaf,
            "random_state": random_state,
            "n_jobs": n_jobs,
        }
        self.max_tree_samples = max_tree_samples
        self._clf = self._forest(0)
        self.features = FEATURES

    def _forest(self, rows: int):
        from sklearn.ensemble import RandomForestClassifier

        big = rows > self.max_tree_samples
        return RandomForestClassifier(
            **self.params, max_samples=self.max_tree_samples if big else None
        )

    def fit(self, x: np.ndarray, y: np.ndarray) -> PairModel:
        y = np.asarray(y, np.bool_)
        if y.all() or not y.any():
            raise ValueError(
                "fitting needs both duplicate and non-duplicate pairs "
                f"(got {int(y.sum())} duplicates among {len(y)} pairs)"
            )
        self._clf = self._forest(len(y)).fit(x, y)
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        """Probability of being a duplicate, per row (:func:`_steady`)."""
        if len(x) == 0:
            return np.zeros(0)
        return _steady(self._clf.predict_proba(x)[:, 1])

    def out_of_fold(self, x: np.ndarray, y: np.ndarray, folds: int = 5) -> np.ndarray:
        """Scores of the training rows from models that did not see them (for tuning a
        threshold without the optimism of in-sample scores)."""
        from sklearn.model_selection import StratifiedKFold

        y = np.asarray(y, np.bool_)
        out = np.zeros(len(y))
        k = int(min(folds, y.sum(), (~y).sum()))
        if k < 2:
            return self.fit(x, y).score(x)
        for tr, te in StratifiedKFold(k, shuffle=True, random_state=0).split(x, y):
            out[te] = _steady(self._forest(len(tr)).fit(x[tr], y[tr]).predict_proba(x[te])[:, 1])
        return out


#: :func:`_steady`: the decimals a forest's probability keeps
SCORE_DECIMALS = 12


def _steady(p: np.ndarray) -> np.ndarray:
    """A forest's probabilities rounded to :data:`SCORE_DECIMALS` decimals. The trees' votes
    are summed by threads in whatever order they finish, so the last bits of a score vary from
    run to run when the machine is busy (leaves of rows with equal features but different
    labels vote fractions); a threshold tuned to one score then keeps or drops its ties by
    chance, and the same study gave different F1."""
    return np.round(p, SCORE_DECIMALS)


def one_per_shop(
    left: np.ndarray,
    right: np.ndarray,
    scores: np.ndarray,
    d: OfferDescriptions,
    x: np.ndarray,
    once: set[str] | None = None,
) -> np.ndarray:
    """The scores with one listing per shop enforced: a pair without model-number evidence
    (``id_share``/``id_prefix``) keeps its score only if, for both of its offers, no rival in
    the other's shop (:func:`_best_rivals`: another offer, not a listing of the same model
    number) scores higher; otherwise its score becomes 0. Pairs with model-number evidence
    keep theirs (a shop may list one model twice). ``once``: the shops that list each product
    once (:func:`shops_listing_once`; default: every shop); rivals in the other shops (a
    marketplace with many sellers of one product) do not count."""
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    scores = np.asarray(scores, np.float64)
    strong = x[:, FEATURES.index("id_share")] > 0
    weak = np.flatnonzero((scores > 0) & ~strong)
    out = scores.copy()
    if len(weak) == 0:
        return out
    la, ra, s = left[weak], right[weak], scores[weak]
    rival_a, rival_b = _best_rivals(d, la, ra, s)
    if once is None:
        counts_a = counts_b = np.ones(len(weak), bool)
    else:
        names, code = _shop_codes(d)
        clean = np.fromiter((n in once for n in names), bool, len(names))
        counts_a, counts_b = clean[code[ra]], clean[code[la]]
    lose = (counts_a & (rival_a > s)) | (counts_b & (rival_b > s))
    out[weak[lose]] = 0.0
    return out


@record(frozen=True)
class Thresholds:
    """Where a trained matcher's scores become duplicates: pairs scoring at least ``main``,
    and among the pairs where only one offer names a model number (``id_one``) those scoring
    at least ``one_sided`` (``None``: ``main`` for them too; ``inf``: none of them).

    A trained model's scores of one-sided pairs are calibrated on the catalogue it was fitted
    on, where about 1% of such candidates match; a threshold of their own, tuned with the
    other pairs' threshold fixed and the two tuned in turn (:func:`tune_thresholds`), lifted
    the TV study's mean test F1 over four forest states (``docs/products.md``)."""

    main: float
    one_sided: float | None = None

    def keep(self, scores: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Which pairs (``scores``, their feature rows ``x``) are duplicates: at least their
        threshold, and above 0 (0: dropped by :func:`one_per_shop`)."""
        scores = np.asarray(scores, np.float64)
        thr = np.full(len(scores), self.main)
        if self.one_sided is not None:
            thr[x[:, FEATURES.index("id_one")] > 0] = self.one_sided
        return (scores >= thr) & (scores > 0)

    @property
    def one_sided_shown(self) -> float | None:
        """The threshold one-sided pairs meet, as a summary shows it: ``main`` where they
        have none of their own, ``None`` where none of them is kept."""
        one = self.main if self.one_sided is None else self.one_sided
        return None if np.isinf(one) else one


#: :func:`tune_thresholds`: the most rounds of tuning one threshold with the other fixed
TUNE_ROUNDS = 10
#: :func:`tune_thresholds`: the one-sided pairs get a threshold of their own only where their
#: labelled pairs hold at least this many duplicates and this many other pairs. With few
#: non-duplicates the best threshold is the lowest duplicate's score, and the fewer the pairs
#: the higher that minimum lies (a feed of camera pages whose labelled one-sided pairs were
#: 20 duplicates and 1 other: 0.95 against 0.93 for all pairs, and test recall fell)
MIN_GROUP_PAIRS = 20


def tune_thresholds(
    scores: np.ndarray,
    is_true: np.ndarray,
    total_true: int,
    x: np.ndarray,
    min_group: int = MIN_GROUP_PAIRS,
) -> Thresholds:
    """:class:`Thresholds` that maximise F1 on labelled pairs (``scores``: out-of-fold, after
    :func:`one_per_shop`; ``x`` their feature rows; ``total_true`` duplicates exist in all).
    ``main`` starts as the best single threshold of every pair; then, in turn, ``one_sided``
    is tuned on the one-sided pairs with the others kept at ``main``, and ``main`` on the
    others with the one-sided pairs kept at ``one_sided``, until neither moves (F1 never
    falls from one step to the next; at most :data:`TUNE_ROUNDS` rounds). One threshold for
    all (``one_sided`` ``None``) where the one-sided pairs scoring above 0 hold fewer than
    ``min_group`` (:data:`MIN_GROUP_PAIRS`) duplicates or fewer than that many other pairs,
    or none of either."""
    # here, not at the top: `products dedup` loads none of the evaluation modules
    from ..evaluate.bootstrap import tune_threshold

    scores = np.asarray(scores, np.float64)
    is_true = np.asarray(is_true, np.bool_)
    main, _ = tune_threshold(scores, is_true, total_true)
    one = x[:, FEATURES.index("id_one")] > 0
    live = scores > 0  # a pair at 0 is never kept
    side_rows, rest_rows = one & live, ~one & live
    matching = int((side_rows & is_true).sum())
    if np.isinf(main) or min(matching, int(side_rows.sum()) - matching) < min_group:
        return Thresholds(main)

    def tuned(rows: np.ndarray, other: np.ndarray) -> float:
        kept = (int((other & is_true).sum()), int(other.sum()))
        return tune_threshold(scores[rows], is_true[rows], total_true, kept=kept)[0]

    side = None
    for _ in range(TUNE_ROUNDS):
        new_side = tuned(side_rows, rest_rows & (scores >= main))
        new_main = tuned(rest_rows, side_rows & (scores >= new_side))
        if np.isinf(new_main):  # none of the others kept: just above the best of them
            new_main = (
                float(np.nextafter(scores[rest_rows].max(), np.inf)) if rest_rows.any() else main
            )
        if (new_side, new_main) == (side, main):
            break
        side, main = new_side, new_main
    return Thresholds(main, side)


def _shop_codes(d: OfferDescriptions) -> tuple[np.ndarray, np.ndarray]:
    """The shops' names, sorted, and each offer's shop as a number among them (made once per
    description: :func:`one_per_shop` runs for every setting of a study)."""
    if d._shop_codes is None:
        d._shop_codes = np.unique(np.asarray(d.shops, dtype=object), return_inverse=True)
    return d._shop_codes


def _best_rivals(
    d: OfferDescriptions, left: np.ndarray, right: np.ndarray, v: np.ndarray, keep: int = 8
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair ``(a, b)`` of values ``v``: the best value of ``a``'s other pairs with
    offers of ``b``'s shop, and of ``b``'s with offers of ``a``'s shop (``-inf`` if none),
    looking at each offer's ``keep`` best in that shop (ties: the pair listed first) and
    leaving out ``b`` (``a``) itself and the offers that share a model number with it (one
    product listed twice by a shop is not a rival of itself): for all pairs at once."""
    m = len(left)
    names, code = _shop_codes(d)
    node = np.concatenate([left, right])
    other = np.concatenate([right, left])
    val = np.concatenate([v, v]).astype(np.float64)
    seen = np.empty(2 * m, np.int64)
    seen[:m], seen[m:] = np.arange(0, 2 * m, 2), np.arange(1, 2 * m, 2)
    group = node * len(names) + code[other]
    order = np.lexsort((seen, -val, group))
    g_sorted, o_sorted, v_sorted = group[order], other[order], val[order]
    first = np.flatnonzero(np.r_[True, g_sorted[1:] != g_sorted[:-1]])
    start = np.empty(2 * m, np.int64)
    start[order] = np.repeat(first, np.diff(np.r_[first, 2 * m]))  # each entry's group start
    size = np.empty(2 * m, np.int64)
    size[order] = np.repeat(np.diff(np.r_[first, 2 * m]), np.diff(np.r_[first, 2 * m]))
    ids = d.ids
    has = np.fromiter((bool(x) for x in ids), bool, len(ids))
    best = np.full(2 * m, -np.inf)
    todo = np.arange(2 * m)
    for t in range(keep):
        todo = todo[t < np.minimum(size[todo], keep)]
        if len(todo) == 0:
            break
        j = start[todo] + t
        c, w = o_sorted[j], other[todo]
        ok = c != w
        both = np.flatnonzero(ok & has[c] & has[w])
        if len(both):
            cb, wb = c[both].tolist(), w[both].tolist()
            ok[both] = np.fromiter((not (ids[x] & ids[y]) for x, y in zip(cb, wb)), bool, len(both))
        best[todo[ok]] = v_sorted[j[ok]]
        todo = todo[~ok]
    return best[:m], best[m:]


#: :func:`shops_listing_once`: the share of a shop's offers with model numbers that may share
#: one with another offer of the shop
REPEAT_SHARE = 0.2


def shops_listing_once(d: OfferDescriptions, share: float = REPEAT_SHARE) -> set[str]:
    """The shops that list each product once, as their offers show: fewer than ``share`` of
    the shop's offers that carry a model number share it with another offer of the shop. A web
    shop's catalogue lists a model once; a marketplace (many sellers) or a price-comparison
    site lists popular models many times, and there one-listing-per-shop would drop true
    pairs (:func:`one_per_shop`)."""
    ids_by_shop: dict[str, list[set[str]]] = {}
    for shop, ids in zip(d.shops, d.ids):
        ids_by_shop.setdefault(shop, []).append(ids)
    out = set()
    for shop, lists in ids_by_shop.items():
        counts = Counter(m for ids in lists for m in ids)
        with_ids = [ids for ids in lists if ids]
        repeated = sum(1 for ids in with_ids if any(counts[m] > 1 for m in ids))
        if repeated < share * max(1, len(with_ids)):
            out.add(shop)
    return out


def unsupervised_score(
    x: np.ndarray, cosine: np.ndarray, within_clean_shop: np.ndarray | None = None
) -> np.ndarray:
    """The score used without a trained model: the larger of :func:`rule_score` (model
    numbers, brand, sizes, attribute numbers) and the title cosine
    (:func:`.blocking.title_cosine`: shared rare words and model words). The cosine counts 0
    where the evidence speaks against a pair: the titles state conflicting model numbers, or
    one model number extends the other (a variant: the cosine would count their shared stem
    as a match), the brands differ (and no model number is shared), or
    (``within_clean_shop``, ``bool`` per pair) both offers come from one shop that lists each
    product once (:func:`shops_listing_once`). The rule finds duplicates whose
    titles differ but whose specifications agree; the cosine those whose titles agree where a
    rounded size or sparse attributes made the rule give up."""
    col = FEATURES.index
    against = (
        (x[:, col("id_conflict")] > 0)
        | (x[:, col("id_prefix")] > 0)
        | ((x[:, col("brand")] < 0) & (x[:, col("id_share")] <= 0))
    )
    if within_clean_shop is not None:
        against |= np.asarray(within_clean_shop, bool)
    return np.maximum(rule_score(x), np.where(against, 0.0, np.asarray(cosine, np.float64)))


def unique_mapping(
    left: np.ndarray, right: np.ndarray, scores: np.ndarray, sources: Sequence[str]
) -> np.ndarray:
    """``bool`` per pair: kept by one-to-one matching of clean sources (each offer matches at
    most one offer of each other source): pairs are taken best score first (then by position)
    and a pair is kept only if neither of its offers already has a match in the other's
    source."""
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    order = np.lexsort((np.arange(len(left)), -np.asarray(scores, np.float64)))
    matched: set[tuple[int, str]] = set()  # (offer, source it has a match in)
    keep = np.zeros(len(left), bool)
    for k in order.tolist():
        a, b = int(left[k]), int(right[k])
        sa, sb = sources[a], sources[b]
        if (a, sb) in matched or (b, sa) in matched:
            continue
        matched.add((a, sb))
        matched.add((b, sa))
        keep[k] = True
    return keep


#: :func:`offer_clusters`: an offer that states more model numbers than this (a list of the
#: models an accessory fits, a bundle) does not say which product it is: its model numbers do
#: not count in its cluster's
CLUSTER_MAX_IDS = 2


def offer_clusters(
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    scores: np.ndarray | None = None,
    shops: Sequence[str] | None = None,
    once: set[str] | None = None,
    ids: Sequence[set[str]] | None = None,
) -> np.ndarray:
    """Cluster label (``int64[n]``, numbered by first member) of each offer.

    Without ``scores``: connected components of the duplicate pairs. With ``scores`` and
    ``shops``: clusters that resist chaining. The pairs are taken best score first, and two
    clusters merge only if they hold no two offers of one shop that lists each product once
    (``once``, :func:`shops_listing_once`; default: every shop): a cluster is one product, and
    such a shop lists it once. With ``ids`` (each offer's model numbers), two clusters whose
    offers state model numbers merge only if the number most of one cluster's offers state is
    among the other's (offers stating more than :data:`CLUSTER_MAX_IDS` count as stating
    none). A pair whose merge would break either rule (a chain of weaker pairs through two
    listings of one shop, or through an accessory that fits many models) joins nothing; it
    stays in the pairs output."""
    from ..cluster import connected_components, labels_from_reps, preference_rank

    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    if scores is None or shops is None:
        rep = connected_components(n, left, right, preference_rank(n))
        return labels_from_reps(rep)
    parent = list(range(n))
    members: dict[int, set[str]] = {}  # root -> the clean shops its cluster holds

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def clean(i: int) -> set[str]:
        got = members.get(i)
        if got is None:
            got = members[i] = {shops[i]} if once is None or shops[i] in once else set()
        return got

    # root -> how many of its offers state each model number
    numbers: dict[int, Counter[str]] = {}

    def nums(i: int) -> Counter[str]:
        got = numbers.get(i)
        if got is None:
            stated = ids[i] if ids is not None else ()
            got = numbers[i] = Counter(stated if len(stated) <= CLUSTER_MAX_IDS else ())
        return got

    def main_number(c: Counter[str]) -> str:
        return max(c.items(), key=lambda kv: (kv[1], kv[0]))[0]

    order = np.lexsort((np.arange(len(left)), -np.asarray(scores, np.float64)))
    for k in order.tolist():
        a, b = find(int(left[k])), find(int(right[k]))
        if a == b:
            continue
        sa, sb = clean(a), clean(b)
        if not sa.isdisjoint(sb):
            continue
        na, nb = nums(a), nums(b)
        if na and nb and main_number(na) not in nb and main_number(nb) not in na:
            continue
        if len(sa) + len(na) < len(sb) + len(nb):
            a, b, sa, sb, na, nb = b, a, sb, sa, nb, na
        parent[b] = a
        sa |= sb
        na.update(nb)
        members.pop(b, None)
        numbers.pop(b, None)
    rep = np.fromiter((find(i) for i in range(n)), np.int64, n)
    return labels_from_reps(rep)


def evidence(d: OfferDescriptions, offers: Offers, a: int, b: int) -> dict:
    """What a person checks for a pair: shared model words and model numbers, the brands,
    attribute values both offers state, and how many attribute numbers agree."""
    shared_vals = sorted(d.values[a] & d.values[b])
    return {
        "shared_model_words": sorted(d.words[a] & d.words[b]),
        "shared_model_numbers": sorted(d.ids[a] & d.ids[b]),
        "model_numbers": [sorted(d.ids[a]), sorted(d.ids[b])],
        "brands": [d.brands[a], d.brands[b]],
        "shared_attribute_values": shared_vals[:20],
        "attribute_number_match": round(_number_evidence(d, a, b)[0], 3),
    }
