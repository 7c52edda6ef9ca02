"""Token blocking with meta-blocking (neardup.products.blocking) against a brute-force oracle:
every pair of offers compared, weights computed from their definitions."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup import ConfigError
from neardup.products.blocking import budget_masks, offer_tokens, title_cosine, token_blocking
from neardup.products.candidates import true_pairs
from neardup.products.modelwords import TITLE_MODEL_WORD
from neardup.products.offers import Offers
from neardup.products.synth import make_catalogue


def _offers(titles: list[str], shops: list[str] | None = None) -> Offers:
    o = Offers()
    for i, t in enumerate(titles):
        o.ids.append(str(i))
        o.shops.append(shops[i] if shops else "s")
        o.titles.append(t)
        o.attributes.append({})
        o.sources.append("test")
    return o


def _oracle(tokens, shops, link, comparisons, boost):
    """Weights of every co-occurring pair by definition: purge the commonest tokens beyond the
    comparison budget, weigh tokens by log(1 + n/df), model words (1 + boost) times more,
    cosine of the offers' token weights over the kept shared tokens."""
    n = len(tokens)
    df: dict[str, int] = {}
    for s in tokens:
        for t in s:
            df[t] = df.get(t, 0) + 1
    shared = sorted(c for c in df.values() if c >= 2)
    total, cap = 0.0, 1
    for c in shared:
        if total + c * (c - 1) / 2 > comparisons * n:
            break
        total += c * (c - 1) / 2
        cap = c

    def w(t: str) -> float:
        mw = TITLE_MODEL_WORD.fullmatch(t.removeprefix("p:")) is not None
        return math.log(1 + n / df[t]) * (1 + boost if mw else 1)

    norm = [math.sqrt(sum(w(t) ** 2 for t in s)) for s in tokens]
    sims = {}
    for a, b in combinations(range(n), 2):
        if link and shops[a] == shops[b]:
            continue
        common = [t for t in tokens[a] & tokens[b] if 2 <= df[t] <= cap]
        if common:
            sims[(a, b)] = sum(w(t) ** 2 for t in common) / (norm[a] * norm[b])
    return sims, cap


def _fallback_oracle(tokens, shops, link, comparisons, boost, co_occurring):
    """The fallback pairs by definition: an offer in no co-occurring pair, with its tokens that
    some offer it may be paired with holds, rarest first (fewest such offers, then fewest
    offers, then first seen, each offer's tokens in sorted order); those offers holding the rarest one, narrowed while more than
    ceil(comparisons) to those also holding the next (a token none of them holds skipped);
    the first ceil(comparisons) of them; each pair weighted by the cosine over all the tokens
    the two share."""
    n = len(tokens)
    vid: dict[str, int] = {}
    for s in tokens:
        for t in sorted(s):  # not a set's order, which changes with the string hashing
            vid.setdefault(t, len(vid))
    df = {t: sum(t in s for s in tokens) for t in vid}
    limit = math.ceil(comparisons)

    def w2(t: str) -> float:
        mw = TITLE_MODEL_WORD.fullmatch(t.removeprefix("p:")) is not None
        return (math.log(1 + n / df[t]) * (1 + boost if mw else 1)) ** 2

    norm = [math.sqrt(sum(w2(t) for t in s)) for s in tokens]
    paired = {u for p in co_occurring for u in p}
    out = {}
    for o in range(n):
        if o in paired:
            continue

        def ok(j, o=o):
            return j != o and not (link and shops[j] == shops[o])

        pairable = {t: sum(ok(j) and t in tokens[j] for j in range(n)) for t in tokens[o]}
        toks = sorted(
            (t for t in tokens[o] if pairable[t]), key=lambda t: (pairable[t], df[t], vid[t])
        )
        if not toks:
            continue
        cand = [j for j in range(n) if ok(j) and toks[0] in tokens[j]]
        for t in toks[1:]:
            if len(cand) <= limit:
                break
            sub = [j for j in cand if t in tokens[j]]
            if sub:
                cand = sub
        for j in cand[:limit]:
            out[(min(o, j), max(o, j))] = sum(w2(t) for t in tokens[o] & tokens[j]) / (
                norm[o] * norm[j]
            )
    return out


