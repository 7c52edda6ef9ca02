"""Duplicate product offers across web shops (seed 000 and the MSM/MSMP family of methods).

Work in progress (issue 4): offers and their loaders (:mod:`.offers`), title cleaning, unit
normalisation and model words (:mod:`.modelwords`), LSH candidates over model-word sets, blocking
on rare model words, model-number prefixes and a learned brand with the main unit, seed 000's
PC / PQ / F1* measures and a banding sweep (:mod:`.candidates`). The matcher, the
bootstrap study, the generic loader and the ``neardup products`` commands follow.
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

__all__ = [
    "DEFAULT_UNITS", "TITLE_MODEL_WORD", "UnitMap", "clean_text", "model_ids", "title_model_words",
    "value_model_words", "Offers", "load_tv_json", "candidate_quality", "lsh_candidates",
    "model_word_sets", "sweep", "true_pairs", "blocking_candidates", "learn_brands",
    "main_unit", "offer_brands",
]
