"""Schema-agnostic candidate pairs of offers: token blocking with meta-blocking.

Model-word LSH (:mod:`.candidates`) finds duplicates that share model words; on catalogues whose
titles often hold none, or whose popular products have dozens of listings, it either misses
them or proposes most pairs of a category. Token blocking looks at every title token instead,
and keeps a fixed budget of the most promising pairs:

1. **Tokens.** Each offer's cleaned title words (:func:`.modelwords.clean_text`), the first
   ``prefix_len`` characters of its long model words (``un46es6580fxza`` and ``un46es6580``
   share ``p:un46es6``), the stem of each model word that ends in letters (the word cut after
   its last digit: ``vs247hp``, ``vs247h`` and ``vs247`` share ``vs247``, ``e178fpb`` and
   ``e178fp`` share ``e178``), and optionally the words of attributes that name a model
   number (``model_keys``).
   Model-number attributes add nothing by default (on some catalogues such fields hold long
   free text that ties unrelated offers together).
2. **Block purging.** Every token is a block of the offers that have it. Tokens are taken from
   the rarest up, and the commonest ones (``camera``, ``the``, a shop's name in its titles) are
   left out from the point where the pairs of all blocks so far would exceed ``comparisons``
   pairs per offer: the cost is bounded whatever the data.
3. **Weights.** A pair of offers that share blocks gets the cosine of their token weights,
   where a token weighs its inverse document frequency ``log(1 + n / df)``, ``model_word_boost``
   times more for a model word (a token with letters and digits:
   :data:`.modelwords.TITLE_MODEL_WORD`): offers that share a rare model number score close to 1, offers that share only
   common words close to 0. Its normalisation keeps long titles from pairing with everything.
4. **Pruning.** Every offer keeps its best-weighted pair (``best_per_offer``), and the pairs with
   the highest weights overall fill a budget of ``per_offer`` pairs per offer (cardinality edge
   pruning): an offer of a popular product, whose tokens are shared by many, keeps many pairs,
   an offer with nothing in common with the rest keeps few.
5. **Fallback** (before the pruning). An offer in no pair of the kept blocks (every word it
   shares with another offer was purged as too common: two catalogues that share only a brand
   and a kind of product) is compared instead with the offers of its rarest shared block (the
   one with the fewest offers it may be paired with); of a block of more than ``comparisons``
   such offers, those that also hold its next rarest tokens (rarest first, a token none of
   them holds skipped), and of those still the first ``comparisons``. Each pair is weighted by
   the cosine of the two offers' token weights over the tokens they share, and is pruned with
   the others: the offer keeps its best one, the rest compete for the budget. The work stays
   bounded: at most ``comparisons`` offers are compared per such offer, never a purged
   block's pairs (``fallback=False``: no fallback).

6. **MinHash LSH** (``lsh=(bands, rows)``, off by default; before the pruning). The offers'
   title and description tokens (those held by at least two offers) are sketched with
   neardup's MinHash and banded with its LSH (:func:`lsh_pairs`): offers whose token sets
   are alike but share only purged blocks become pairs too, weighted like the fallback's
   (the cosine over all the tokens they share), and compete for the same budget, which
   still bounds the output. On the shared catalogues it adds few true pairs that pruning
   keeps (``docs/products.md``): it is an option, not the default.

With ``link``, pairs of offers from one source are never formed (two catalogues, or a feed
against a master catalogue), so the whole budget goes to pairs across sources.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
from xxhash import xxh3_64_intdigest

from .._arrays import sorted_unique
from .._records import record
from ..config import SketchConfig
from ..errors import ConfigError
from ..lsh import candidate_pairs
from ..sketch import sketch
from ..text.shingle import Shingles
from ..validate import check_int, check_real
from .modelwords import TITLE_MODEL_WORD, UnitMap, clean_text
from .offers import Offers

__all__ = [
    "BlockingStats",
    "budget_masks",
    "lsh_pairs",
    "offer_tokens",
    "squared_token_weights",
    "title_cosine",
    "token_blocking",
]

#: pairs generated per block at once (bounds the memory of the pair enumeration)
_CHUNK_PAIRS = 2_000_000


@record
class BlockingStats:
    """What :func:`token_blocking` did, for a run's summary."""

    offers: int = 0
    tokens: int = 0
    #: tokens shared by at least two offers and kept as blocks (the rest were purged)
    blocks: int = 0
    #: the largest block kept: tokens of more offers were purged
    max_block: int = 0
    #: distinct pairs that share at least one kept block (with ``link``: across sources)
    co_occurring: int = 0
    candidates: int = 0
    candidates_per_offer: float = 0.0
    #: offers in no candidate pair: they share no word with another offer (of another
    #: source, with ``link``), or (``fallback=0``) every word they share was purged as too
    #: common
    offers_without_candidates: int = 0
    #: offers in no pair of the kept blocks that got pairs with their nearest offers of their
    #: rarest purged block instead (step 5 of the module docstring)
    fallback_offers: int = 0
    #: of the candidates, the pairs found that way
    fallback_candidates: int = 0
    #: pairs proposed by MinHash LSH over the offers' tokens (``lsh``) that share no kept
    #: block (with ``link``: across sources), before the pruning
    lsh_pairs: int = 0
    #: of the candidates, the pairs found only that way
    lsh_candidates: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def _token_columns(tokens: list[set[str]]) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """The offers' tokens as a sparse matrix: ``rows`` (offer) and ``cols`` (token number),
    ``int64``, and the token numbers by token. Tokens are numbered in order of first
    appearance, each offer's in sorted order: a set's order changes with the process's string
    hashing, and with it the order of tied candidates, which decides ties downstream (the
    mutually best pair per shop), so the same input would give other outputs."""
    vocab: dict[str, int] = {}
    rows_l: list[int] = []
    cols_l: list[int] = []
    for i, toks in enumerate(tokens):
        for t in sorted(toks):
            cols_l.append(vocab.setdefault(t, len(vocab)))
            rows_l.append(i)
    return np.asarray(rows_l, np.int64), np.asarray(cols_l, np.int64), vocab


