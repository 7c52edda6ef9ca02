"""Scoring candidate pairs of offers, and turning scores into duplicates and clusters.

Every offer is described once (:func:`describe`, in :mod:`.descriptions`); a candidate pair then
becomes a row of :data:`FEATURES` (:func:`pair_features`, in :mod:`.features`, whose docstring
lists them), all of them plain evidence a person can check; :mod:`.feature_arrays` codes the
descriptions as arrays for the compiled kernels.

Nothing here knows about televisions: units, brands and the main unit come from the data or
from configuration. A classifier (:class:`PairModel`, a random forest, fitted on labelled
pairs) or, without labels, the fixed :func:`rule_score` maps the rows to scores (:mod:`.model`);
:func:`one_per_shop` keeps, among the pairs without model-number evidence, only the mutually
best one per offer and shop (a shop lists a product once); pairs scoring at least a threshold
(tuned on labelled data, :mod:`.thresholds`, or :data:`RULE_THRESHOLD`) are duplicates, and
:func:`offer_clusters` groups them.

This module holds the steps that compose them (one listing per shop, the one-to-one mapping,
the clusters, the evidence a person checks) and exports the public names of the modules above,
as it did when it held them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from .descriptions import BRAND_ID_SPREAD as BRAND_ID_SPREAD
from .descriptions import BRAND_PREFIX as BRAND_PREFIX
from .descriptions import BRAND_SHARED_IDS as BRAND_SHARED_IDS
from .descriptions import MIN_INTEGER as MIN_INTEGER
from .descriptions import NUMBER_TOLERANCE as NUMBER_TOLERANCE
from .descriptions import SPELL_RUN as SPELL_RUN
from .descriptions import SPELL_TAIL as SPELL_TAIL
from .descriptions import WEIGHT_QUANTUM as WEIGHT_QUANTUM
from .descriptions import OfferDescriptions
from .descriptions import attribute_numbers as attribute_numbers
from .descriptions import describe as describe
from .descriptions import offer_parts as offer_parts
from .descriptions import same_brands as same_brands
from .descriptions import select_parts as select_parts
from .descriptions import spelled_ids as spelled_ids
from .descriptions import spellings as spellings
from .feature_arrays import code_parts as code_parts
from .features import FEATURES, _number_evidence
from .features import id_relation as id_relation
from .features import pair_features as pair_features
from .model import RULE_CONFLICT_PENALTY as RULE_CONFLICT_PENALTY
from .model import RULE_THRESHOLD as RULE_THRESHOLD
from .model import RULE_WEIGHTS as RULE_WEIGHTS
from .model import SCORE_DECIMALS as SCORE_DECIMALS
from .model import PairModel as PairModel
from .model import rule_score as rule_score
from .model import unsupervised_score as unsupervised_score
from .offers import Offers
from .thresholds import MIN_GROUP_PAIRS as MIN_GROUP_PAIRS
from .thresholds import TUNE_ROUNDS as TUNE_ROUNDS
from .thresholds import Thresholds as Thresholds
from .thresholds import tune_thresholds as tune_thresholds


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
