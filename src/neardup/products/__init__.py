"""Duplicate product offers across web shops (the MSM/MSMP family of methods, LSH over
title model words, with a learned matcher).

Offers and their loaders (:mod:`.offers`), title cleaning, unit
normalisation and model words (:mod:`.modelwords`), LSH candidates over model-word sets, blocking
on rare model words, model-number prefixes and a learned brand with the main unit, the
PC / PQ / F1* measures of candidate sets and a banding sweep (:mod:`.candidates`); the pair
matcher (:mod:`.matcher`), the bootstrap study (:mod:`.study`), the generic loader
(:mod:`.loaders`), ground truth that may be partial and scoring against it (:mod:`.truth`). The
jobs behind ``neardup products`` are :mod:`neardup.jobs.products`.
"""

from .candidates import (
    blocking_candidates,
    candidate_quality,
    learn_brands,
    lsh_candidates,
    main_unit,
    model_word_sets,
    offer_brands,
    sweep,
    true_pairs,
)
from .modelwords import (
    DEFAULT_UNITS,
    TITLE_MODEL_WORD,
    UnitMap,
    clean_text,
    model_ids,
    title_model_words,
    value_model_words,
)
from .offers import Offers, load_tv_json
from .truth import Truth, candidate_quality_known, load_truth, score_pairs

__all__ = [
    "DEFAULT_UNITS",
    "TITLE_MODEL_WORD",
    "UnitMap",
    "clean_text",
    "model_ids",
    "title_model_words",
    "value_model_words",
    "Offers",
    "load_tv_json",
    "candidate_quality",
    "lsh_candidates",
    "model_word_sets",
    "sweep",
    "true_pairs",
    "blocking_candidates",
    "learn_brands",
    "main_unit",
    "offer_brands",
    "Truth",
    "load_truth",
    "score_pairs",
    "candidate_quality_known",
]
