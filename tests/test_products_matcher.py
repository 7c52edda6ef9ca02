"""Pair features, the matchers and the bootstrap study of product offers."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.evaluate.bootstrap import bootstrap_split
from neardup.products import Offers
from neardup.products.blocking import token_blocking
from neardup.products.matcher import (
    FEATURES,
    PairModel,
    attribute_numbers,
    describe,
    evidence,
    id_relation,
    offer_clusters,
    one_per_shop,
    pair_features,
    rule_score,
    same_brands,
    shops_listing_once,
    unsupervised_score,
)
from neardup.products.study import BUDGETS, StudyConfig, run_study, subset
from neardup.products.synth import make_catalogue


def _offers(rows):
    o = Offers()
    for i, (shop, title, attrs) in enumerate(rows):
        o.ids.append(str(i))
        o.shops.append(shop)
        o.titles.append(title)
        o.attributes.append(attrs)
        o.sources.append(f"t:{i}")
    return o


def test_attribute_numbers_read_fractions_and_separators():
    got = attribute_numbers(
        {
            "Width": '30-3/8"',
            "Contrast": "100,000:1",
            "HDMI": "3",
            "Weight": "13.1 lbs.",
            "Height": '21 7/8"',
            "Year": "2012",
        }
    )
    assert got.tolist() == [13.1, 21.88, 30.38, 2012.0, 100000.0]  # port count 3 left out
    assert attribute_numbers({}).tolist() == []


@pytest.mark.parametrize(
    "a, b, rel",
    [
        ({"un46es6580"}, {"un46es6580", "x1"}, "share"),
        ({"42pfl5907"}, {"42pfl5907f7"}, "prefix"),
        ({"e241"}, {"e241a1"}, "conflict"),  # a prefix shorter than 6 characters is no evidence
        ({"kdl32"}, set(), "one"),
        (set(), set(), "none"),
    ],
)
def test_id_relation_hand_checked(a, b, rel):
    assert id_relation(a, b) == rel
    assert id_relation(b, a) == rel


def test_pair_features_hand_checked():
    o = _offers(
        [
            (
                "s1",
                'Lumo 46" 1080p 120Hz LED HDTV LM46X210',
                {"Brand": "Lumo", "Weight": "33.1 lbs"},
            ),
            (
                "s2",
                'Lumo - 46" Class / LED / 1080p / 240Hz / HDTV',
                {"Weight": "33.1 lbs.", "Width": '40-1/2"'},
            ),
            ("s1", 'Vistar 40" 720p 120Hz LCD HDTV VS40A100', {"Brand": "Vistar"}),
            ("s3", "Lumo LM-46X210 46-Inch 1080p LED TV", {"Model": "LM46X210"}),
        ]
    )
    d = describe(o)
    assert d.brands == ["lumo", "lumo", "vistar", "lumo"]
    assert d.main_unit == "inch"
    assert d.ids[3] == {"lm46x210"}  # from the title and from the Model attribute
    x = pair_features(d, np.array([0, 0, 0]), np.array([1, 2, 3]))
    f = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert f["id_share"] == [0, 0, 1] and f["id_one"] == [1, 0, 0]
    assert f["id_conflict"] == [0, 1, 0]
    assert f["brand"] == [1, -1, 1]
    assert f["size"] == [1, -1, 1]
    assert f["units_conflict"] == [1, 1, 0]  # 120hz vs 240hz; 1080p vs 720p (hz agrees)
    assert f["units_agree"] == [1, 1, 1]
    assert f["same_shop"] == [0, 1, 0]
    assert f["num_match"][0] == 1.0 and f["num_match"][1] == -1.0  # 33.1 on both sides
    t0 = set(d.tokens[0])
    assert f["title_jac"][0] == pytest.approx(len(t0 & d.tokens[1]) / len(t0 | d.tokens[1]))
    assert f["mw_jac"][2] == pytest.approx(3 / 4)  # 46inch 1080p lm46x210 of 4 words
    ev = evidence(d, o, 0, 3)
    assert ev["shared_model_numbers"] == ["lm46x210"] and ev["brands"] == ["lumo", "lumo"]
    # brand or size conflicts score 0 without training
    s = rule_score(x)
    assert s[1] == 0.0 and s[2] > s[0] > 0


def test_one_per_shop_keeps_the_mutually_best_weak_pair():
    o = _offers([("a", "t0", {}), ("b", "t1", {}), ("b", "t2", {}), ("c", "t3", {})])
    d = describe(o)
    left, right = np.array([0, 0, 0, 1]), np.array([1, 2, 3, 2])
    x = np.zeros((4, len(FEATURES)))
    x[3, FEATURES.index("id_share")] = 1  # 1-2 share a model number: kept within a shop
    s = one_per_shop(left, right, np.array([0.9, 0.8, 0.5, 0.4]), d, x)
    assert s.tolist() == [0.9, 0.0, 0.5, 0.4]  # 0-2 loses to 0-1 (same shop b)


def test_one_per_shop_leaves_rivals_in_shops_that_list_products_more_than_once():
    o = _offers([("a", "t0", {}), ("b", "t1", {}), ("b", "t2", {}), ("c", "t3", {})])
    d = describe(o)
    left, right = np.array([0, 0, 0]), np.array([1, 2, 3])
    x = np.zeros((3, len(FEATURES)))
    scores = np.array([0.9, 0.8, 0.5])
    # shop b lists products more than once: 0-2 keeps its score beside the better 0-1
    assert one_per_shop(left, right, scores, d, x, once={"a", "c"}).tolist() == [0.9, 0.8, 0.5]
    assert one_per_shop(left, right, scores, d, x, once={"a", "b", "c"}).tolist() == [0.9, 0.0, 0.5]


def test_shops_listing_once_from_repeated_model_numbers():
    rows = (
        [("shop", f"Acme AB{100 + i}X monitor", {}) for i in range(10)]
        + [
            ("market", "Acme AB100X monitor", {}),
            ("market", "Acme AB100X used", {}),
            ("market", "Acme AB101X new", {}),
            ("market", "Acme AB101X", {}),
            ("market", "Acme AB102X", {}),
        ]
        + [("edge", "Acme AB100X", {}), ("edge", "Acme AB100X b", {})]
        + [("edge", f"Acme CD{200 + i}Z", {}) for i in range(8)]
    )
    d = describe(_offers(rows))
    # market: 4 of 5 offers share a model number with another of the shop (>= 20%);
    # edge: 2 of 10 (exactly 20%: not fewer than the share, so not "once")
    assert shops_listing_once(d) == {"shop"}
    assert shops_listing_once(d, share=0.25) == {"shop", "edge"}


def test_unsupervised_score_takes_the_cosine_unless_evidence_speaks_against():
    x = np.zeros((5, len(FEATURES)))
    x[1, FEATURES.index("id_conflict")] = 1
    x[2, FEATURES.index("brand")] = -1
    x[4, FEATURES.index("id_share")] = 1  # rule: 0.6
    cos = np.array([0.8, 0.9, 0.9, 0.9, 0.3])
    within = np.array([False, False, False, True, False])
    got = unsupervised_score(x, cos, within)
    rule = rule_score(x)
    assert got.tolist() == [0.8, rule[1], rule[2], rule[3], 0.6]
    assert rule[1] == rule[2] == 0.0


def test_offer_clusters_are_components():
    assert offer_clusters(5, np.array([0, 3]), np.array([1, 4])).tolist() == [0, 0, 1, 2, 2]


def test_pair_model_needs_both_classes():
    with pytest.raises(ValueError, match="both duplicate and non-duplicate"):
        PairModel().fit(np.zeros((3, len(FEATURES))), np.array([True, True, True]))


@pytest.fixture(scope="module")
def catalogue():
    return make_catalogue(120, seed=3)


def test_study_on_a_synthetic_catalogue(catalogue):
    offers, labels = catalogue
    cfg = StudyConfig(bootstraps=2, num_perm=24, bands=8, rows=3, seed=1, blocking="lsh")
    res = run_study(offers, labels, cfg)
    summary = {r["method"]: r for r in res.summary}
    assert set(summary) == {"baseline", "rule", "neardup"}
    # model numbers are missing from one shop's titles: the matchers recover those duplicates
    assert summary["neardup"]["f1"] >= 0.85
    assert summary["rule"]["f1"] >= 0.8
    assert summary["neardup"]["f1"] > summary["baseline"]["f1"]
    assert summary["neardup"]["pc"] >= 0.9 and summary["neardup"]["fraction"] < 0.2
    assert (summary["neardup"]["bands"], summary["neardup"]["rows"]) == (8, 3)
    runs = [r for r in res.runs if r["method"] == "neardup"]
    assert {r["bootstrap"] for r in runs} == {0, 1}
    assert all(0 <= r["precision"] <= 1 and 0 <= r["recall"] <= 1 for r in runs)
    # the trained matcher's rows carry the threshold its one-sided pairs met; the others not
    assert all("threshold_one_sided" in r for r in runs)
    assert not any("threshold_one_sided" in r for r in res.runs if r["method"] != "neardup")
    assert "threshold_one_sided" in summary["neardup"]
    assert "threshold_one_sided" not in summary["rule"]
    assert len(res.distributions["true_pairs"]) > 0
    assert res.distributions["true_pairs"].mean() > res.distributions["candidates"].mean()


def test_study_learns_nothing_from_shuffled_truth(catalogue):
    """The truth is only a target: with labels shuffled, no matcher finds 'duplicates'."""
    offers, labels = catalogue
    shuffled = list(np.random.default_rng(0).permutation(np.array(labels, dtype=object)))
    cfg = StudyConfig(bootstraps=2, num_perm=24, bands=8, rows=3, seed=1)
    res = run_study(offers, shuffled, cfg)
    assert max(r["f1"] for r in res.summary) < 0.2


def test_study_leaves_out_bandings_over_its_pair_bound(catalogue):
    offers, labels = catalogue
    res = run_study(
        offers,
        labels,
        StudyConfig(bootstraps=1, num_perm=24, bands=8, rows=3, max_pairs=300, blocking="lsh"),
    )
    assert res.skipped_bandings and (8, 3) not in res.skipped_bandings
    ran = {(r["bands"], r["rows"]) for r in res.runs}
    assert (8, 3) in ran and not (ran & res.skipped_bandings)
    assert [r["method"] for r in res.summary] == ["baseline", "rule", "neardup"]


def test_study_with_token_blocking_sweeps_budgets_per_offer(catalogue):
    offers, labels = catalogue
    cfg = StudyConfig(bootstraps=2, seed=1)
    assert cfg.blocking == "tokens" and cfg.per_offer == 10
    res = run_study(offers, labels, cfg)
    budgets = sorted(set(BUDGETS) | {10.0})
    assert StudyConfig(per_offer=4).sweep() == sorted(set(BUDGETS) | {4.0})
    for b in (0, 1):
        runs = [r for r in res.runs if r["bootstrap"] == b]
        assert all("bands" not in r and "rows" not in r for r in runs)
        by = {}
        for r in runs:
            by.setdefault(r["per_offer"], {})[r["method"]] = r
        assert sorted(by) == budgets
        fractions = [next(iter(by[k].values()))["fraction"] for k in budgets]
        assert fractions == sorted(fractions) and fractions[0] < fractions[-1]
        assert fractions[budgets.index(0.5)] < fractions[budgets.index(3.0)]
        # the default always runs the classifiers; a budget past max_fraction reports PC/PQ
        assert set(by[10.0]) == {"baseline", "rule", "neardup"}
        for k in budgets:
            some = next(iter(by[k].values()))
            assert set(by[k]) == (
                {"baseline", "rule", "neardup"}
                if k == 10.0 or some["fraction"] <= cfg.max_fraction
                else {"tokens"}
            )
            assert some["candidates"] <= k * len(offers)  # the test part is smaller
        assert any(set(by[k]) == {"tokens"} for k in budgets)  # the loose budgets
    # the default budget's PC: the true pairs of bootstrap 0's test part among its candidates
    _, test_rows = bootstrap_split(len(offers), np.random.default_rng(cfg.seed))
    part = subset(offers, test_rows)
    left, right, _, _ = token_blocking(part, per_offer=10.0)
    cands = set(zip(left.tolist(), right.tolist()))
    true = [
        (i, j)
        for i in range(len(part))
        for j in range(i + 1, len(part))
        if labels[test_rows[i]] == labels[test_rows[j]]
    ]
    row = next(
        r
        for r in res.runs
        if r["bootstrap"] == 0 and r["per_offer"] == 10.0 and r["method"] == "neardup"
    )
    assert row["pc"] == pytest.approx(sum(p in cands for p in true) / len(true))
    assert row["candidates"] == len(cands) and row["fraction"] == pytest.approx(
        len(cands) / (len(part) * (len(part) - 1) / 2)
    )
    summary = {r["method"]: r for r in res.summary}
    assert set(summary) == {"baseline", "rule", "neardup"}
    assert all(r["per_offer"] == 10.0 and "bands" not in r for r in res.summary)
    assert summary["neardup"]["pc"] >= 0.9
    assert summary["neardup"]["f1"] >= 0.9 and summary["neardup"]["f1"] > summary["baseline"]["f1"]


def test_a_shared_model_number_turns_a_brand_or_size_conflict_into_a_penalty():
    x = np.zeros((4, len(FEATURES)))
    x[:, FEATURES.index("brand")] = [-1, -1, 1, 1]
    x[:, FEATURES.index("size")] = [0, 0, -1, -1]
    x[:, FEATURES.index("id_share")] = [1, 0, 1, 0]
    x[:, FEATURES.index("title_jac")] = 0.5
    s = rule_score(x)
    # brand conflict, shared model number: 0.6 + 0.2 * 0.5 - 0.1 (brand) - 0.2 (penalty)
    assert s[0] == pytest.approx(0.6 + 0.1 - 0.1 - 0.2)
    assert s[1] == 0.0 and s[3] == 0.0  # a conflict without a shared model number
    assert s[2] == pytest.approx(0.6 + 0.1 + 0.1 - 0.1 - 0.2)  # same brand, size conflict
    # the title cosine is not vetoed by a brand conflict when a model number is shared
    got = unsupervised_score(x, np.full(4, 0.95))
    assert got.tolist() == [0.95, 0.0, 0.95, 0.95]


def test_same_brands_learns_aliases_from_prefixes_and_shared_model_numbers():
    brands = [
        "hp",
        "hewlett",
        "hewlettpackard",
        "hp",
        "dell",
        "dell",
        "fuji",
        "fujifilm",
        "acme",
        "zeta",
        "acme",
        "zeta",
        "",
        "hp",
        "dell",
    ]
    ids = [
        {"z22i", "d7q14a"},
        {"z22i"},
        {"d7q14a"},
        set(),
        {"u2412m", "p2419h"},
        set(),
        set(),
        set(),
        {"ab100x"},
        {"ab100x"},
        set(),
        set(),
        {"z22i"},
        {"p2419h"},
        {"u2412m"},
    ]
    got = same_brands(brands, ids)
    # hewlett begins hewlettpackard; hp shares two model numbers (z22i, d7q14a) with them
    assert got[0] == got[1] == got[2] == got[3] == got[13] == "hp"
    assert got[6] == got[7]  # fuji begins fujifilm
    # hp and dell share p2419h only: one model number is not enough
    assert got[4] == got[5] == got[14] == "dell" != got[0]
    assert got[8] == got[10] == "acme" and got[9] == got[11] == "zeta"  # one shared id
    assert got[12] == ""
    # a model number that offers of four brands state is too generic to join them
    many = same_brands(
        ["a1", "b1", "c1", "d1"] * 2,
        [{"x100"}, {"x100"}, {"x100"}, {"x100"}, {"y200"}, {"y200"}, {"y200"}, {"y200"}],
    )
    assert len(set(many)) == 4


def test_brand_words_skip_stop_words_and_words_without_letters():
    o = _offers(
        [
            ("s1", "Get the Nikon D3200 kit", {}),
            ("s2", "Nikon D3200 body", {"Brand": ": Nikon"}),
            ("s3", "The Acme A100 camera", {"Manufacturer": "The Acme Company"}),
            ("s4", "1080p 40in Vistar TV", {}),
        ]
    )
    d = describe(o)
    assert d.brands == ["nikon", "nikon", "acme", "vistar"]


def test_offer_clusters_resist_chaining_through_two_listings_of_one_shop():
    # offers: 0 a, 1 b, 2 c, 3 a, 4 m (a marketplace that lists products more than once)
    shops = ["a", "b", "c", "a", "m", "m"]
    left, right = np.array([0, 1, 2, 0, 4]), np.array([1, 2, 3, 4, 5])
    scores = np.array([0.9, 0.6, 0.8, 0.7, 0.5])
    # components chain everything into one cluster
    assert len(set(offer_clusters(6, left, right).tolist())) == 1
    got = offer_clusters(6, left, right, scores, shops, once={"a", "b", "c"})
    # best first: 0-1, 2-3, 0-4, then 1-2 would put both listings of shop a (0 and 3) in one
    # cluster and joins nothing; 4-5 joins (m lists products more than once)
    assert got.tolist() == [0, 0, 1, 1, 0, 0]
    # every shop listing once: 4-5 (two listings of m) joins nothing either
    assert offer_clusters(6, left, right, scores, shops).tolist() == [0, 0, 1, 1, 0, 2]


def test_offer_clusters_keep_offers_of_different_model_numbers_apart():
    shops = ["a", "b", "c", "d"]
    ids = [{"ab100x"}, set(), {"cd200z"}, {"ab100x"}]
    left, right = np.array([0, 1, 0]), np.array([1, 2, 3])
    scores = np.array([0.9, 0.8, 0.7])
    # 1 (no model number) joins 0; 1-2 would join ab100x and cd200z; 0-3 share ab100x
    got = offer_clusters(4, left, right, scores, shops, ids=ids)
    assert got.tolist() == [0, 0, 1, 0]


@pytest.mark.parametrize("seed", range(20))
def test_constrained_clusters_never_hold_two_listings_of_a_clean_shop(seed):
    rng = np.random.default_rng(seed)
    n = 30
    shops = [str(s) for s in rng.integers(0, 5, n)]
    m = 60
    left, right = rng.integers(0, n, m), rng.integers(0, n, m)
    ok = left != right
    left, right = left[ok], right[ok]
    scores = rng.random(len(left))
    got = offer_clusters(n, left, right, scores, shops, once={"0", "1", "2"})
    comp = offer_clusters(n, left, right)
    for c in set(got.tolist()):
        members = np.flatnonzero(got == c)
        clean = [shops[i] for i in members if shops[i] in {"0", "1", "2"}]
        assert len(clean) == len(set(clean))
        assert len(set(comp[members].tolist())) == 1  # a cluster lies within one component


def test_title_cosine_character_grams_and_price_features():
    from neardup.products.blocking import offer_tokens, title_cosine

    o = _offers(
        [
            ("s1", "Lumo LM-46X210 46in TV", {"Price": "$1,299.99"}),
            ("s2", "Lumo LM46X210 46 inch television", {"list price": "1299"}),
            ("s3", "Vistar VS40A100 40in TV", {}),
        ]
    )
    d = describe(o)
    left, right = np.array([0, 0, 1]), np.array([1, 2, 2])
    x = pair_features(d, left, right)
    f = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    assert f["title_cos"] == pytest.approx(title_cosine(offer_tokens(o), left, right).tolist())
    # the cleaned titles ("lumo lm46x210 46in tv", ...), words run together
    g = ["lumolm46x21046intv", "lumolm46x21046inchtelevision", "vistarvs40a10040intv"]
    grams = [{t[i : i + 3] for i in range(len(t) - 2)} for t in g]
    want = [
        len(grams[a] & grams[b]) / len(grams[a] | grams[b]) for a, b in [(0, 1), (0, 2), (1, 2)]
    ]
    assert f["char_jac"] == pytest.approx(want)
    assert f["price_ratio"] == pytest.approx([1299 / 1299.99, -1.0, -1.0])


@pytest.mark.parametrize("link", [False, True])
def test_study_budgets_are_the_blockings_of_each_budget(link):
    """The study blocks once, at its largest budget, and takes each smaller budget's pairs
    from that ranking: the same pairs as blocking at that budget."""
    from neardup.products.blocking import token_blocking
    from neardup.products.study import _candidates

    offers, _ = make_catalogue(80, seed=4)
    cfg = StudyConfig(link=link)
    keys = cfg.sweep()
    got = _candidates(offers, describe(offers), cfg, keys)
    for budget in keys:
        left, right, _, _ = token_blocking(offers, per_offer=budget, link=link)
        assert got[budget][0].tolist() == left.tolist()
        assert got[budget][1].tolist() == right.tolist()


def _rivals_oracle(shops, left, right, v, keep):
    top = {}
    for a, b, x in zip(left, right, v):
        for u, w in ((a, b), (b, a)):
            lst = top.setdefault((u, shops[w]), [])
            if len(lst) < keep or x > lst[-1][0]:
                lst.append((x, w))
                lst.sort(key=lambda t: -t[0])
                del lst[keep:]
    return top


def _best_rival_oracle(d, top, u, w):
    for x, c in top[(u, d.shops[w])]:
        if c != w and not (d.ids[c] & d.ids[w]):
            return x
    return -np.inf


def _one_per_shop_oracle(left, right, scores, d, x, once=None):
    """one listing per shop as first written: a streaming top-8 per (offer, shop), then each
    weak pair checked against the best rival on both sides."""
    strong = x[:, FEATURES.index("id_share")] > 0
    weak = np.flatnonzero((scores > 0) & ~strong)
    la, ra = left[weak].tolist(), right[weak].tolist()
    top = _rivals_oracle(d.shops, la, ra, scores[weak].tolist(), 8)
    out = scores.copy()
    for k, a, b in zip(weak.tolist(), la, ra):
        s = scores[k]
        if ((once is None or d.shops[b] in once) and _best_rival_oracle(d, top, a, b) > s) or (
            (once is None or d.shops[a] in once) and _best_rival_oracle(d, top, b, a) > s
        ):
            out[k] = 0.0
    return out


@pytest.mark.parametrize("seed", range(25))
def test_one_per_shop_equals_checking_each_pair_against_its_rivals(seed):
    rng = np.random.default_rng(seed)
    n = 30
    model = [f"ab{100 + int(rng.integers(0, 6))}x" for _ in range(n)]
    o = _offers(
        [
            (
                f"s{rng.integers(0, 4)}",
                f"Acme {model[i]}" if rng.random() < 0.6 else f"Acme thing {i}",
                {},
            )
            for i in range(n)
        ]
    )
    d = describe(o)
    m = 150
    left, right = rng.integers(0, n, m), rng.integers(0, n, m)
    scores = rng.integers(0, 8, m) / 7  # ties and zeros
    x = np.zeros((m, len(FEATURES)))
    x[:, FEATURES.index("id_share")] = rng.random(m) < 0.2
    for once in (None, {"s0", "s2"}):
        assert (
            one_per_shop(left, right, scores, d, x, once).tolist()
            == _one_per_shop_oracle(left, right, scores, d, x, once).tolist()
        )


def test_describe_from_parts_made_once_equals_describing_the_part():
    from dataclasses import fields

    from neardup.products.matcher import code_parts, offer_parts, select_parts
    from neardup.products.study import subset

    offers, _ = make_catalogue(60, seed=8)
    parts = offer_parts(offers)
    rows = np.random.default_rng(0).permutation(len(offers))[: len(offers) // 2]
    part = subset(offers, rows)
    a, b = describe(part), describe(part, parts=select_parts(parts, rows))
    for f in fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if f.name == "numbers":
            assert [v.tolist() for v in x] == [v.tolist() for v in y]
        else:
            assert x == y, f.name
    # sets coded once for the whole catalogue: the part's Jaccard features are the same
    c = describe(part, parts=select_parts(code_parts(parts), rows))
    assert c._index is not None
    left, right = np.triu_indices(len(part), 1)
    assert np.array_equal(pair_features(a, left, right), pair_features(c, left, right))


def test_compiled_jaccard_features_equal_set_jaccard():
    from neardup.products.feature_arrays import _INDEXED
    from neardup.products.features import _jac

    offers, _ = make_catalogue(50, seed=9)
    offers.descriptions = [("fine panel " * (i % 3)).strip() for i in range(len(offers))]
    d = describe(offers)
    rng = np.random.default_rng(1)
    left = rng.integers(0, len(offers), 400)
    right = rng.integers(0, len(offers), 400)
    x = pair_features(d, left, right)
    for f, name in _INDEXED.items():
        sets = getattr(d, name)
        want = [_jac(sets[a], sets[b]) for a, b in zip(left.tolist(), right.tolist())]
        assert x[:, FEATURES.index(f)] == pytest.approx(want, rel=1e-6, abs=1e-7), f
    # two offers without description words: 0, not 1
    empty = [i for i in range(len(offers)) if not d.desc_tokens[i]]
    assert len(empty) >= 2
    got = pair_features(d, np.array(empty[:1]), np.array(empty[1:2]))
    assert got[0, FEATURES.index("desc_jac")] == 0.0


def test_an_offer_of_many_model_numbers_does_not_bridge_clusters():
    # 0, 1: model ab100x; 3, 4: model cd200z; 2: a battery that fits ab100x, cd200z and ef300y
    shops = ["m"] * 5
    ids = [{"ab100x"}, {"ab100x"}, {"ab100x", "cd200z", "ef300y"}, {"cd200z"}, {"cd200z"}]
    left, right = np.array([0, 3, 0, 2]), np.array([1, 4, 2, 3])
    scores = np.array([0.9, 0.9, 0.8, 0.8])
    once: set[str] = set()  # a marketplace: the one-listing rule cannot cut this chain
    got = offer_clusters(5, left, right, scores, shops, once, ids)
    # the battery joins the first cluster it pairs with, and the two models stay apart
    assert got.tolist() == [0, 0, 0, 1, 1]
    # were its three model numbers counted, the cluster of ab100x would take in cd200z's
    bridged = offer_clusters(
        5, left, right, scores, shops, once, [ids[0], ids[1], {"cd200z", "ab100x"}, ids[3], ids[4]]
    )
    assert len(set(bridged.tolist())) == 1


def test_a_model_number_that_extends_another_does_not_pair_offers_without_labels(tmp_path):
    """A suffix on a model number (a colour, a region, a revision) names a variant, another
    product as often as not: without labels it is no evidence for a pair, and the title
    cosine, which would count the shared stem, does not speak for it either."""
    from neardup.jobs.products import dedup_offers

    models = [
        ("Acme", "ZX2450", "24"),
        ("Acme", "QV3100", "27"),
        ("Acme", "KL1200", "22"),
        ("Bolt", "TR5500", "32"),
        ("Bolt", "MP7700", "43"),
        ("Cord", "SE9010", "55"),
    ]
    rows = []
    for shop in ("a", "b"):
        for brand, model, size in models:
            # shop b lists the variant ZX2450W where shop a lists ZX2450
            number = model + "W" if shop == "b" and model == "ZX2450" else model
            rows.append((shop, f'{brand} {number} {size}" LED monitor', {}))
    o = _offers(rows)
    x = pair_features(describe(o), np.array([0]), np.array([6]))
    assert x[0, FEATURES.index("id_prefix")] == 1  # zx2450 begins zx2450w
    s = dedup_offers(o, tmp_path / "out", link=True)
    found = {
        tuple(sorted((r["id_a"], r["id_b"]), key=int))
        for r in map(json.loads, open(tmp_path / "out" / "pairs.jsonl"))
    }
    # every other model pairs with its listing in the other shop; the variant does not
    assert found == {(str(i), str(i + 6)) for i in range(1, 6)}
    assert s["duplicate_pairs"] == 5


def _shared_numbers_oracle(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    """num_shared, num_long, num_unmatched by brute force: the shorter list's numbers that
    some number of the longer list lies within the tolerance of."""
    from neardup.products.matcher import NUMBER_TOLERANCE

    short, long_ = (xs, ys) if len(xs) <= len(ys) else (ys, xs)
    if not short:
        return 0.0, -1.0, 0.0
    hit = sum(any(abs(x - y) <= NUMBER_TOLERANCE + 1e-9 for y in long_) for x in short)
    return float(hit), hit / len(long_), float(len(short) - hit)


def test_shared_attribute_numbers_hand_checked():
    o = _offers(
        [
            ("s1", "Lumo 46in TV", {"Weight": "33.1 lbs", "Width": '40-1/2"', "Power": "165W"}),
            (
                "s2",
                "Lumo 46in TV",
                {
                    "Weight": "33.1 lbs.",
                    "Width": "40.5 in",
                    "Height": "26.7",
                    "Power": "120W",
                    "Contrast": "4,000,000:1",
                },
            ),
            ("s3", "Lumo 46in TV", {}),
        ]
    )
    d = describe(o)
    x = pair_features(d, np.array([0, 0]), np.array([1, 2]))
    f = {name: x[:, i].tolist() for i, name in enumerate(FEATURES)}
    # 33.1 and 40.5 of the first offer's 3 numbers are on the second's list of 5; 165 is not
    assert f["num_shared"] == [2.0, 0.0]
    assert f["num_long"] == [pytest.approx(2 / 5), -1.0]
    assert f["num_unmatched"] == [1.0, 0.0]
    assert f["num_match"][0] == pytest.approx(2 / 3)


#: lists of attribute values of a few offers, with numbers near one another and fractions
_NUMBER_VALUES = st.lists(
    st.lists(
        st.sampled_from(
            [
                "10",
                "10.05",
                "33.1",
                "40-1/2",
                "40.5",
                "165",
                "120",
                "1,080",
                "1080",
                "0.5",
                "26.7",
                "26.75",
                "2012",
            ]
        ),
        max_size=6,
    ),
    min_size=2,
    max_size=6,
)


def _numbered_pairs(values):
    """Offers with these attribute values, every pair of them, and the pairs' features."""
    o = _offers([("s", "t", {f"k{j}": v for j, v in enumerate(vs)}) for vs in values])
    left, right = np.triu_indices(len(values), 1)
    return o, left, right, pair_features(describe(o), left, right)