def offer_tokens(
    offers: Offers,
    units: UnitMap | None = None,
    prefix_len: int = 7,
    model_keys: Sequence[str] = (),
    descriptions: bool = False,
    stems: bool = True,
) -> list[set[str]]:
    """Each offer's blocking tokens (module docstring, step 1). ``model_keys``: attributes
    whose name contains one of these (case-insensitive) add their words; ``descriptions``:
    the words of the offer's description too; ``stems``: the stem of each model word that
    ends in letters (:func:`_stem`)."""
    keys = tuple(k.lower() for k in model_keys)
    descs = (
        offers.descriptions
        if descriptions and len(offers.descriptions) == len(offers)
        else [""] * len(offers)
    )
    out = []
    for title, attrs, desc in zip(offers.titles, offers.attributes, descs):
        toks = set(clean_text(title, units).split())
        if desc:
            toks.update(clean_text(desc, units).split())
        for k, v in attrs.items():
            if any(m in k.lower() for m in keys):
                toks.update(clean_text(v, units).split())
        toks.discard("")
        if stems:
            toks.update([c for c in (_stem(w) for w in toks) if c])
        if prefix_len:
            toks.update(
                [
                    "p:" + w[:prefix_len]
                    for w in toks
                    if len(w) > prefix_len and TITLE_MODEL_WORD.fullmatch(w)
                ]
            )
        out.append(toks)
    return out


def _stem(word: str) -> str:
    """A model word's stem: the word cut after its last digit, if something other than digits
    follows it and the cut still holds a letter (``vs247hp`` -> ``vs247``, ``e178fpb`` ->
    ``e178``, ``27ea83d.aek`` -> ``27ea83``, ``mb168b+`` -> ``mb168``: shops add colour,
    region and bundle letters to a model number) and has at least 3 characters; ``""``
    otherwise (``d7000``; ``46inch`` and ``1080p``, whose cut is a bare number)."""
    m = _STEM.fullmatch(word)
    if m is None or not TITLE_MODEL_WORD.fullmatch(word):
        return ""
    cut = m.group(1)
    return cut if len(cut) >= 3 and _LETTER(cut) else ""


