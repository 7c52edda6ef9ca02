"""Duplicate product offers across web shops (seed 000 and the MSM/MSMP family of methods).

Work in progress (issue 4): offers and their loaders (:mod:`.offers`), title cleaning, unit
normalisation and model words (:mod:`.modelwords`). Candidate generation, the matcher, the
bootstrap study and the ``neardup products`` commands follow.
"""

from .modelwords import (
    DEFAULT_UNITS,
    TITLE_MODEL_WORD,
    UnitMap,
    clean_text,
    title_model_words,
    value_model_words,
)
from .offers import Offers, load_tv_json

__all__ = [
    "DEFAULT_UNITS", "TITLE_MODEL_WORD", "UnitMap", "clean_text", "title_model_words",
    "value_model_words", "Offers", "load_tv_json",
]