@settings(max_examples=60, deadline=None)
@given(_NUMBER_VALUES)
def test_shared_attribute_numbers_match_a_brute_force_count(values):
    o, left, right, x = _numbered_pairs(values)
    cols = [FEATURES.index(c) for c in ("num_shared", "num_long", "num_unmatched")]
    for k, (a, b) in enumerate(zip(left.tolist(), right.tolist())):
        xs = attribute_numbers(o.attributes[a]).tolist()
        ys = attribute_numbers(o.attributes[b]).tolist()
        want = _shared_numbers_oracle(xs, ys) if xs and ys else (0.0, -1.0, 0.0)
        assert x[k, cols].tolist() == pytest.approx(list(want))


def test_a_model_number_written_alike_is_told_from_one_written_differently():
    o = _offers(
        [
            ("s1", "Sharp AQUOS 70in LED TV LC-70LE550U", {}),
            ("s2", "Sharp 70in LED HDTV LC-70LE550U", {}),  # written alike
            ("s3", "Sharp 70in LED HDTV LC70LE550U", {}),  # no hyphen
            ("s4", "Vizio 47in E470i-A0 TV", {}),
            ("s5", "Vizio 47in E470I-A0 TV", {}),  # another case
            ("s6", "Sharp 70in LED HDTV", {"Model Number": "LC-70LE550U"}),  # in an attribute
            ("s7", "Sharp 70in LED HDTV", {}),  # none
        ]
    )
    d = describe(o)
    left, right = np.array([0, 0, 3, 0, 2, 0]), np.array([1, 2, 4, 5, 5, 6])
    x = pair_features(d, left, right)
    share = x[:, FEATURES.index("id_share")].tolist()
    written = x[:, FEATURES.index("id_written")].tolist()
    assert share == [1, 1, 1, 1, 1, 0]  # hyphens and case do not matter to the model number
    assert written == [1, 0, 0, 1, 0, 0]  # ... but the written form is kept apart


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "LC-70LE550U",
                "LC70LE550U",
                "lc-70le550u",
                "E470i-A0",
                "E470I-A0",
                "UN46ES6580",
                "un46es6580",
                "46in",
                "",
            ]
        ),
        min_size=2,
        max_size=6,
    )
)
def test_written_model_numbers_match_a_brute_force_check(models):
    o = _offers([(f"s{i}", f"Brand {m} TV", {}) for i, m in enumerate(models)])
    d = describe(o)
    left, right = np.triu_indices(len(models), 1)
    x = pair_features(d, left, right)
    col = FEATURES.index("id_written")
    for k, (a, b) in enumerate(zip(left.tolist(), right.tolist())):
        # a model number (5+ characters, letters and 2+ digits) that both titles write alike
        want = models[a] == models[b] and models[a] not in ("", "46in")
        assert x[k, col] == want, (models[a], models[b])


