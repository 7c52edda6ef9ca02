"""Pair expansion: the verified pairs of distinct texts carried to the pairs table of every
document (with the pairs their exact-duplicate groups imply). :func:`expand_pairs` is the step
the local engine runs; the Dask engine runs its parts (:func:`within_pairs`,
:func:`cross_pairs`) where the groups are held. The arithmetic is :mod:`neardup.expand`'s."""

from __future__ import annotations

from ..expand import PairCounts, cross_pairs, expand_pairs, ranges, within_pairs

__all__ = ["PairCounts", "expand_pairs", "within_pairs", "cross_pairs", "ranges"]
