"""The features of a candidate pair of offers, from their descriptions
(:func:`.descriptions.describe`): a row of :data:`FEATURES` per pair (:func:`pair_features`), all
of them plain evidence a person can check:

==============  ============================================================================
``id_share``    both titles carry a model number and share one (also where one offer writes
                it in pieces, ``DSC-W120/P`` or ``SX110 IS``, that another writes whole:
                :func:`.descriptions.spelled_ids`)
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
"""

from __future__ import annotations

import bisect

import numpy as np

from .descriptions import NUMBER_TOLERANCE, OfferDescriptions
from .feature_arrays import _INDEXED, _kernel_arrays, _set_index

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


def _jac(a: set, b: set) -> float:
    inter = len(a & b)
    u = len(a) + len(b) - inter
    return inter / u if u else 0.0


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
    from .._kernels import offers as _k  # type: ignore[attr-defined]  # compiled, no stub
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
