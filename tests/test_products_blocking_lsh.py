"""MinHash LSH over offer tokens (neardup.products.blocking.lsh_pairs) and its combination with
token blocking (token_blocking(..., lsh=...)), against brute-force oracles on small generated
data: Jaccard similarity of every pair, cosine weights by definition."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_products_blocking import _two_shops

from neardup import ConfigError
from neardup.products.blocking import lsh_pairs, offer_tokens, title_cosine, token_blocking
from neardup.products.candidates import true_pairs
from neardup.products.offers import Offers
from neardup.products.synth import make_catalogue

_offers = _two_shops  # offers of (shop, title) rows


def _shared_jaccard(tokens: list[set[str]]) -> dict[tuple[int, int], float]:
    """Jaccard similarity of every pair over the tokens at least two offers hold."""
    df: dict[str, int] = {}
    for s in tokens:
        for t in s:
            df[t] = df.get(t, 0) + 1
    kept = [{t for t in s if df[t] >= 2} for s in tokens]
    return {
        (a, b): (len(kept[a] & kept[b]) / len(kept[a] | kept[b]) if kept[a] | kept[b] else 0.0)
        for a, b in combinations(range(len(tokens)), 2)
    }


def _variants(rng: np.random.Generator, n_groups: int, vocab: int = 400) -> list[set[str]]:
    """Groups of offers around one random token set each: copies with one token swapped for a
    fresh one now and then (high Jaccard within a group, low across)."""
    out = []
    for g in range(n_groups):
        base = {f"w{x}" for x in rng.choice(vocab, 8, replace=False)}
        for c in range(int(rng.integers(1, 4))):
            s = set(base)
            if c and rng.random() < 0.5:
                s.discard(sorted(s)[int(rng.integers(len(s)))])
                s.add(f"u{g}_{c}")
            out.append(s)
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_lsh_finds_the_pairs_of_high_jaccard(seed):
    tokens = _variants(np.random.default_rng(seed), 60)
    jac = _shared_jaccard(tokens)
    left, right = lsh_pairs(tokens, 20, 3, bucket_cap=1000, seed=seed + 1)
    got = set(zip(left.tolist(), right.tolist()))
    assert list(zip(left.tolist(), right.tolist())) == sorted(got)  # sorted, distinct
    # equal sets agree on every band: always found
    assert {p for p, j in jac.items() if j == 1.0} <= got
    # at Jaccard 0.7 a pair is missed with probability (1 - 0.7**3)**20 < 1e-3
    high = {p for p, j in jac.items() if j >= 0.7}
    assert high and len(high & got) >= 0.98 * len(high)
    # a bucket's offers agree on a band's minima: every pair shares a token
    assert all(jac[p] > 0 for p in got)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sets(st.sampled_from([f"t{i}" for i in range(12)]), max_size=6),
            st.sampled_from("xyz"),
        ),
        min_size=2,
        max_size=25,
    ),
    st.sampled_from([(4, 1), (10, 2), (20, 3)]),
    st.sampled_from([2, 3, 1000]),
)
def test_lsh_pairs_are_bounded_and_across_sources(rows, banding, cap):
    tokens = [s for s, _ in rows]
    shops = [x for _, x in rows]
    jac = _shared_jaccard(tokens)
    left, right = lsh_pairs(tokens, *banding, sources=shops, bucket_cap=cap)
    for a, b in zip(left.tolist(), right.tolist()):
        assert a < b and shops[a] != shops[b] and jac[(a, b)] > 0
    # a capped bucket is a star: at most bands * n * cap / 2 pairs whatever the data
    assert len(left) <= banding[0] * len(rows) * cap / 2


def _purged_pair_offers() -> Offers:
    """Offer 0 (shop a) and offer 1 (shop b) have titles alike whose common words many other
    offers use (purged at a small comparison bound; no other offer has all of them); each also shares one rare word with an
    offer of the other shop (2 and 3, long titles of words no one else has), so both are in
    kept blocks and get no fallback, and those pairs weigh little."""
    rows = [
        ("a", "acme widget blue large deluxe zebra"),
        ("b", "acme widget blue large deluxe quokka"),
        ("b", "zebra " + " ".join(f"only{i}" for i in range(8))),
        ("a", "quokka " + " ".join(f"solo{i}" for i in range(8))),
    ]
    rows += [
        ("c", f"acme widget {c} {s} deluxe")
        for c, s in [
            (c, s)
            for c in ("blue", "red", "green")
            for s in ("large", "small", "tiny")
            if (c, s) != ("blue", "large")
        ]
        * 3
    ]
    return _offers(rows)


def test_a_pair_found_only_by_lsh_survives_pruning_as_an_offers_best():
    offers = _purged_pair_offers()
    n = len(offers)
    kw = dict(per_offer=0.5, comparisons=0.2, link=True, fallback=True)
    left, right, _, st0 = token_blocking(offers, **kw)
    assert (0, 1) not in set(zip(left.tolist(), right.tolist()))
    assert st0.co_occurring >= 1  # offer 0 is in a kept block: no fallback for it
    left, right, w, st = token_blocking(offers, lsh=(20, 2), lsh_bucket_cap=n, **kw)
    got = dict(zip(zip(left.tolist(), right.tolist()), w.tolist()))
    assert (0, 1) in got and st.lsh_candidates >= 1 and st.lsh_pairs >= st.lsh_candidates
    # weighted by the cosine over all the tokens the two share (no token purged)
    tokens = offer_tokens(offers, descriptions=True)
    want = title_cosine(tokens, np.array([0]), np.array([1]))[0]
    assert got[(0, 1)] == pytest.approx(want, rel=1e-9)
    # and it is offer 1's best (its only) pair, kept whatever the budget
    assert max((x, p) for p, x in got.items() if 1 in p)[1] == (0, 1)
    assert st.candidates <= max(0.5 * n, n)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(
                st.sampled_from(
                    ["tv", "lumo", "46", "1080p", "ab12", "red", "x9", "hd", "led", "smart"]
                ),
                min_size=1,
                max_size=5,
            ),
            st.sampled_from("xyz"),
        ),
        min_size=2,
        max_size=30,
    ),
    st.booleans(),
    st.sampled_from([1.0, 2.0, 5.0]),
    st.sampled_from([0.2, 1.0, 5.0]),
)
def test_combined_blocking_keeps_the_budget_and_link(rows, link, per_offer, comparisons):
    offers = _offers([(shop, " ".join(words)) for words, shop in rows])
    n = len(rows)
    base = token_blocking(offers, per_offer=1e6, comparisons=comparisons, link=link)
    left, right, w, st = token_blocking(
        offers, per_offer=per_offer, comparisons=comparisons, link=link, lsh=(10, 2)
    )
    assert len(left) == st.candidates <= per_offer * n
    assert np.all((w > 0) & (w <= 1))
    pairs = list(zip(left.tolist(), right.tolist()))
    assert pairs == sorted(set(pairs))
    if link:
        assert all(offers.shops[a] != offers.shops[b] for a, b in pairs)
    # every pair is a co-occurring / fallback pair, or one the LSH proposes
    lsh = set(
        zip(
            *(
                x.tolist()
                for x in lsh_pairs(
                    offer_tokens(offers, descriptions=True),
                    10,
                    2,
                    sources=offers.shops if link else None,
                    bucket_cap=max(2, int(2 * comparisons // 10)),
                )
            )
        )
    )
    assert set(pairs) <= set(zip(base[0].tolist(), base[1].tolist())) | lsh
    # the LSH pairs only add: without a budget, the candidates include token blocking's
    full = token_blocking(offers, per_offer=1e6, comparisons=comparisons, link=link, lsh=(10, 2))
    assert set(zip(base[0].tolist(), base[1].tolist())) <= set(
        zip(full[0].tolist(), full[1].tolist())
    )


def test_combined_blocking_on_a_synthetic_catalogue():
    full, all_labels = make_catalogue(300, seed=3)
    rows = [i for i, s in enumerate(full.shops) if s in ("alpha", "gamma")]
    offers = _offers([(full.shops[i], full.titles[i]) for i in rows])
    labels = [all_labels[i] for i in rows]
    tl, tr = true_pairs(labels)
    truth = set(zip(tl.tolist(), tr.tolist()))
    left, right, _, st = token_blocking(offers, per_offer=2, link=True, lsh=(20, 3))
    assert len(left) <= 2 * len(offers)
    found = len(truth & set(zip(left.tolist(), right.tolist())))
    assert found / len(truth) >= 0.95, (found, len(truth))


def test_bad_lsh_parameters():
    offers = _offers([("a", "x y"), ("b", "x y")])
    for bad in ((0, 2), (2,), "20x3", (2.0, 1)):
        with pytest.raises(ConfigError, match="lsh"):
            token_blocking(offers, lsh=bad)
    with pytest.raises(ConfigError, match="lsh_bucket_cap"):
        token_blocking(offers, lsh=(2, 1), lsh_bucket_cap=1)
    with pytest.raises(ConfigError, match="bands"):
        lsh_pairs([{"a"}, {"a"}], 0, 1)
    assert [x.tolist() for x in lsh_pairs([{"a"}, {"b"}], 4, 1)] == [[], []]
    assert [x.tolist() for x in lsh_pairs([{"a", "b"}, {"a", "b"}], 4, 1)] == [[0], [1]]
