"""Schema-agnostic candidate pairs of offers: token blocking with meta-blocking.

Model-word LSH (:mod:`.candidates`) finds duplicates that share model words; on catalogues whose
titles often hold none, or whose popular products have dozens of listings, it either misses
them or proposes most pairs of a category. Token blocking looks at every title token instead,
and keeps a fixed budget of the most promising pairs:

1. **Tokens.** Each offer's cleaned title words (:func:`.modelwords.clean_text`), the first
   ``prefix_len`` characters of its long model words (``un46es6580fxza`` and ``un46es6580``
   share ``p:un46es6``), and optionally the words of attributes that name a model number
   (``model_keys``).
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

With ``link``, pairs of offers from one source are never formed (two catalogues, or a feed
against a master catalogue), so the whole budget goes to pairs across sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ..validate import check_int, check_real
from .modelwords import TITLE_MODEL_WORD, UnitMap, clean_text
from .offers import Offers

__all__ = ["BlockingStats", "budget_masks", "offer_tokens", "squared_token_weights", "title_cosine",
           "token_blocking"]

#: pairs generated per block at once (bounds the memory of the pair enumeration)
_CHUNK_PAIRS = 2_000_000


@dataclass
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
    #: offers in no candidate pair: every word they share with another offer (of another
    #: source, with ``link``) was purged as too common, or they share none
    offers_without_candidates: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def offer_tokens(offers: Offers, units: UnitMap | None = None, prefix_len: int = 7,
                 model_keys: Sequence[str] = ()) -> list[set[str]]:
    """Each offer's blocking tokens (module docstring, step 1). ``model_keys``: attributes
    whose name contains one of these (case-insensitive) add their words."""
    keys = tuple(k.lower() for k in model_keys)
    out = []
    for title, attrs in zip(offers.titles, offers.attributes):
        toks = set(clean_text(title, units).split())
        for k, v in attrs.items():
            if any(m in k.lower() for m in keys):
                toks.update(clean_text(v, units).split())
        toks.discard("")
        if prefix_len:
            toks.update(["p:" + w[:prefix_len] for w in toks
                         if len(w) > prefix_len and TITLE_MODEL_WORD.fullmatch(w)])
        out.append(toks)
    return out


def token_blocking(offers: Offers, *, per_offer: float = 10.0, comparisons: float = 100.0,
                   model_word_boost: float = 3.0, best_per_offer: int = 1, link: bool = False,
                   units: UnitMap | None = None, prefix_len: int = 7,
                   tokens: list[set[str]] | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, BlockingStats]:
    """Candidate pairs by token blocking and meta-blocking (module docstring).

    Returns ``left, right`` (``int64``, ``left < right``, sorted), the pairs' weights
    (``float64``, in [0, 1]) and :class:`BlockingStats`. ``per_offer``: candidate pairs per
    offer on average (at most); ``comparisons``: pairs per offer enumerated at most before
    pruning (the block-purging bound); ``tokens``: the offers' tokens, if already made
    (:func:`offer_tokens`)."""
    check_real("per_offer", per_offer, 0.0, None, lo_open=True)
    check_real("comparisons", comparisons, 0.0, None, lo_open=True)
    check_real("model_word_boost", model_word_boost, 0.0, None)
    check_int("best_per_offer", best_per_offer, 0)
    n = len(offers)
    stats = BlockingStats(offers=n)
    if tokens is None:
        tokens = offer_tokens(offers, units, prefix_len)
    vocab: dict[str, int] = {}
    rows_l: list[int] = []
    cols_l: list[int] = []
    for i, toks in enumerate(tokens):
        for t in toks:
            cols_l.append(vocab.setdefault(t, len(vocab)))
            rows_l.append(i)
    stats.tokens = len(vocab)
    if n < 2 or not vocab:
        return _no_pairs(stats)
    rows = np.asarray(rows_l, np.int64)
    cols = np.asarray(cols_l, np.int64)
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
    m = keep[cols]
    rows, cols = rows[m], cols[m]
    order = np.lexsort((rows, cols))
    rows, cols = rows[order], cols[order]
    if len(rows) == 0:
        return _no_pairs(stats)
    starts = np.flatnonzero(np.r_[True, cols[1:] != cols[:-1]])
    sizes = np.diff(np.r_[starts, len(cols)])
    source = (np.unique(np.asarray(offers.shops, dtype=object), return_inverse=True)[1]
              if link else None)

    # every pair of every block, with the block's token weight
    lefts, rights, ws = [], [], []
    for s in np.unique(sizes).tolist():
        blocks = starts[sizes == s]
        iu, ju = np.triu_indices(s, 1)
        step = max(1, _CHUNK_PAIRS // len(iu))
        for c in range(0, len(blocks), step):
            b = blocks[c:c + step]
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
        return _no_pairs(stats)
    key = np.minimum(a, z) * n + np.maximum(a, z)
    del a, z
    pair, inv = np.unique(key, return_inverse=True)
    dot = np.bincount(inv, weights=np.concatenate(ws))
    del key, inv, ws
    left, right = pair // n, pair % n
    sim = dot / (norm[left] * norm[right])
    stats.co_occurring = len(pair)

    chosen = budget_masks(left, right, sim, n, [per_offer], best_per_offer)[0]
    left, right, sim = left[chosen], right[chosen], sim[chosen]
    stats.candidates = len(left)
    stats.candidates_per_offer = len(left) / n
    paired = np.zeros(n, bool)
    paired[left] = paired[right] = True
    stats.offers_without_candidates = int(n - paired.sum())
    return left, right, np.minimum(sim, 1.0), stats


def budget_masks(left: np.ndarray, right: np.ndarray, sim: np.ndarray, n: int,
                 budgets: Sequence[float], best_per_offer: int = 1) -> list[np.ndarray]:
    """The pruning of :func:`token_blocking` (module docstring, step 4) at each budget of
    ``budgets`` candidate pairs per offer: ``bool`` per pair, kept or not. Each offer's
    ``best_per_offer`` best-weighted pairs, then the best pairs overall up to ``budget * n``:
    one ranking, so a smaller budget keeps a subset of a larger one's pairs, and pruning the
    pairs :func:`token_blocking` kept at a larger budget gives what it keeps at a smaller one."""
    best = (_best_of_each(left, right, sim, best_per_offer) if best_per_offer
            else np.zeros(len(left), bool))
    others = np.flatnonzero(~best)
    ranked = others[np.argsort(-sim[others], kind="stable")]
    out = []
    for budget in budgets:
        chosen = best.copy()
        chosen[ranked[:max(0, int(budget * n) - int(best.sum()))]] = True
        out.append(chosen)
    return out


def _no_pairs(stats: BlockingStats
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, BlockingStats]:
    stats.offers_without_candidates = stats.offers
    empty = np.zeros(0, np.int64)
    return empty, empty, np.zeros(0), stats


def _token_weights(names: list[str], df: np.ndarray, n: int, boost: float) -> np.ndarray:
    """Each token's weight: ``log(1 + n / df)``, ``1 + boost`` times more for a model word."""
    is_mw = np.fromiter((TITLE_MODEL_WORD.fullmatch(t.removeprefix("p:")) is not None
                         for t in names), bool, len(names))
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


def squared_token_weights(tokens: list[set[str]], model_word_boost: float = 3.0
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
    squared = _token_weights(names, np.fromiter(df.values(), np.int64, len(df)), n,
                             model_word_boost) ** 2
    return dict(zip(names, squared.tolist()))


def title_cosine(tokens: list[set[str]], left: np.ndarray, right: np.ndarray,
                 model_word_boost: float = 3.0) -> np.ndarray:
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

