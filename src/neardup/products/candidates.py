"""Candidate pairs of offers by MinHash LSH over their model-word sets, and how good they are.

Each offer becomes the set of its model words (title model words, and optionally the numeric
model words of its attribute values, kept apart by a prefix); the sets are hashed to 64 bits,
sketched with neardup's MinHash and banded with its LSH, exactly as documents are. The usual
measures of a candidate set against the truth (:func:`candidate_quality`):

- pair completeness PC = true duplicates among the candidates / all true duplicates;
- pair quality PQ = true duplicates among the candidates / candidates;
- F1* = harmonic mean of PC and PQ;
- fraction of comparisons = candidates / (n (n - 1) / 2).

:func:`sweep` traces them over every banding ``bands x rows = num_perm``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xxhash import xxh3_64_intdigest

from .._arrays import sorted_unique
from ..config import SketchConfig
from ..lsh import candidate_pairs
from ..sketch import sketch
from ..text.shingle import Shingles
from .modelwords import UnitMap, clean_text, title_model_words, value_model_words
from .offers import Offers


def model_word_sets(
    offers: Offers,
    units: UnitMap | None = None,
    attributes: bool = False,
    seed: int = 0,
    brands: Sequence[str] | None = None,
    max_df: float | None = None,
) -> Shingles:
    """Each offer's model words as a sorted set of 64-bit hashes (CSR :class:`Shingles`).

    Title model words as they are; with ``attributes``, the numeric model words of the
    attribute values too, prefixed ``"v:"`` (so ``"v:46"`` from a value is not the title word
    ``"46inch"``, but ``"v:46"`` from two offers' values is one element). ``brands``: one brand
    per offer (:func:`offer_brands`), added as an element ``"b:<brand>"``, so that offers of one
    brand are closer than offers sharing only common specifications. ``max_df``: title words in
    more than this fraction of the offers (``1080p``, ``60hz``) are left out: they make every
    pair look alike."""
    words = [set(title_model_words(t, units)) for t in offers.titles]
    if max_df is not None:
        df: dict[str, int] = {}
        for s in words:
            for w in s:
                df[w] = df.get(w, 0) + 1
        cut = max_df * len(words)
        words = [{w for w in s if df[w] <= cut} for s in words]
    sets = []
    for i, (ws, attrs) in enumerate(zip(words, offers.attributes)):
        if attributes:
            for v in attrs.values():
                ws.update("v:" + w for w in value_model_words(v, units))
        if brands is not None and brands[i]:
            ws.add("b:" + brands[i])
        sets.append(
            sorted_unique(
                np.fromiter((xxh3_64_intdigest(w.encode(), seed) for w in ws), np.uint64, len(ws)),
                overwrite=True,
            )
        )
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate(sets) if sets else np.zeros(0, np.uint64)
    return Shingles(hashes.astype(np.uint64), offsets)


def lsh_candidates(
    sets: Shingles,
    bands: int,
    rows: int,
    num_perm: int | None = None,
    seed: int = 1,
    scheme: str = "classic",
) -> tuple[np.ndarray, np.ndarray]:
    """Candidate pairs ``(left, right)`` (``int64[m]``, ``left < right``) of offers whose
    signatures agree on a whole band. Offers with no model word are never candidates. The
    classic scheme is the default: model-word sets are tiny (a handful of elements), where
    one-permutation hashing leaves most bins to densification."""
    k = num_perm or bands * rows
    sig = sketch(sets, SketchConfig(num_perm=k, seed=seed, scheme=scheme))
    has = np.flatnonzero(np.diff(sets.offsets) > 0)
    if len(has) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    left, right, _ = candidate_pairs(sig, bands, rows, bucket_cap=len(has) + 1, rows_subset=has)
    return left, right


def true_pairs(labels: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)``, ``i < j``, of offers with the same label, sorted."""
    groups: dict[str, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(lab, []).append(i)
    left, right = [], []
    for members in groups.values():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                left.append(members[a])
                right.append(members[b])
    order = np.lexsort((right, left)) if left else np.zeros(0, np.int64)
    return (np.asarray(left, np.int64)[order], np.asarray(right, np.int64)[order])


def across_sources(left: np.ndarray, right: np.ndarray, sources: Sequence[str]) -> np.ndarray:
    """``bool`` per pair: its two offers come from different sources (shops, catalogues):
    the pairs a linkage of catalogues looks at."""
    src = np.asarray(sources, dtype=object)
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    return src[left] != src[right] if len(left) else np.zeros(0, bool)


def candidate_quality(
    left: np.ndarray, right: np.ndarray, labels: Sequence[str], total_true: int | None = None
) -> dict:
    """PC, PQ, F1* and the fraction of comparisons of the candidate pairs (module docstring).
    ``total_true``: the number of true pairs, if already known (else counted from ``labels``)."""
    n = len(labels)
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    lab = np.asarray(labels, dtype=object)
    cand = len(left)
    found = int(np.count_nonzero(lab[left] == lab[right])) if cand else 0
    total = len(true_pairs(labels)[0]) if total_true is None else total_true
    pc = found / total if total else float("nan")
    pq = found / cand if cand else 0.0
    f1s = 2 * pc * pq / (pc + pq) if pc + pq > 0 else 0.0
    return {
        "candidates": cand,
        "true_found": found,
        "true_pairs": total,
        "pc": pc,
        "pq": pq,
        "f1_star": f1s,
        "fraction": cand / (n * (n - 1) / 2) if n > 1 else 0.0,
    }


def bandings(num_perm: int) -> list[tuple[int, int]]:
    """Every ``(bands, rows)`` with ``bands * rows == num_perm``, fewest rows first."""
    return [(num_perm // r, r) for r in range(1, num_perm + 1) if num_perm % r == 0]


def banded_candidates(
    sets: Shingles,
    banding: Sequence[tuple[int, int]],
    num_perm: int,
    seed: int = 1,
    max_pairs: int | None = None,
    always: tuple[int, int] | None = None,
) -> dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]:
    """Candidate pairs for each ``(bands, rows)`` of ``banding`` (each with
    ``bands * rows <= num_perm``), all from one signature matrix. ``max_pairs``: a banding
    whose band buckets hold more pairs than this (counted before any pair is made: the sum
    over bands of ``s (s - 1) / 2`` per bucket of ``s`` offers, or all pairs if fewer: an upper
    bound of its distinct pairs) is left out of the result, so that a loose banding of a large catalogue cannot
    exhaust memory; ``always``: a banding made whatever its pairs."""
    from ..lsh import band_keys

    sig = sketch(sets, SketchConfig(num_perm=num_perm, seed=seed, scheme="classic"))
    has = np.flatnonzero(np.diff(sets.offsets) > 0)
    out = {}
    for bands, rows in banding:
        if bands * rows > num_perm:
            raise ValueError(f"banding {bands}x{rows} needs more than num_perm={num_perm}")
        if len(has) < 2:
            out[(bands, rows)] = (np.zeros(0, np.int64), np.zeros(0, np.int64))
            continue
        if max_pairs is not None and (bands, rows) != always:
            bound = 0
            for keys in band_keys(sig[has], bands, rows):
                counts = np.unique(keys, return_counts=True)[1].astype(np.int64)
                bound += int((counts * (counts - 1) // 2).sum())
            if min(bound, len(has) * (len(has) - 1) // 2) > max_pairs:
                continue
        left, right, _ = candidate_pairs(sig, bands, rows, bucket_cap=len(has) + 1, rows_subset=has)
        out[(bands, rows)] = (left, right)
    return out


def sweep(sets: Shingles, labels: Sequence[str], num_perm: int = 120, seed: int = 1) -> list:
    """:func:`candidate_quality` for every banding with ``bands * rows == num_perm``, from one
    signature matrix, sorted by fraction of comparisons."""
    total = len(true_pairs(labels)[0])
    out = [
        {"bands": b, "rows": r, **candidate_quality(left, right, labels, total)}
        for (b, r), (left, right) in banded_candidates(
            sets, bandings(num_perm), num_perm, seed
        ).items()
    ]
    return sorted(out, key=lambda r: r["fraction"])


# ---- blocking: cheap keys that duplicates share ----------------------------------------------

BRAND_ATTRIBUTES = ("brand", "manufacturer", "make")


def _brand_word(
    text: str, units: UnitMap | None, look: int | None = None, vocab: frozenset[str] | None = None
) -> str:
    """The brand word of a brand value or, with ``vocab``, of a title: among its first ``look``
    cleaned tokens (all by default), the first that holds a letter and is not an English stop
    word ("The Nikon ...", ": Dell"); for a title, the first in ``vocab``, else the first of
    letters only. ``""`` when there is none."""
    toks = clean_text(text, units).split(" ")[:look]
    stop = _stop_words()
    words = [t for t in toks if t and t not in stop and any(c.isalpha() for c in t)]
    if vocab is not None:
        hit = next((t for t in words if t in vocab), None)
        if hit is not None:
            return hit
        # a title's word with digits (1080p, 40in, a model number) is not taken for a brand
        words = [t for t in words if t.isalpha()]
    return words[0] if words else ""


def _stop_words() -> frozenset[str]:
    from ..text.normalize import stopwords  # cached there

    return stopwords()


def learn_brands(
    offers: Offers, attribute_names: Sequence[str] = BRAND_ATTRIBUTES, units: UnitMap | None = None
) -> frozenset[str]:
    """Brand vocabulary learned from the data: the brand words (:func:`_brand_word`) of the
    values of the attributes named like ``attribute_names`` (case-insensitive)."""
    wanted = {a.lower() for a in attribute_names}
    vocab = set()
    for attrs in offers.attributes:
        for k, v in attrs.items():
            if k.strip().lower() in wanted:
                word = _brand_word(v, units)
                if word:
                    vocab.add(word)
    return frozenset(vocab)


def offer_brands(
    offers: Offers,
    vocab: frozenset[str],
    units: UnitMap | None = None,
    look: int = 4,
    attribute_names: Sequence[str] = BRAND_ATTRIBUTES,
    guess: bool = True,
) -> list[str]:
    """Each offer's brand: the one it states (the brand word of an attribute named like
    ``attribute_names``, case-insensitive: a brand column), else the first of its first
    ``look`` title words in ``vocab``, else its first title word (shops put the brand first;
    the vocabulary catches "TV Samsung ..."). Without ``guess``, the first title word in
    ``vocab`` wherever it stands, else none. Brand words hold a letter and are not stop words
    (:func:`_brand_word`); ``""`` when an offer has none."""
    wanted = {a.lower() for a in attribute_names}
    out = []
    for title, attrs in zip(offers.titles, offers.attributes):
        stated = ""
        for k, v in attrs.items():
            if k.strip().lower() in wanted:
                stated = _brand_word(v, units)
                if stated:
                    break
        if stated:
            out.append(stated)
        elif guess:
            out.append(
                _brand_word(title, units, look, vocab) or _brand_word(title, units, None, vocab)
            )
        else:
            word = _brand_word(title, units, None, vocab)
            out.append(word if word in vocab else "")
    return out


def title_brands(offers: Offers, units: UnitMap | None = None) -> frozenset[str]:
    """Brand vocabulary learned from titles, for catalogues without a brand column: the words
    that begin titles (:func:`_brand_word`) in two sources or more. Shops put the brand first,
    but a title may begin with a product line or a noun ("Portable Dishwasher ...", "Bass
    Lover Earbuds"); a word two shops both begin titles with is rarely that. Empty for offers
    of one source."""
    sources: dict[str, set[str]] = {}
    for title, shop in zip(offers.titles, offers.shops):
        w = _brand_word(title, units, None, frozenset())
        if w:
            sources.setdefault(w, set()).add(shop)
    return frozenset(w for w, s in sources.items() if len(s) >= 2)


def brands_of(offers: Offers, units: UnitMap | None = None) -> list[str]:
    """Each offer's brand (:func:`offer_brands`) with the vocabulary the data offers: the
    values of a brand column (:func:`learn_brands`) where there is one; else the words that
    begin titles in several sources (:func:`title_brands`), and then a title that begins with
    none of them has no known brand (``""``) rather than a guessed one; else (one source, no
    brand column) each title's first word."""
    vocab = learn_brands(offers, units=units)
    if vocab:
        return offer_brands(offers, vocab, units)
    vocab = title_brands(offers, units)
    return offer_brands(offers, vocab, units, guess=not vocab)


def _unit_words(words: set[str], unit: str) -> set[str]:
    n = len(unit)
    return {
        w for w in words if w.endswith(unit) and len(w) > n and w[:-n].replace(".", "", 1).isdigit()
    }


def main_unit(
    offers: Offers, units: UnitMap | None = None, words: Sequence[set[str]] | None = None
) -> str | None:
    """The unit that most titles state a number in (for TVs: inch), learned from the data.
    ``words``: the offers' title model words, if already computed."""
    units = units or UnitMap()
    counts = dict.fromkeys(units.units, 0)
    if words is None:
        words = [set(title_model_words(t, units)) for t in offers.titles]
    for s in words:
        for u in counts:
            counts[u] += bool(_unit_words(s, u))
    best = max(counts, key=lambda u: counts[u], default=None)
    return best if best is not None and counts[best] > 0 else None


def _pairs_of_groups(groups, cap: int) -> set[tuple[int, int]]:
    out: set[tuple[int, int]] = set()
    for members in groups:
        if 2 <= len(members) <= cap:
            m = sorted(members)
            out.update((m[a], m[b]) for a in range(len(m)) for b in range(a + 1, len(m)))
    return out


def blocking_candidates(
    offers: Offers,
    units: UnitMap | None = None,
    max_df: int = 20,
    prefix_len: int = 7,
    key_unit: str | None = "learn",
    brands: Sequence[str] | None = None,
    group_cap: int = 200,
) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Candidate pairs from three keys, each cheap and shared by most duplicates:

    - ``rare``: a title model word that at most ``max_df`` offers have (a model number);
    - ``prefix``: the first ``prefix_len`` characters of such a word with letters and digits
      (``UN55ES8000FXZA`` and ``UN55ES8000`` are one model in two shops' spelling);
    - ``brand_unit``: the same brand and the same number in the main unit (``samsung``,
      ``55inch``); the unit is learned (:func:`main_unit`) unless given, None turns it off.

    Groups larger than ``group_cap`` are not paired. Returns ``left, right`` (``int64``,
    ``left < right``, sorted) and how many pairs each key produced.
    """
    words = [set(title_model_words(t, units)) for t in offers.titles]
    df: dict[str, int] = {}
    for s in words:
        for w in s:
            df[w] = df.get(w, 0) + 1
    rare: dict[str, list[int]] = {}
    prefix: dict[str, list[int]] = {}
    for i, s in enumerate(words):
        for w in s:
            if df[w] <= max_df:
                rare.setdefault(w, []).append(i)
                if len(w) >= prefix_len and any(c.isalpha() for c in w):
                    prefix.setdefault(w[:prefix_len], []).append(i)
    found = {
        "rare": _pairs_of_groups(rare.values(), group_cap),
        "prefix": _pairs_of_groups((set(v) for v in prefix.values()), group_cap),
    }
    if key_unit == "learn":
        key_unit = main_unit(offers, units, words)
    if key_unit is not None:
        if brands is None:
            brands = brands_of(offers, units)
        keyed: dict[tuple[str, str], list[int]] = {}
        for i, s in enumerate(words):
            for w in _unit_words(s, key_unit):
                keyed.setdefault((brands[i], w), []).append(i)
        found["brand_unit"] = _pairs_of_groups(keyed.values(), group_cap)
    allp = sorted(set().union(*found.values()))
    left = np.fromiter((a for a, _ in allp), np.int64, len(allp))
    right = np.fromiter((b for _, b in allp), np.int64, len(allp))
    return left, right, {k: len(v) for k, v in found.items()}
