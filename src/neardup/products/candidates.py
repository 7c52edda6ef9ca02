"""Candidate pairs of offers by MinHash LSH over their model-word sets, and how good they are.

Each offer becomes the set of its model words (title model words, and optionally the numeric
model words of its attribute values, kept apart by a prefix); the sets are hashed to 64 bits,
sketched with neardup's MinHash and banded with its LSH, exactly as documents are. Seed 000's
measures of a candidate set against the truth (:func:`candidate_quality`):

- pair completeness PC = true duplicates among the candidates / all true duplicates;
- pair quality PQ = true duplicates among the candidates / candidates;
- F1* = harmonic mean of PC and PQ;
- fraction of comparisons = candidates / (n (n - 1) / 2).

:func:`sweep` traces them over every banding ``bands x rows = num_perm`` (seed 000's Fig. 2).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xxhash import xxh3_64_intdigest

from ..config import SketchConfig
from ..lsh import candidate_pairs
from ..sketch import sketch
from ..text.shingle import Shingles
from .modelwords import UnitMap, title_model_words, value_model_words
from .offers import Offers


def model_word_sets(offers: Offers, units: UnitMap | None = None, attributes: bool = True,
                    seed: int = 0) -> Shingles:
    """Each offer's model words as a sorted set of 64-bit hashes (CSR :class:`Shingles`).

    Title model words as they are; with ``attributes``, the numeric model words of the
    attribute values too, prefixed ``"v:"`` (so ``"v:46"`` from a value is not the title word
    ``"46inch"``, but ``"v:46"`` from two offers' values is one element)."""
    sets = []
    for title, attrs in zip(offers.titles, offers.attributes):
        words = set(title_model_words(title, units))
        if attributes:
            for v in attrs.values():
                words.update("v:" + w for w in value_model_words(v, units))
        sets.append(np.unique(np.fromiter((xxh3_64_intdigest(w.encode(), seed) for w in words),
                                          np.uint64, len(words))))
    offsets = np.zeros(len(sets) + 1, np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate(sets) if sets else np.zeros(0, np.uint64)
    return Shingles(hashes.astype(np.uint64), offsets)


def lsh_candidates(sets: Shingles, bands: int, rows: int, num_perm: int | None = None,
                   seed: int = 1, scheme: str = "classic") -> tuple[np.ndarray, np.ndarray]:
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


def candidate_quality(left: np.ndarray, right: np.ndarray, labels: Sequence[str]) -> dict:
    """PC, PQ, F1* and the fraction of comparisons of the candidate pairs (module docstring)."""
    n = len(labels)
    left = np.asarray(left, np.int64)
    right = np.asarray(right, np.int64)
    lab = np.asarray(labels, dtype=object)
    cand = len(left)
    found = int(np.count_nonzero(lab[left] == lab[right])) if cand else 0
    total = len(true_pairs(labels)[0])
    pc = found / total if total else float("nan")
    pq = found / cand if cand else 0.0
    f1s = 2 * pc * pq / (pc + pq) if pc + pq > 0 else 0.0
    return {"candidates": cand, "true_found": found, "true_pairs": total, "pc": pc, "pq": pq,
            "f1_star": f1s, "fraction": cand / (n * (n - 1) / 2) if n > 1 else 0.0}


def sweep(sets: Shingles, labels: Sequence[str], num_perm: int = 120, seed: int = 1) -> list:
    """:func:`candidate_quality` for every banding with ``bands * rows == num_perm``, from one
    signature matrix, sorted by fraction of comparisons."""
    sig = sketch(sets, SketchConfig(num_perm=num_perm, seed=seed, scheme="classic"))
    has = np.flatnonzero(np.diff(sets.offsets) > 0)
    out = []
    for rows in range(1, num_perm + 1):
        if num_perm % rows:
            continue
        bands = num_perm // rows
        left, right, _ = candidate_pairs(sig, bands, rows, bucket_cap=len(has) + 1,
                                         rows_subset=has)
        out.append({"bands": bands, "rows": rows, **candidate_quality(left, right, labels)})
    return sorted(out, key=lambda r: r["fraction"])