def test_matched_numbers_weighted_by_how_few_offers_state_them_hand_checked():
    o = _offers(
        [
            ("s1", "Lumo 32in TV", {"Weight": "19.9 lbs", "Width": "30.7 in"}),
            ("s2", "Lumo 32in TV", {"Weight": "19.9 lbs.", "Width": '30-3/4"'}),
            ("s3", "Lumo 32in TV", {"Width": "30.7"}),
            ("s4", "Lumo 32in TV", {"Depth": "30.2"}),  # 30 too, but not within the tolerance
        ]
    )
    x = pair_features(describe(o), np.array([0, 0, 1, 0]), np.array([1, 2, 2, 3]))
    got = x[:, FEATURES.index("num_idf_sum")].tolist()
    # 19.9 is stated by 2 of the 4 offers, 30.7 (30.75 within the tolerance) by 3 of them
    assert got == pytest.approx([np.log(4 / 2) + np.log(4 / 3), np.log(4 / 3), np.log(4 / 3), 0.0])


@settings(max_examples=60, deadline=None)
@given(_NUMBER_VALUES)
def test_matched_number_weights_match_a_brute_force_count(values):
    from neardup.products.matcher import NUMBER_TOLERANCE

    o, left, right, x = _numbered_pairs(values)
    n = len(values)
    lists = [attribute_numbers(a).tolist() for a in o.attributes]
    every = [u for v in lists for u in v]
    tol = NUMBER_TOLERANCE + 1e-9

    def near(u):
        return sum(abs(u - y) <= tol for y in every)

    col = FEATURES.index("num_idf_sum")
    for k, (a, b) in enumerate(zip(left.tolist(), right.tolist())):
        short, long_ = (
            (lists[a], lists[b]) if len(lists[a]) <= len(lists[b]) else (lists[b], lists[a])
        )
        want = sum(
            max(np.log(n / near(v)), 0.0) for v in short if any(abs(v - y) <= tol for y in long_)
        )
        assert x[k, col] == pytest.approx(want, abs=1e-9)