WORDS = ["tv", "lumo", "46", "1080p", "ab12", "ab123456789", "ab123456700", "red", "x9", "hd"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5), min_size=2, max_size=14),
    st.lists(st.sampled_from("xyz"), min_size=14, max_size=14),
    st.booleans(),
    st.sampled_from([0.5, 1.0, 3.0]),
    st.sampled_from([0.2, 1.0, 5.0]),
    st.sampled_from([0, 1, 2]),
    st.booleans(),
)
def test_blocking_matches_brute_force(
    title_words, shops, link, per_offer, comparisons, best, fallback
):
    titles = [" ".join(w) for w in title_words]
    shops = shops[: len(titles)]
    offers = _offers(titles, shops)
    tokens = offer_tokens(offers)
    co, cap = _oracle(tokens, shops, link, comparisons, 3.0)
    extra = _fallback_oracle(tokens, shops, link, comparisons, 3.0, co) if fallback else {}
    assert not set(co) & set(extra)
    sims = {**co, **extra}
    left, right, weight, stats = token_blocking(
        offers,
        per_offer=per_offer,
        comparisons=comparisons,
        link=link,
        best_per_offer=best,
        tokens=tokens,
        fallback=fallback,
    )
    got = dict(zip(zip(left.tolist(), right.tolist()), weight.tolist()))
    assert stats.co_occurring == len(co)
    assert stats.fallback_offers == len({u for p in extra for u in p} - {u for p in co for u in p})
    assert stats.fallback_candidates == len(set(got) & set(extra))
    if co:
        assert stats.max_block == cap
    # every candidate co-occurs, with the oracle's weight; never a pair within a shop on link
    for p, x in got.items():
        assert p in sims and x == pytest.approx(min(sims[p], 1.0), rel=1e-9, abs=1e-12)
        assert not (link and shops[p[0]] == shops[p[1]])
    assert list(zip(left.tolist(), right.tolist())) == sorted(got)
    # each offer keeps its best pairs (ties: any of them)
    n = len(titles)
    for u in range(n):
        mine = sorted((s for p, s in sims.items() if u in p), reverse=True)
        if mine and best:
            kth = mine[min(best, len(mine)) - 1]
            assert sum(1 for p, s in got.items() if u in p and s >= kth - 1e-12) >= min(
                best, len(mine)
            )
    # the budget: the pairs beyond each offer's best are the highest weighted ones
    budget = int(per_offer * n)
    assert len(got) <= max(budget, len(got)) and len(got) <= len(sims)
    if len(got) < min(budget, len(sims)):
        pytest.fail("fewer candidates than the budget allows")
    left_out = [s for p, s in sims.items() if p not in got]
    if left_out and len(got) >= budget:
        chosen_by_weight = sorted(got.values(), reverse=True)[: max(0, budget - n * best)]
        if chosen_by_weight:
            assert max(left_out) <= min(chosen_by_weight) + 1e-12


def test_rare_shared_model_words_pair_first():
    titles = [
        "Lumo LM46X210 46 inch 1080p TV",
        "Lumo 46-Inch LM46X210 LED TV",
        "Lumo 46 inch 1080p TV",
        "Vistar VS46Y990 46 inch 1080p TV",
        "Vistar 46in VS46Y990",
        "Orbis 32 inch 720p TV",
    ]
    left, right, w, _ = token_blocking(_offers(titles), per_offer=0.5, best_per_offer=0)
    got = dict(zip(zip(left.tolist(), right.tolist()), w.tolist()))
    assert set(got) == {(0, 1), (3, 4), (0, 2)}
    assert got[(0, 1)] == max(got.values())  # the shared rare model number weighs most