#: a word, its last digit, and what follows that digit (no digit)
_STEM = re.compile(r"(.*\d)[^\d]+")
_LETTER = re.compile(r"[a-z]").search


def token_blocking(
    offers: Offers,
    *,
    per_offer: float = 10.0,
    comparisons: float = 100.0,
    model_word_boost: float = 3.0,
    best_per_offer: int = 1,
    link: bool = False,
    units: UnitMap | None = None,
    prefix_len: int = 7,
    tokens: list[set[str]] | None = None,
    fallback: bool = True,
    lsh: tuple[int, int] | None = None,
    lsh_bucket_cap: int | None = None,
    lsh_seed: int = 1,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, BlockingStats]:
    """Candidate pairs by token blocking and meta-blocking (module docstring).

    Returns ``left, right`` (``int64``, ``left < right``, sorted), the pairs' weights
    (``float64``, in [0, 1]) and :class:`BlockingStats`. ``per_offer``: candidate pairs per
    offer on average (at most); ``comparisons``: pairs per offer enumerated at most before
    pruning (the block-purging bound), and offers compared per offer in no pair of the kept
    blocks (step 5, ``fallback``); ``tokens``: the offers' tokens, if already made
    (:func:`offer_tokens`). ``lsh=(bands, rows)``: also the pairs that MinHash LSH over the
    offers' tokens proposes (step 6; the tokens made here then hold the description words
    too), with buckets of more than ``lsh_bucket_cap`` offers linked as stars (default
    ``2 * comparisons // bands``, at least 2: the LSH enumerates at most about
    ``comparisons`` pairs per offer, as the kept blocks do)."""
    check_real("per_offer", per_offer, 0.0, None, lo_open=True)
    check_real("comparisons", comparisons, 0.0, None, lo_open=True)
    check_real("model_word_boost", model_word_boost, 0.0, None)
    check_int("best_per_offer", best_per_offer, 0)
    n = len(offers)
    stats = BlockingStats(offers=n)
    if lsh is not None:
        if (
            not isinstance(lsh, tuple)
            or len(lsh) != 2
            or not all(isinstance(x, int) and x >= 1 for x in lsh)
        ):
            raise ConfigError(f"lsh: expected (bands, rows), two positive integers, got {lsh!r}")
        if lsh_bucket_cap is not None:
            check_int("lsh_bucket_cap", lsh_bucket_cap, 2)
    if tokens is None:
        tokens = offer_tokens(offers, units, prefix_len, descriptions=lsh is not None)
    rows, cols, vocab = _token_columns(tokens)
    stats.tokens = len(vocab)
    if n < 2 or not vocab:
        return _no_pairs(stats)
    df = np.bincount(cols, minlength=len(vocab))
    weight = _token_weights(list(vocab), df, n, model_word_boost)
    norm = np.sqrt(np.bincount(rows, weights=weight[cols] ** 2, minlength=n))

    # block purging: the rarest tokens first, until their pairs exceed the budget
    shared = np.sort(df[df >= 2])
    if len(shared) == 0:
        return _no_pairs(stats)
    cum = np.cumsum(shared * (shared - 1) / 2)
    last = int(np.searchsorted(cum, comparisons * n, side="right")) - 1
    cap = int(shared[last]) if last >= 0 else 1
    keep = (df >= 2) & (df <= cap)
    stats.blocks = int(keep.sum())
    stats.max_block = cap if last >= 0 else 0
    source = _source_codes(offers.shops) if link else None
    left, right, sim = _co_occurring(rows, cols, keep, weight, norm, source, n)
    stats.co_occurring = len(left)

    # the other sources of pairs: 0 co-occurring, 1 fallback, 2 LSH (a pair found by several
    # keeps the first: the same weight but for co-occurring pairs, weighed on kept tokens)
    parts = [(left, right, sim)]
    if fallback:
        fl, fr, fs, stats.fallback_offers = _fallback(
            rows, cols, df, weight, norm, source, n, left, right, math.ceil(comparisons)
        )
        parts.append((fl, fr, fs))
    if lsh is not None:
        bands, band_rows = lsh
        cap = (
            lsh_bucket_cap if lsh_bucket_cap is not None else max(2, int(2 * comparisons // bands))
        )
        ll, lr = _lsh_columns(
            rows, cols, list(vocab), df, n, bands, band_rows, cap, lsh_seed, source
        )
        new = ~_sorted_member(ll * n + lr, left * n + right)
        ll, lr = ll[new], lr[new]
        stats.lsh_pairs = len(ll)
        okey = np.sort(rows * len(vocab) + cols)
        ls = _cosines(okey, len(vocab), weight**2, norm, ll, lr) if len(ll) else np.zeros(0)
        parts.append((ll, lr, ls))
    if len(parts) > 1:
        key = np.concatenate([a * n + z for a, z, _ in parts])
        tag = np.concatenate([np.full(len(a), k, np.int8) for k, (a, _, _) in enumerate(parts)])
        sim = np.concatenate([w for _, _, w in parts])
        key, first = np.unique(key, return_index=True)  # the first of equal keys: lowest tag
        left, right, sim, tag = key // n, key % n, sim[first], tag[first]
    else:
        tag = np.zeros(len(left), np.int8)
    if len(left) == 0:
        return _no_pairs(stats)

    chosen = budget_masks(left, right, sim, n, [per_offer], best_per_offer)[0]
    left, right, sim = left[chosen], right[chosen], sim[chosen]
    stats.candidates = len(left)
    stats.candidates_per_offer = len(left) / n
    kept = tag[chosen]
    stats.fallback_candidates = int((kept == 1).sum())
    stats.lsh_candidates = int((kept == 2).sum())
    paired = np.zeros(n, bool)
    paired[left] = paired[right] = True
    stats.offers_without_candidates = int(n - paired.sum())
    return left, right, np.minimum(sim, 1.0), stats


def _co_occurring(
    rows: np.ndarray,
    cols: np.ndarray,
    keep: np.ndarray,
    weight: np.ndarray,
    norm: np.ndarray,
    source: np.ndarray | None,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every distinct pair of offers that share a kept block (across sources with ``source``),
    sorted, and its cosine over the kept tokens the two share (module docstring, steps 2-3)."""
    m = keep[cols]
    rows, cols = rows[m], cols[m]
    order = np.lexsort((rows, cols))
    rows, cols = rows[order], cols[order]
    empty = np.zeros(0, np.int64)
    if len(rows) == 0:
        return empty, empty, np.zeros(0)
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    sizes = np.diff(np.r_[starts, len(cols)])

    # every pair of every block, with the block's token weight
    lefts, rights, ws = [empty], [empty], [np.zeros(0)]
    for s in sorted_unique(sizes).tolist():
        blocks = starts[sizes == s]
        iu, ju = np.triu_indices(s, 1)
        if len(iu) == 0:
            continue
        step = max(1, _CHUNK_PAIRS // len(iu))
        for c in range(0, len(blocks), step):
            b = blocks[c : c + step]
            members = rows[b[:, None] + np.arange(s)[None, :]]
            a, z = members[:, iu].ravel(), members[:, ju].ravel()
            w = np.repeat(weight[cols[b]] ** 2, len(iu))
            if source is not None:
                cross = source[a] != source[z]
                a, z, w = a[cross], z[cross], w[cross]
            lefts.append(a)
            rights.append(z)
            ws.append(w)
    a = np.concatenate(lefts)
    z = np.concatenate(rights)
    if len(a) == 0:
        return empty, empty, np.zeros(0)
    key = np.minimum(a, z) * n + np.maximum(a, z)
    del a, z
    pair, inv = np.unique(key, return_inverse=True)
    dot = np.bincount(inv, weights=np.concatenate(ws))
    del key, inv, ws
    left, right = pair // n, pair % n
    return left, right, dot / (norm[left] * norm[right])


def _fallback(
    rows: np.ndarray,
    cols: np.ndarray,
    df: np.ndarray,
    weight: np.ndarray,
    norm: np.ndarray,
    source: np.ndarray | None,
    n: int,
    left: np.ndarray,
    right: np.ndarray,
    limit: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Pairs for the offers in no co-occurring pair (module docstring, step 5): each such offer
    that shares a token with an offer it may be paired with is compared with at most ``limit``
    of them, taken from its rarest shared block (the one with the fewest such offers) and, if
    that holds more than ``limit``, narrowed to those that also hold its next rarest tokens
    (rarest first, a token none of them holds skipped; still too many: the first ``limit``),
    each pair weighted by the cosine of the two offers' token weights over all the tokens they
    share (all purged). Returns ``left < right`` (not sorted, distinct, none co-occurring), the
    pairs' cosines, and the number of offers so paired."""
    empty = np.zeros(0, np.int64)
    alone = np.ones(n, bool)
    alone[left] = alone[right] = False
    if not alone.any():
        return empty, empty, np.zeros(0), 0
    nv = len(df)
    # the offers' tokens as sorted keys offer * nv + token (membership by binary search), and
    # each token's offers in ascending order (its block)
    okey = np.sort(rows * nv + cols)
    by_token = np.lexsort((rows, cols))
    post_rows = rows[by_token]
    post_start = np.r_[0, np.cumsum(np.bincount(cols, minlength=nv))]
    if source is not None:
        # offers of each (token, source): a block's members of the offer's own source
        ts, ts_count = np.unique(cols * (source.max() + 1) + source[rows], return_counts=True)
    sq = weight**2
    memo: dict[tuple, np.ndarray] = {}
    fl, fr = [], []
    for o in np.flatnonzero(alone).tolist():
        toks = okey[np.searchsorted(okey, o * nv) : np.searchsorted(okey, (o + 1) * nv)] - o * nv
        if source is None:
            pairable = df[toks] - 1
        else:
            own = ts_count[np.searchsorted(ts, toks * (source.max() + 1) + source[o])]
            pairable = df[toks] - own
        ok = pairable > 0
        if not ok.any():
            continue
        toks, pairable = toks[ok], pairable[ok]
        toks = toks[np.lexsort((toks, df[toks], pairable))]  # rarest first
        memo_key = (tuple(toks.tolist()), -1 if source is None else int(source[o]))
        cand = memo.get(memo_key)
        if cand is None:
            t1 = int(toks[0])
            cand = post_rows[post_start[t1] : post_start[t1 + 1]]
            if source is not None:
                cand = cand[source[cand] != source[o]]
            # without link the offer itself holds each of its tokens: one more in every set
            itself = int(source is None)
            for t in toks[1:].tolist():
                if len(cand) <= limit + itself:
                    break
                sub = cand[_holds(okey, cand, t, nv)]
                if len(sub) > itself:
                    cand = sub
            # the same for every offer of these tokens (and source): the first `limit` others
            cand = cand[: limit + itself]
            memo[memo_key] = cand
        cand = cand[cand != o][:limit]
        if len(cand):
            fl.append(np.full(len(cand), o, np.int64))
            fr.append(cand)
    if not fl:
        return empty, empty, np.zeros(0), 0
    a = np.concatenate(fl)
    z = np.concatenate(fr)
    # two such offers: one pair
    key = sorted_unique(np.minimum(a, z) * n + np.maximum(a, z), overwrite=True)
    a, z = key // n, key % n
    return a, z, _cosines(okey, nv, sq, norm, a, z), len(fl)


def lsh_pairs(
    tokens: list[set[str]],
    bands: int,
    rows: int,
    sources: Sequence[str] | None = None,
    bucket_cap: int = 100,
    seed: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of offers whose MinHash signatures of their token sets (:func:`offer_tokens`)
    agree on at least one of ``bands`` bands of ``rows`` values: a pair whose sets have Jaccard
    similarity ``s`` is found with probability ``1 - (1 - s ** rows) ** bands``. Tokens that
    only one offer holds are left out of the sets first (they cannot be shared; leaving them
    out raises the similarity of the offers that share the rest). A band's bucket of more than
    ``bucket_cap`` offers is linked as a star around its first offer (:mod:`neardup.lsh`), so
    the pairs are at most ``bands * n * bucket_cap / 2`` whatever the data. ``sources``: pairs
    of offers of different sources only. Returns ``left, right`` (``int64``, ``left < right``,
    sorted, distinct)."""
    check_int("bands", bands, 1)
    check_int("rows", rows, 1)
    check_int("bucket_cap", bucket_cap, 2)
    members, cols, vocab = _token_columns(tokens)
    df = np.bincount(cols, minlength=len(vocab))
    source = _source_codes(sources) if sources is not None else None
    return _lsh_columns(
        members, cols, list(vocab), df, len(tokens), bands, rows, bucket_cap, seed, source
    )


def _lsh_columns(
    rows: np.ndarray,
    cols: np.ndarray,
    names: list[str],
    df: np.ndarray,
    n: int,
    bands: int,
    band_rows: int,
    bucket_cap: int,
    seed: int,
    source: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lsh_pairs` of the offers' tokens as (offer, token) columns."""
    empty = np.zeros(0, np.int64)
    m = df[cols] >= 2
    rows, cols = rows[m], cols[m]
    if n < 2 or len(rows) == 0:
        return empty, empty
    token_hash = np.fromiter(
        (xxh3_64_intdigest(t.encode(), seed) for t in names), np.uint64, len(names)
    )
    h = token_hash[cols]
    order = np.lexsort((h, rows))
    rows, h = rows[order], h[order]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    sig = sketch(
        Shingles(h, offsets), SketchConfig(num_perm=bands * band_rows, seed=seed, scheme="classic")
    )
    has = np.flatnonzero(np.diff(offsets) > 0)
    if len(has) < 2:
        return empty, empty
    left, right, _ = candidate_pairs(sig, bands, band_rows, bucket_cap=bucket_cap, rows_subset=has)
    if source is not None:
        cross = source[left] != source[right]
        left, right = left[cross], right[cross]
    return left, right


def _source_codes(sources: Sequence[str]) -> np.ndarray:
    """A number per offer, the same for offers of the same source."""
    return np.unique(np.asarray(sources, dtype=object), return_inverse=True)[1]


def _sorted_member(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """``bool`` per key of ``keys``: it is among ``sorted_keys`` (sorted ascending)."""
    if len(sorted_keys) == 0:
        return np.zeros(len(keys), bool)
    at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[at] == keys


def _holds(okey: np.ndarray, offers: np.ndarray, token: int, nv: int) -> np.ndarray:
    """``bool`` per offer of ``offers``: it has ``token``."""
    want = offers * nv + token
    at = np.minimum(np.searchsorted(okey, want), len(okey) - 1)
    return okey[at] == want


def _cosines(
    okey: np.ndarray, nv: int, sq: np.ndarray, norm: np.ndarray, a: np.ndarray, z: np.ndarray
) -> np.ndarray:
    """The cosine of the token weights of each pair ``(a[k], z[k])`` over all their tokens
    (``sq``: each token's squared weight)."""
    out = np.zeros(len(a))
    # the tokens of a, pair by pair: each looked up among z's
    starts = np.searchsorted(okey, a * nv)
    counts = np.searchsorted(okey, (a + 1) * nv) - starts
    step = max(1, _CHUNK_PAIRS // max(1, int(counts.max())))
    for c in range(0, len(a), step):
        s, cnt = starts[c : c + step], counts[c : c + step]
        pid = np.repeat(np.arange(len(s)), cnt)
        pos = np.repeat(s - np.r_[0, np.cumsum(cnt)[:-1]], cnt) + np.arange(cnt.sum())
        tok = okey[pos] - a[c : c + step][pid] * nv
        hit = _holds(okey, z[c : c + step][pid], tok, nv)
        out[c : c + step] = np.bincount(pid[hit], weights=sq[tok[hit]], minlength=len(s))
    return out / (norm[a] * norm[z])


def budget_masks(
    left: np.ndarray,
    right: np.ndarray,
    sim: np.ndarray,
    n: int,
    budgets: Sequence[float],
    best_per_offer: int = 1,
) -> list[np.ndarray]:
    """The pruning of :func:`token_blocking` (module docstring, step 4) at each budget of
    ``budgets`` candidate pairs per offer: ``bool`` per pair, kept or not. Each offer's
    ``best_per_offer`` best-weighted pairs, then the best pairs overall up to ``budget * n``:
    one ranking, so a smaller budget keeps a subset of a larger one's pairs, and pruning the
    pairs :func:`token_blocking` kept at a larger budget gives what it keeps at a smaller one."""
    best = (
        _best_of_each(left, right, sim, best_per_offer)
        if best_per_offer
        else np.zeros(len(left), bool)
    )
    others = np.flatnonzero(~best)
    ranked = others[np.argsort(-sim[others], kind="stable")]
    out = []
    for budget in budgets:
        chosen = best.copy()
        chosen[ranked[: max(0, int(budget * n) - int(best.sum()))]] = True
        out.append(chosen)
    return out


def _no_pairs(stats: BlockingStats) -> tuple[np.ndarray, np.ndarray, np.ndarray, BlockingStats]:
    stats.offers_without_candidates = stats.offers
    empty = np.zeros(0, np.int64)
    return empty, empty, np.zeros(0), stats


def _token_weights(names: list[str], df: np.ndarray, n: int, boost: float) -> np.ndarray:
    """Each token's weight: ``log(1 + n / df)``, ``1 + boost`` times more for a model word."""
    is_mw = np.fromiter(
        (TITLE_MODEL_WORD.fullmatch(t.removeprefix("p:")) is not None for t in names),
        bool,
        len(names),
    )
    return np.log1p(n / df) * np.where(is_mw, 1.0 + boost, 1.0)


def _best_of_each(left: np.ndarray, right: np.ndarray, sim: np.ndarray, k: int) -> np.ndarray:
    """``bool`` per pair: among the ``k`` best-weighted pairs of either of its offers (ties by
    position)."""
    node = np.concatenate([left, right])
    pid = np.concatenate([np.arange(len(left)), np.arange(len(left))])
    w = np.concatenate([sim, sim])
    order = np.lexsort((pid, -w, node))
    node, pid = node[order], pid[order]
    first = np.r_[True, node[1:] != node[:-1]]
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(node)), 0))
    best = pid[np.arange(len(node)) - group_start < k]
    out = np.zeros(len(left), bool)
    out[best] = True
    return out


def squared_token_weights(
    tokens: list[set[str]], model_word_boost: float = 3.0
) -> dict[str, float]:
    """Each token's squared weight (as in :func:`token_blocking`), document frequencies over
    ``tokens``."""
    check_real("model_word_boost", model_word_boost, 0.0, None)
    n = len(tokens)
    df: dict[str, int] = {}
    for toks in tokens:
        for t in toks:
            df[t] = df.get(t, 0) + 1
    names = list(df)
    squared = (
        _token_weights(names, np.fromiter(df.values(), np.int64, len(df)), n, model_word_boost) ** 2
    )
    return dict(zip(names, squared.tolist()))


def title_cosine(
    tokens: list[set[str]], left: np.ndarray, right: np.ndarray, model_word_boost: float = 3.0
) -> np.ndarray:
    """``float64[m]``: for each pair ``(left[k], right[k])`` the cosine of the two offers'
    token weights over all the tokens they share (weights as in :func:`token_blocking`,
    document frequencies over ``tokens``, no token purged): 1 for offers with the same tokens,
    0 for offers with none in common."""
    weight = squared_token_weights(tokens, model_word_boost)
    norm = [np.sqrt(sum(weight[t] for t in toks)) for toks in tokens]
    out = np.zeros(len(left))
    for k, (a, b) in enumerate(zip(np.asarray(left).tolist(), np.asarray(right).tolist())):
        if norm[a] > 0 and norm[b] > 0:
            out[k] = sum(weight[t] for t in tokens[a] & tokens[b]) / (norm[a] * norm[b])
    return np.minimum(out, 1.0)