def test_a_number_stated_near_itself_by_every_offer_weighs_nothing():
    # each offer states 10 and 10.05 (two numbers within the tolerance): 4 numbers near each
    # of them among 2 offers; the weight stays 0, never negative
    o = _offers([("s1", "t", {"a": "10", "b": "10.05"}), ("s2", "t", {"a": "10", "b": "10.05"})])
    x = pair_features(describe(o), np.array([0]), np.array([1]))
    assert x[0, FEATURES.index("num_idf_sum")] == 0.0
    assert x[0, FEATURES.index("num_shared")] == 2.0


@pytest.mark.parametrize(
    "text, spelled, not_spelled",
    [
        ("Sony DSC-W120/P Camera", {"dscw120p", "dscw120"}, set()),
        ("Canon PowerShot SX110 IS Digital Camera", {"sx110is", "sx110"}, {"powershotsx110"}),
        ("TomTom Mount Kit - 9S00.006", {"9s00006"}, set()),
        ("Electrolux Homecare #EL012A Filter", {"el012a"}, {"#el012a"}),
        ("Samsung UN55ES6500FXZA TV", {"un55es6500fxza"}, {"un55es6500"}),
        ("Samsung Refurbished PN58C680-RB", {"pn58c680rb"}, {"pn58c680"}),  # hyphens join
        ("Monitor 1920 X 1080 RS 232", set(), {"x1080", "rs232", "1920x1080"}),
    ],
)
def test_spellings_join_a_model_number_written_in_pieces(text, spelled, not_spelled):
    from neardup.products.matcher import spellings

    got = spellings([text])
    assert spelled <= got
    assert not (not_spelled & got)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="ab1-/. #", max_size=6), max_size=8))