def test_link_never_pairs_one_shop():
    titles = ["Lumo LM46X210 TV"] * 4
    shops = ["a", "a", "b", "b"]
    left, right, _, _ = token_blocking(_offers(titles, shops), link=True)
    assert set(zip(left.tolist(), right.tolist())) == {(0, 2), (0, 3), (1, 2), (1, 3)}


def test_prefix_tokens_join_model_number_spellings():
    offers = _offers(["Samsung UN55ES8000FXZA LED", "Samsung UN55ES8000 smart TV"])
    tokens = offer_tokens(offers)
    assert "p:un55es8" in tokens[0] and "p:un55es8" in tokens[1]
    assert not {"p:samsung", "p:led"} & (tokens[0] | tokens[1])


def test_budget_and_completeness_on_a_synthetic_catalogue():
    # the two shops whose titles carry the model number (the third's titles name only brand
    # and specifications, which sibling models share: titles alone cannot tell those apart)
    full, all_labels = make_catalogue(300, seed=3)
    rows = [i for i, s in enumerate(full.shops) if s in ("alpha", "gamma")]
    offers = _offers([full.titles[i] for i in rows], [full.shops[i] for i in rows])
    labels = [all_labels[i] for i in rows]
    tl, tr = true_pairs(labels)
    truth = set(zip(tl.tolist(), tr.tolist()))
    left, right, _, stats = token_blocking(offers, per_offer=2, link=True)
    assert len(left) <= 2 * len(offers) and stats.candidates == len(left)
    found = len(truth & set(zip(left.tolist(), right.tolist())))
    assert found / len(truth) >= 0.95, (found, len(truth))


def test_no_pairs_and_bad_parameters():
    for titles in (["one"], ["a b", "c d"], []):
        left, right, w, stats = token_blocking(_offers(titles))
        assert len(left) == len(right) == len(w) == 0 and stats.candidates == 0
    with pytest.raises(ConfigError, match="per_offer"):
        token_blocking(_offers(["a", "a"]), per_offer=0)
    with pytest.raises(ConfigError, match="best_per_offer"):
        token_blocking(_offers(["a", "a"]), best_per_offer=-1)


def test_weights_are_cosines_in_unit_range():
    offers, _ = make_catalogue(40, seed=1)
    _, _, w, _ = token_blocking(offers)
    assert len(w) and np.all(w > 0) and np.all(w <= 1.0)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=5), min_size=2, max_size=10),
    st.data(),
)
def test_title_cosine_matches_its_definition(title_words, data):
    tokens = [set(w) for w in title_words]
    n = len(tokens)
    pairs = data.draw(
        st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=12)
    )
    left = np.array([p[0] for p in pairs], np.int64)
    right = np.array([p[1] for p in pairs], np.int64)
    df = {t: sum(t in s for s in tokens) for s in tokens for t in s}

    def w(t):
        mw = TITLE_MODEL_WORD.fullmatch(t.removeprefix("p:")) is not None
        return (math.log(1 + n / df[t]) * (4.0 if mw else 1.0)) ** 2

    got = title_cosine(tokens, left, right)
    for k, (a, b) in enumerate(pairs):
        na, nb = math.sqrt(sum(map(w, tokens[a]))), math.sqrt(sum(map(w, tokens[b])))
        want = 0.0 if not na or not nb else sum(map(w, tokens[a] & tokens[b])) / (na * nb)
        assert got[k] == pytest.approx(min(want, 1.0), rel=1e-9, abs=1e-12)


