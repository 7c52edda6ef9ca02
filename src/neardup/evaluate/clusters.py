"""Clusters against a reference list of duplicates (precision, recall and F1 over pairs), and
the clustering baseline the FCA method was compared with (CLUTO's repeated-bisecting k-means,
here scikit-learn's ``BisectingKMeans`` on TF-IDF vectors with cosine similarity). The
reference is read by :func:`.truth.read_reference`."""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from ..validate import check_int

# the reference duplicates are read by the one reader of truth files
from .truth import pairs_of_groups as pairs_of_groups
from .truth import read_reference as read_reference


def pair_scores(
    predicted: set[tuple[int, int]], reference: set[tuple[int, int]]
) -> dict[str, float | int]:
    """Precision, recall and F1 of predicted duplicate pairs against reference pairs."""
    correct = len(predicted & reference)
    p = correct / len(predicted) if predicted else 0.0
    r = correct / len(reference) if reference else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {
        "precision": round(p, 4),
        "recall": round(r, 4),
        "f1": round(f, 4),
        "predicted_pairs": len(predicted),
        "reference_pairs": len(reference),
        "correct_pairs": correct,
    }


def bisecting_kmeans(
    texts: Sequence[str], n_clusters: int, seed: int = 0
) -> tuple[np.ndarray, float]:
    """Repeated-bisecting k-means (CLUTO's ClusterRB stand-in) on L2-normalised TF-IDF vectors,
    where Euclidean distance ranks like cosine similarity. Returns labels and seconds."""
    from .._extras import require

    require("sklearn", "fca", "the k-means comparison")
    from sklearn.cluster import BisectingKMeans
    from sklearn.feature_extraction.text import TfidfVectorizer

    check_int(
        "n_clusters",
        n_clusters,
        2,
        len(texts),
        allowed=f"an integer from 2 to the number of documents ({len(texts)})",
    )
    t0 = time.perf_counter()
    x = TfidfVectorizer(sublinear_tf=True).fit_transform(texts)
    labels = BisectingKMeans(
        n_clusters=n_clusters, random_state=seed, n_init=1, bisecting_strategy="largest_cluster"
    ).fit_predict(x)
    return labels, time.perf_counter() - t0