def test_spellings_are_runs_of_whole_words(pieces):
    from neardup.products.matcher import SPELL_RUN, SPELL_TAIL, spellings

    text = " ".join(pieces)
    words = [w for w in re.split(r"[^0-9a-z]+", text.lower().replace("-", "")) if w]
    want = set()  # brute force: every run that starts with a word of letters and digits
    for i, w in enumerate(words):
        if len(w) < 2 or w.isdigit() or w.isalpha():
            continue
        for j in range(i + 1, min(i + SPELL_RUN, len(words)) + 1):
            if j > i + 1 and len(words[j - 1]) > SPELL_TAIL:
                break
            want.add("".join(words[i:j]))
    assert spellings([text]) == want


def test_a_model_number_written_in_pieces_is_shared():
    o = _offers(
        [
            ("abt", "Sony Pink Cyber-Shot Digital Camera - DSCW120P", {}),
            ("buy", "Sony Cyber-shot DSC-W120 Digital Camera - Pink - DSCW120/P", {}),
            ("buy", "Sony Cyber-shot DSC-W120 Digital Camera - Silver - DSCW120/S", {}),
            ("abt", "Canon PowerShot Silver Digital Camera - SX110IS", {}),
            ("buy", "Canon PowerShot SX110 IS Digital Camera - Silver", {}),
        ]
    )
    d = describe(o)
    assert "dscw120p" in d.ids[1] and "dscw120p" not in d.ids[2]
    assert "sx110is" in d.ids[4]
    x = pair_features(d, np.array([0, 0, 3]), np.array([1, 2, 4]))
    assert x[:, FEATURES.index("id_share")].tolist() == [1, 0, 1]
    assert x[:, FEATURES.index("id_written")].tolist() == [0, 0, 0]  # written differently