def test_banded_candidates_leave_out_bandings_over_the_pair_bound():
    from neardup.products.candidates import banded_candidates, bandings, model_word_sets
    from neardup.products.matcher import describe

    offers, _ = make_catalogue(120, seed=2)
    d = describe(offers)
    sets = model_word_sets(offers, brands=d.brands, max_df=0.2)
    full = banded_candidates(sets, bandings(24), 24)
    sizes = {k: len(v[0]) for k, v in full.items()}
    cap = sorted(sizes.values())[len(sizes) // 2]  # about half the bandings fit
    capped = banded_candidates(sets, bandings(24), 24, max_pairs=cap, always=(24, 1))
    assert (24, 1) in capped and sizes[(24, 1)] > cap  # kept though over the bound
    for key, (left, right) in capped.items():
        assert left.tolist() == full[key][0].tolist() and right.tolist() == full[key][1].tolist()
        assert key == (24, 1) or len(left) <= cap  # the bound is an upper bound
    assert set(full) - set(capped)  # some were left out


def _acme_offers():
    return _two_shops(
        [("a", f"Acme widget {i}") for i in range(40)]
        + [("b", "Acme widget x100z"), ("b", "Acme widget x100z")]
    )


def test_offers_left_without_candidates_are_counted():
    """Offers whose every shared word is purged as too common are in no pair of the kept
    blocks: without the fallback they get no candidate pair, and the blocking says how many;
    with it (the default) each gets pairs with offers of its rarest purged block."""
    o = _acme_offers()
    n = len(o)
    # a bound of 0.1 pairs per offer (4 pairs) purges "acme" and "widget" (861 pairs each):
    # only the two x100z offers share a kept word
    left, right, _, st = token_blocking(o, per_offer=5, comparisons=0.1, fallback=False)
    paired = set(left.tolist()) | set(right.tolist())
    assert paired == {40, 41}
    assert st.offers_without_candidates == n - 2 and st.fallback_offers == 0
    _, _, _, none = token_blocking(o, per_offer=5, comparisons=0.1, link=True, fallback=False)
    assert none.candidates == 0 and none.offers_without_candidates == n
    for link in (False, True):
        left, right, w, st = token_blocking(o, per_offer=5, comparisons=0.1, link=link)
        assert st.offers_without_candidates == 0 and st.candidates <= 5 * n
        assert st.fallback_offers == (n if link else n - 2) and st.fallback_candidates > 0
        assert np.all(w > 0)
        # each offer is compared with at most ceil(comparisons) = 1 offer of its own
        assert st.candidates <= st.co_occurring + st.fallback_offers


def _two_shops(rows):
    o = Offers()
    for i, (shop, title) in enumerate(rows):
        o.ids.append(str(i))
        o.shops.append(shop)
        o.titles.append(title)
        o.attributes.append({})
        o.sources.append("t")
    o.descriptions = [""] * len(rows)
    return o


def test_two_shops_sharing_only_common_words_are_linked():
    """Two catalogues whose titles share only words each shop uses a lot (brand, kind, colour):
    the blocks of every shared word are purged, yet each offer gets candidates, its best
    first, and they hold its true pair."""
    brands, kinds, colours = (
        ["lumo", "vistar", "kanto"],
        ["led", "lcd", "plasma"],
        ["black", "silver"],
    )
    specs = [(b, k, c) for b in brands for k in kinds for c in colours]  # 18 products
    rows = [("alpha", f"{b} {k} {c} hdtv a{p:03d}q") for p, (b, k, c) in enumerate(specs)]
    rows += [
        ("beta", f"{b.title()} - {c.title()} {k.upper()} television sku{p + 500}")
        for p, (b, k, c) in enumerate(specs)
    ]  # each shop its own product codes
    offers = _two_shops(rows)
    n = len(rows)
    _, _, _, old = token_blocking(offers, link=True, per_offer=3, comparisons=0.5, fallback=False)
    assert old.candidates == 0 and old.offers_without_candidates == n  # all purged
    left, right, w, st = token_blocking(offers, link=True, per_offer=3, comparisons=0.5)
    assert st.offers_without_candidates == 0 and st.fallback_offers == n
    assert st.candidates <= 3 * n
    shops = [r[0] for r in rows]
    assert all(shops[a] != shops[b] for a, b in zip(left.tolist(), right.tolist()))
    got = set(zip(left.tolist(), right.tolist()))
    truth = {(p, p + len(specs)) for p in range(len(specs))}
    assert truth <= got, sorted(truth - got)
    # and a true pair is each offer's best-weighted candidate
    for a, b in truth:
        mine = [(x, p) for p, x in zip(zip(left.tolist(), right.tolist()), w.tolist()) if a in p]
        assert max(mine)[1] == (a, b)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.lists(st.sampled_from(WORDS), min_size=0, max_size=5), st.sampled_from("xyz")),
        min_size=2,
        max_size=30,
    ),
    st.booleans(),
    st.sampled_from([0.05, 0.2, 1.0, 5.0]),
    st.sampled_from([1, 2]),
)
def test_every_offer_sharing_a_word_gets_a_candidate(rows, link, comparisons, best):
    """Whatever the purging leaves, an offer that shares a token with an offer it may be
    paired with gets a candidate (its best pair is kept whatever the budget), and a smaller
    budget keeps a prefix of a larger one's ranking (the study's sweep)."""
    offers = _two_shops([(shop, " ".join(words)) for words, shop in rows])
    tokens = offer_tokens(offers)
    n = len(rows)
    shops = offers.shops
    pairable = [
        any(
            j != i and tokens[i] & tokens[j] and not (link and shops[i] == shops[j])
            for j in range(n)
        )
        for i in range(n)
    ]
    left, right, w, stats = token_blocking(
        offers,
        per_offer=0.5,
        comparisons=comparisons,
        link=link,
        best_per_offer=best,
        tokens=tokens,
    )
    paired = set(left.tolist()) | set(right.tolist())
    assert paired == {i for i in range(n) if pairable[i]}
    assert stats.offers_without_candidates == n - sum(pairable)
    assert all(tokens[a] & tokens[b] for a, b in zip(left.tolist(), right.tolist()))
    assert np.all((w > 0) & (w <= 1))
    # the budget: only each offer's best pairs may go beyond it
    assert stats.candidates <= max(0.5 * n, best * n)
    # budgets are prefixes of one ranking, fallback pairs included
    big = token_blocking(
        offers, per_offer=40, comparisons=comparisons, link=link, best_per_offer=best, tokens=tokens
    )
    for budget in (0.5, 2.0, 10.0):
        small = token_blocking(
            offers,
            per_offer=budget,
            comparisons=comparisons,
            link=link,
            best_per_offer=best,
            tokens=tokens,
        )
        m = budget_masks(big[0], big[1], big[2], n, [budget], best)[0]
        assert big[0][m].tolist() == small[0].tolist()
        assert big[1][m].tolist() == small[1].tolist()


def test_model_number_stems_join_suffixed_spellings():
    offers = _offers(
        [
            "Asus VS247H-P 23.6-Inch LED Monitor",
            "Asus VS247H LCD",
            'Dell E178FPb 17" LCD',
            "Dell UltraSharp E178FP monitor",
            "Nikon D7000 body",
            "LG 46-inch 1080p TV",
        ]
    )
    tokens = offer_tokens(offers)
    assert "vs247" in tokens[0] and "vs247" in tokens[1]  # vs247hp and vs247h
    assert "e178" in tokens[2] and "e178" in tokens[3]  # e178fpb and e178fp
    # no stem for a word ending in a digit, nor a bare number out of a measurement
    assert tokens[4] == {"nikon", "d7000", "body"}
    assert tokens[5] == {"lg", "46inch", "1080p", "tv"}
    assert "vs247" not in offer_tokens(offers, stems=False)[0]
    left, right, _, _ = token_blocking(offers, per_offer=0.5, best_per_offer=1)
    assert {(0, 1), (2, 3)} <= set(zip(left.tolist(), right.tolist()))
