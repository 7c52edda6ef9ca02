"""Text preparation: normalisation and shingling (``Shingles`` in CSR layout)."""

from .normalize import NormalizedBatch, normalize, normalize_text
from .shingle import Shingles, shingle, shingle_batch

__all__ = ["NormalizedBatch", "normalize", "normalize_text", "Shingles", "shingle", "shingle_batch"]