def test_brands_from_titles_without_a_brand_column():
    from neardup.products.candidates import brands_of, title_brands

    o = _offers(
        [
            ("abt", "Danby Designer Portable Dishwasher - DDW1805WH", {}),
            ("buy", "Danby DDW497W Countertop Dishwasher", {}),
            ("buy", "Portable Dishwasher DDW1805W (White)", {}),
            ("abt", "Sony Bud Style Headphones - MDRED12LPSLV", {}),
            ("buy", "Bass Lover Earbuds by Sony - MDRED12LP/SLV", {}),
            ("buy", "Sony DVP-NS700H/B DVD Player", {}),
        ]
    )
    # danby and sony begin titles of both sources; portable and bass only one source's
    assert title_brands(o) == {"danby", "sony"}
    # a title that begins with no known brand has none, rather than a guessed one
    assert brands_of(o) == ["danby", "danby", "", "sony", "sony", "sony"]
    d = describe(o)
    x = pair_features(d, np.array([0, 3]), np.array([2, 4]))
    assert x[:, FEATURES.index("brand")].tolist() == [0, 1]
    # one source: each title's first word, as before
    one = _offers(
        [(s.replace("buy", "abt"), t, a) for s, t, a in zip(o.shops, o.titles, o.attributes)]
    )
    assert brands_of(one)[2] == "portable"


