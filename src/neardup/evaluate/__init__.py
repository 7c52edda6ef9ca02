"""Evaluation: pair metrics, bootstrap splits and threshold tuning (seed 000's study design)."""

from .bootstrap import bootstrap_split, pair_metrics, subset_pairs, tune_threshold

__all__ = ["bootstrap_split", "pair_metrics", "subset_pairs", "tune_threshold"]
