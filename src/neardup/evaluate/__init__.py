"""Evaluation: pair metrics, bootstrap splits and threshold tuning (a bootstrap study design:
train on the drawn items, test on the others)."""

from .bootstrap import bootstrap_split, pair_metrics, subset_pairs, tune_threshold

__all__ = ["bootstrap_split", "pair_metrics", "subset_pairs", "tune_threshold"]