def test_forest_scores_do_not_depend_on_how_threads_sum_the_trees():
    # rows with equal features but different labels: leaves vote fractions, and a sum of
    # fractions in another order differs in its last bits
    rng = np.random.default_rng(0)
    x = np.zeros((4000, len(FEATURES)))
    x[:, :6] = rng.integers(0, 3, (4000, 6))
    y = (x[:, 0] + rng.random(4000)) > 1.8
    model = PairModel(n_estimators=100, n_jobs=2).fit(x, y)
    ref = model.score(x)
    for jobs in (1, 2, 1, 2):
        model._clf.set_params(n_jobs=jobs)
        assert np.array_equal(model.score(x), ref)


_HASHING_SCRIPT = """
import hashlib, json
import numpy as np
from neardup.products.blocking import token_blocking
from neardup.products.matcher import describe, one_per_shop, pair_features, rule_score
from neardup.products.synth import make_catalogue

offers, _ = make_catalogue(150, seed=3)
d = describe(offers)
left, right, w, _ = token_blocking(offers, per_offer=6, tokens=d.block_tokens)
x = pair_features(d, left, right)
s = one_per_shop(left, right, rule_score(x), d, x)
print(json.dumps([hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()
                  for a in (left, right, w, x, s)]))
"""


def test_matching_does_not_depend_on_the_process_string_hashing():
    # sets iterate in an order that changes with PYTHONHASHSEED: token numbers taken in that
    # order reorder tied candidates, and float sums over a set differ in their last bits
    import os
    import subprocess
    import sys

    got = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _HASHING_SCRIPT],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        got.append(json.loads(out))
    assert got[0] == got[1] == got[2]


