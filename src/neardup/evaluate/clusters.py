"""Clusters against a reference list of duplicates (precision, recall and F1 over pairs), and
the clustering baseline the FCA method was compared with (CLUTO's repeated-bisecting k-means,
here scikit-learn's ``BisectingKMeans`` on TF-IDF vectors with cosine similarity)."""

from __future__ import annotations

import csv
import io
import itertools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..cluster import connected_components
from ..errors import InputError, SkipReason
from ..validate import check_int

# column pairs that name two duplicate documents, in the order they are looked for
_PAIR_FIELDS = (
    ("id_a", "id_b"),
    ("a", "b"),
    ("left", "right"),
    ("id", "source_id"),
    ("id", "source"),
    ("id", "duplicate_of"),
)


def pairs_of_groups(labels: Sequence[Any]) -> set[tuple[int, int]]:
    """Every pair of rows with the same label (``None`` labels pair with nothing)."""
    groups: dict[Any, list[int]] = {}
    for i, g in enumerate(labels):
        if g is not None:
            groups.setdefault(g, []).append(i)
    return {(a, b) for rows in groups.values() for a, b in itertools.combinations(rows, 2)}


def read_reference(
    path: str | Path, ids: Sequence[str], closure: bool = True
) -> tuple[set[tuple[int, int]], dict[str, int]]:
    """Reference duplicates from a JSONL or CSV file: rows naming two duplicate documents
    (``id_a,id_b``, ``a,b``, ``left,right`` or ``id,source_id``) or a cluster label per document
    (``id,cluster``). Returns row pairs ``(a, b)``, ``a < b``, and counts of rows naming unknown
    ids (skipped and counted). With ``closure`` (default) documents linked through others are
    duplicates too (all pairs within each connected group), as copies of one source are."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(
            f"cannot read: {e.strerror}", path=str(path), reason=SkipReason.MISSING_PATH
        ) from e
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8 at byte {e.start}", path=str(path), reason=SkipReason.UNDECODABLE
        ) from e
    rows: list[tuple[int, dict]] = []
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        for i, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise InputError(
                    f"malformed JSON: {e}", path=str(path), line=i, reason=SkipReason.MALFORMED_JSON
                ) from e
            if not isinstance(rec, dict):
                raise InputError(
                    "expected a JSON object", path=str(path), line=i, reason=SkipReason.NOT_OBJECT
                )
            rows.append((i, rec))
    else:
        reader = csv.DictReader(io.StringIO(text))
        rows = [(i, r) for i, r in enumerate(reader, start=2)]
    if not rows:
        raise InputError("no reference rows", path=str(path), reason=SkipReason.EMPTY_FILE)
    keys = set(rows[0][1])
    row_of = {x: i for i, x in enumerate(ids)}
    counts = {"rows": len(rows), "unknown_id": 0}
    if "cluster" in keys and "id" in keys:
        labels: list[Any] = [None] * len(ids)
        for _, r in rows:
            doc = row_of.get(str(r.get("id")))
            if doc is None:
                counts["unknown_id"] += 1
                continue
            labels[doc] = str(r.get("cluster"))
        return pairs_of_groups(labels), counts
    fields = next((f for f in _PAIR_FIELDS if f[0] in keys and f[1] in keys), None)
    if fields is None:
        raise InputError(
            f"columns {sorted(keys)} name no pair of documents: use id_a,id_b "
            "(or a,b / left,right / id,source_id) or id,cluster",
            path=str(path),
            line=rows[0][0],
            reason=SkipReason.MISSING_FIELD,
        )
    links = []
    for _, r in rows:
        a, b = row_of.get(str(r.get(fields[0]))), row_of.get(str(r.get(fields[1])))
        if a is None or b is None:
            counts["unknown_id"] += 1
            continue
        if a != b:
            links.append((min(a, b), max(a, b)))
    if not closure:
        return set(links), counts
    left = np.fromiter((a for a, _ in links), np.int64, len(links))
    right = np.fromiter((b for _, b in links), np.int64, len(links))
    return pairs_of_groups(connected_components(len(ids), left, right).tolist()), counts


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
