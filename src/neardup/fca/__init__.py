"""Near-duplicate clusters by Formal Concept Analysis: each document's image (its smallest
shingle hashes), an inverted table of the hashes, and maximal frequent itemsets as
clusters of documents that share at least ``min_common`` hashes. :func:`fca` runs it on texts;
:func:`~neardup.jobs.fca.fca_files` is ``neardup fca`` (files in, clusters and an evaluation
out)."""

from .core import (
    FCACluster,
    FCAResult,
    default_min_common,
    document_images,
    fca,
    fca_clusters,
    inverted_table,
)

__all__ = [
    "FCACluster",
    "FCAResult",
    "document_images",
    "inverted_table",
    "fca_clusters",
    "fca",
    "default_min_common",
]