def test_study_grows_its_forest_with_the_model_seed(catalogue):
    offers, labels = catalogue

    def thresholds(model_seed: int) -> list[float]:
        res = run_study(offers, labels, StudyConfig(bootstraps=1, seed=1, model_seed=model_seed))
        return [r["threshold"] for r in res.runs if r["method"] == "neardup"]

    # the same state gives the same study; another state another forest, whose out-of-fold
    # scores (and so the thresholds tuned on them) differ
    assert thresholds(0) == thresholds(0)
    assert thresholds(0) != thresholds(5)
    with pytest.raises(ValueError, match="model_seed"):
        StudyConfig(model_seed=-1)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0]), st.booleans(), st.booleans()
        ),
        min_size=1,
        max_size=30,
    ),
    st.integers(0, 4),
)
def test_tune_thresholds_against_brute_force(rows, missed):
    """``main`` starts as the best single threshold; the result is the best ``one_sided`` for
    its ``main`` and the best ``main`` for its ``one_sided`` (over every cut, and keeping no
    one-sided pair), never worse than one threshold for all."""
    from neardup.evaluate.bootstrap import tune_threshold
    from neardup.products.matcher import FEATURES, Thresholds, tune_thresholds

    scores = np.array([r[0] for r in rows])
    truth = np.array([r[1] for r in rows], bool)
    x = np.zeros((len(rows), len(FEATURES)))
    x[:, FEATURES.index("id_one")] = [r[2] for r in rows]
    one = x[:, FEATURES.index("id_one")] > 0
    total = int(truth.sum()) + missed
    t = tune_thresholds(scores, truth, total, x, min_group=1)
    single = tune_threshold(scores, truth, total)[0]
    live = one & (scores > 0)
    if not (live & truth).any() or not (live & ~truth).any():
        assert t == Thresholds(single)
        return
    # with the default, so few one-sided pairs get no threshold of their own
    assert tune_thresholds(scores, truth, total, x) == Thresholds(single)

    def f1(main, side):
        keep = Thresholds(main, side).keep(scores, x)
        return 2 * int((keep & truth).sum()) / (int(keep.sum()) + total)

    cuts = [*set(scores.tolist()), float("inf")]
    best = f1(t.main, t.one_sided)
    assert best == pytest.approx(max(f1(t.main, c) for c in cuts))
    # main: a cut at a score, or above every score (none of the others kept)
    assert best == pytest.approx(max(f1(c, t.one_sided) for c in [*cuts[:-1], 2.0]))
    assert t.main < 2.0
    assert best >= f1(single, None) - 1e-12
    # keep: at least the pair's own threshold, and above 0
    assert np.array_equal(
        Thresholds(t.main, t.one_sided).keep(scores, x),
        np.where(one, scores >= t.one_sided, scores >= t.main) & (scores > 0),
    )


def test_one_sided_threshold_needs_enough_labelled_pairs_of_both_kinds():
    """One-sided duplicates scored below the other pairs' non-duplicates: a threshold of their
    own keeps them, but only where their labelled pairs hold MIN_GROUP_PAIRS of each kind
    (with few non-duplicates the best threshold is just the lowest duplicate's score)."""
    from neardup.products.matcher import FEATURES, MIN_GROUP_PAIRS, Thresholds, tune_thresholds

    def case(n_other):
        # others: 100 duplicates at 0.8-0.99, 100 non-duplicates at 0.4-0.6; one-sided:
        # MIN_GROUP_PAIRS duplicates at 0.3-0.39 and n_other non-duplicates at 0.1-0.2
        scores = np.r_[
            np.linspace(0.8, 0.99, 100),
            np.linspace(0.4, 0.6, 100),
            np.linspace(0.3, 0.39, MIN_GROUP_PAIRS),
            np.linspace(0.1, 0.2, n_other),
        ]
        truth = np.r_[
            np.ones(100), np.zeros(100), np.ones(MIN_GROUP_PAIRS), np.zeros(n_other)
        ].astype(bool)
        x = np.zeros((len(scores), len(FEATURES)))
        x[200:, FEATURES.index("id_one")] = 1
        return tune_thresholds(scores, truth, int(truth.sum()), x)

    assert case(MIN_GROUP_PAIRS - 1) == Thresholds(0.8)  # one threshold for all
    assert case(MIN_GROUP_PAIRS) == Thresholds(0.8, 0.3)  # every duplicate kept, nothing else
