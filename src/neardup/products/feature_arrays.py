"""The offers' word sets and descriptions coded as integer arrays for the compiled kernels: the
sorted integer sets of the plain Jaccard features (:data:`_INDEXED`, for the overlap kernel), the
arguments of the features kernel (:func:`_kernel_arrays`), and :func:`code_parts`, which codes
them once for a whole catalogue."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .descriptions import OfferDescriptions


def _seed_sets(tokens: list[set[str]], kv: list[set[str]]) -> list[set[str]]:
    return [{w for w in t if len(w) > 1} | k for t, k in zip(tokens, kv)]


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


def code_parts(parts: dict[str, list]) -> dict[str, Any]:
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
    kernel: dict[str, list[np.ndarray]] = {}
    vocab: dict[str, Any] = {}
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


def _coded(sets: Sequence[set[str]], weight: dict[str, float] | None = None) -> tuple[Any, ...]:
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
    flat: np.ndarray = (
        np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)
    )
    return flat, off
