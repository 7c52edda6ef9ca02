"""The compiled pair-features kernel against its plain-Python oracle
(``oracles.product_pair_features``, sets a pair at a time): equal value for value on generated catalogues, on every pair and on
hand-picked edge cases (unicode model numbers, prefixes, measures, prices, numbers)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import product_pair_features as oracle_features

from neardup._kernels import offers as kernel
from neardup.products import Offers
from neardup.products.blocking import token_blocking
from neardup.products.matcher import (
    FEATURES,
    code_parts,
    describe,
    offer_parts,
    pair_features,
    select_parts,
)
from neardup.products.synth import make_catalogue


def _offers(rows, prices=None):
    o = Offers()
    for i, (shop, title, attrs) in enumerate(rows):
        o.ids.append(str(i))
        o.shops.append(shop)
        o.titles.append(title)
        o.attributes.append(dict(attrs))
        o.sources.append(f"t:{i}")
    return o


def _same(x: np.ndarray, y: np.ndarray) -> None:
    assert x.shape == y.shape
    diff = np.argwhere(x != y)
    assert not len(diff), [(int(r), FEATURES[c], x[r, c], y[r, c]) for r, c in diff[:10]]


def _all_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    pairs = np.array(list(itertools.combinations(range(n), 2)), np.int64).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def test_kernel_columns_are_the_features_columns():
    cols = dict(kernel.COLUMNS)
    assert cols.pop("width") == len(FEATURES)
    for name, c in cols.items():
        assert FEATURES[c] == name
    # unit2 and unit3 follow unit1
    assert FEATURES[cols["unit1"] + 1 : cols["unit1"] + 3] == ("unit2", "unit3")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kernel_equals_the_python_loop_on_generated_catalogues(seed):
    offers, _ = make_catalogue(40, seed=seed)
    d = describe(offers)
    left, right = _all_pairs(len(offers))
    _same(pair_features(d, left, right), oracle_features(d, left, right))
    # and on the pairs of a blocking, in both orders
    bl, br, _, _ = token_blocking(offers, per_offer=5)
    _same(pair_features(d, br, bl), oracle_features(d, br, bl))


def test_kernel_equals_the_python_loop_on_a_study_part():
    offers, _ = make_catalogue(50, seed=4)
    parts = code_parts(offer_parts(offers))
    rows = np.random.default_rng(0).choice(len(offers), len(offers) * 2 // 3, replace=False)
    from neardup.products.study import subset

    part = subset(offers, rows)
    d = describe(part, parts=select_parts(parts, rows))
    left, right = _all_pairs(len(part))
    _same(pair_features(d, left, right), oracle_features(d, left, right))


EDGE = [
    ("a", "Acme ÉCRAN123 55inch 60hz 1080p TV", {"Price": "$499.99", "Weight": "30-3/8 lbs"}),
    ("b", "Acme ÉCRAN123X 55inch 120hz TV", {"price": "499", "Weight": "30.3 lbs, 1920"}),
    ("b", "Acme ÉCRA12 55inch 60hz 60hz", {"Width": "48.5 in", "Height": "1920 x 1080"}),
    ("", "Other ÉCRA12Z 46inch 60hz 720p", {}),
    ("", "Other ÉCRA12Z 46inch 60hz 720p", {"Price": "0"}),
    ("c", "Brandless thing", {"Note": "100,000:1 contrast 19.9 lbs"}),
    ("c", "LC-70LE550U Sharp 70inch", {"Model": "LC70LE550U", "Weight": "19.95"}),
    ("a", "Sharp LC70LE550U 70inch 70in", {"Weight": "19.9", "Price": "1,299.00"}),
    ("d", "DSC-W120/P camera 7.2mp 4x", {"Resolution": "7.2 MP"}),
    ("d", "DSCW120P camera 7.2mp 3x", {"Resolution": "7.2 MP", "Zoom": "3 x"}),
]


def test_kernel_equals_the_python_loop_on_edge_cases():
    offers = _offers(EDGE)
    d = describe(offers)
    left, right = _all_pairs(len(offers))
    x = pair_features(d, left, right)
    _same(x, oracle_features(d, left, right))
    col = {f: i for i, f in enumerate(FEATURES)}
    # the cases the rows were written for occur
    assert x[:, col["id_prefix"]].any() and x[:, col["id_share"]].any()
    assert x[:, col["id_written"]].any() and x[:, col["same_shop"]].any()
    assert (x[:, col["size"]] == -1).any() and (x[:, col["units_conflict"]] > 0).any()
    assert (x[:, col["price_ratio"]] > 0).any() and (x[:, col["num_match"]] > 0).any()


def test_model_number_prefixes_count_characters_not_bytes():
    # "écr12" holds 5 characters in 6 bytes: too short to be a prefix of another
    rows = [
        ("a", "Acme ÉCR12 thing", {}),
        ("b", "Acme ÉCR12X thing", {}),
        ("a", "Acme ÉCRA12 tool", {}),
        ("b", "Acme ÉCRA12X tool", {}),
    ]
    d = describe(_offers(rows))
    assert d.ids == [{"écr12"}, {"écr12x"}, {"écra12"}, {"écra12x"}]
    left, right = np.array([0, 2]), np.array([1, 3])
    x = pair_features(d, left, right)
    _same(x, oracle_features(d, left, right))
    c = FEATURES.index("id_prefix")
    assert x[:, c].tolist() == [0.0, 1.0]


def test_pairs_out_of_range_are_refused():
    d = describe(_offers(EDGE[:3]))
    with pytest.raises(IndexError, match="0..2"):
        pair_features(d, np.array([0]), np.array([3]))
    assert pair_features(d, np.array([], np.int64), np.array([], np.int64)).shape == (
        0,
        len(FEATURES),
    )


WORDS = [
    "acme",
    "other",
    "tv",
    "55inch",
    "46inch",
    "60hz",
    "120hz",
    "1080p",
    "ab1234",
    "ab1234x",
    "ab12",
    "xy-9000",
    "xy9000",
    "ÉCRAN77",
    "ÉCRAN77Z",
    "lbs",
    "black",
    "4x",
]
VALUES = [
    "19.9 lbs",
    "30-3/8",
    "1,920 x 1,080",
    "60 Hz",
    "$99.95",
    "100",
    "12",
    "black",
    "AB1234",
    "0.5",
]


@st.composite
def catalogues(draw):
    n = draw(st.integers(2, 9))
    rows = []
    for _ in range(n):
        shop = draw(st.sampled_from(["", "s1", "s2", "s3"]))
        title = " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6)))
        keys = draw(
            st.lists(
                st.sampled_from(["Weight", "Size", "Price", "Model", "Color"]),
                max_size=3,
                unique=True,
            )
        )
        rows.append((shop, title, {k: draw(st.sampled_from(VALUES)) for k in keys}))
    return rows


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(catalogues())
def test_kernel_equals_the_python_loop_on_drawn_catalogues(rows):
    d = describe(_offers(rows))
    left, right = _all_pairs(len(rows))
    _same(pair_features(d, left, right), oracle_features(d, left, right))
    _same(pair_features(d, right, left), oracle_features(d, right, left))
