"""Exact ground truth for the comparison benchmark: every pair of documents whose word 5-gram
Jaccard similarity is at or above a threshold, found without sampling or hashing.

Shingles (the definition every contender of ``compare.py`` is measured against)::

    words = text.lower().split()
    shingles = {" ".join(words[i:i + 5]) for i in range(len(words) - 4)}

a non-empty text with fewer than 5 words gets one shingle (all its words joined), a text without
words gets none (and is in no pair).

How it stays exact and fast: words get dense integer ids (a dictionary), a shingle is the tuple of
its word ids (shorter shingles are padded with 0, which no word has), packed losslessly into one or
more 63-bit integers and numbered by sorting. That gives a binary document x shingle CSR matrix
``X``. Shingles found in a single document cannot contribute to an intersection, so their columns
are dropped (after the set sizes are counted). Intersections are ``X[block] @ X.T``
(row blocks to bound memory; the upper triangle is kept), unions ``|A| + |B| - |A & B|``.

    python benchmarks/groundtruth.py benchmarks/data/corpus-10000.jsonl [--threshold 0.8]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from itertools import count
from pathlib import Path

import numpy as np

K = 5


def word_shingles(text: str, k: int = K) -> set[str]:
    """The shingle set of ``text``: lowercased, whitespace-split word ``k``-grams."""
    words = text.lower().split()
    if len(words) < k:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


def _token_ids(texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Word ids (from 1) of all texts, flat, and the offsets of each text: ``int64``."""
    vocab: defaultdict[str, int] = defaultdict(count(1).__next__)
    lengths = np.zeros(len(texts), np.int64)
    parts: list[np.ndarray] = []
    for i, t in enumerate(texts):
        ids = [vocab[w] for w in t.lower().split()]
        lengths[i] = len(ids)
        parts.append(np.array(ids, np.int64))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    flat = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    return flat, offsets


def _number_rows(cols: list[np.ndarray], widths: list[int], bits: int) -> np.ndarray:
    """Dense ids (from 0) of the distinct rows of the packed key columns ``cols`` (column ``c``
    holds ``widths[c]`` word ids of ``bits`` bits each). Column by column: the ids of the prefix
    so far (at most ``len(rows)`` distinct, so few bits) are packed with the next column into one
    unsigned 64-bit key when they fit, else the rows are sorted lexicographically."""
    m = len(cols[0]) if cols else 0
    if m == 0:
        return np.zeros(0, np.int64)
    _, ids = np.unique(cols[0], return_inverse=True)
    for c in range(1, len(cols)):
        id_bits = max(1, int(ids.max(initial=0)).bit_length())
        if id_bits + widths[c] * bits > 64:
            order = np.lexsort(cols[::-1])
            new = np.ones(m, bool)
            same = np.ones(m - 1, bool)
            for key in cols:
                s = key[order]
                same &= s[1:] == s[:-1]
            new[1:] = ~same
            out = np.empty(m, np.int64)
            out[order] = np.cumsum(new) - 1
            return out
        key = (ids.astype(np.uint64) << np.uint64(widths[c] * bits)) | cols[c].astype(np.uint64)
        _, ids = np.unique(key, return_inverse=True)
    return ids.reshape(-1).astype(np.int64, copy=False)


def shingle_matrix(texts: Sequence[str], k: int = K):
    """Binary CSR matrix ``X`` (documents x distinct shingles, ``int32`` ones) of the shingle sets
    defined by :func:`word_shingles`, exactly (no hashing)."""
    from scipy import sparse

    n = len(texts)
    flat, offsets = _token_ids(texts)
    lengths = np.diff(offsets)
    vmax = int(flat.max(initial=0))
    bits = max(1, vmax.bit_length())
    if bits > 63:  # pragma: no cover - more than 2**63 distinct words
        raise ValueError("vocabulary too large")
    per_word = max(1, 63 // bits)  # word ids packed into one 63-bit integer
    n_cols = -(-k // per_word)

    # Windows: one per full k-gram of a long document, one (padded) per short document.
    long_docs = np.flatnonzero(lengths >= k)
    short_docs = np.flatnonzero((lengths > 0) & (lengths < k))
    n_win = np.where(lengths >= k, lengths - k + 1, 0)
    win_doc = np.repeat(np.arange(n, dtype=np.int64), n_win)
    win_off = np.zeros(n + 1, np.int64)
    np.cumsum(n_win, out=win_off[1:])
    win_start = offsets[win_doc] + (np.arange(len(win_doc), dtype=np.int64) - win_off[win_doc])
    del long_docs
    padded = np.concatenate([flat, np.zeros(k, np.int64)])
    doc = np.concatenate([win_doc, short_docs])
    start = np.concatenate([win_start, offsets[short_docs]])
    width = np.concatenate([np.full(len(win_doc), k, np.int64), lengths[short_docs]])
    del win_doc, win_start

    cols = []
    for c in range(n_cols):
        key = np.zeros(len(doc), np.int64)
        for j in range(c * per_word, min(k, (c + 1) * per_word)):
            tok = np.where(j < width, padded[np.minimum(start + j, len(padded) - 1)], 0)
            key = (key << bits) | tok
        cols.append(key)
    del padded, start, width

    sid = _number_rows(
        cols, [min(k, (c + 1) * per_word) - c * per_word for c in range(n_cols)], bits
    )
    del cols
    n_sh = int(sid.max(initial=-1)) + 1
    x = sparse.csr_matrix((np.ones(len(doc), np.int32), (doc, sid)), shape=(n, n_sh))
    x.sum_duplicates()
    x.data[:] = 1
    return x


def jaccard_pairs_at_least(
    texts: Sequence[str], threshold: float = 0.8, k: int = K, block_rows: int = 4000
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All pairs ``(a, b, jaccard)`` with ``a < b`` and exact Jaccard similarity of the
    :func:`word_shingles` sets ``>= threshold``, sorted by ``(a, b)``.

    ``a``, ``b``: ``int64`` row numbers; ``jaccard``: ``float64``. Requires ``threshold > 0``.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold={threshold!r} must be in (0, 1]")
    x = shingle_matrix(texts, k)
    sizes = np.diff(x.indptr).astype(np.int64)
    # Columns of shingles in one document only cannot make an intersection.
    df = np.bincount(x.indices, minlength=x.shape[1])
    x = x[:, np.flatnonzero(df >= 2)].tocsr()
    xt = x.T.tocsr()
    out_a, out_b, out_j = [], [], []
    n = x.shape[0]
    for s in range(0, n, block_rows):
        e = min(n, s + block_rows)
        # all columns, then the upper triangle: cheaper than slicing the columns of xt
        prod = (x[s:e] @ xt).tocoo()
        a = prod.row.astype(np.int64) + s
        b = prod.col.astype(np.int64)
        keep = a < b
        a, b, inter = a[keep], b[keep], prod.data[keep].astype(np.int64)
        union = sizes[a] + sizes[b] - inter
        j = inter / union
        ok = j >= threshold
        out_a.append(a[ok])
        out_b.append(b[ok])
        out_j.append(j[ok])
    a = np.concatenate(out_a) if out_a else np.zeros(0, np.int64)
    b = np.concatenate(out_b) if out_b else np.zeros(0, np.int64)
    j = np.concatenate(out_j) if out_j else np.zeros(0, np.float64)
    order = np.lexsort((b, a))
    return a[order], b[order], j[order]


def load_texts(path: Path) -> list[str]:
    import orjson

    with open(path, "rb") as f:
        return [orjson.loads(line)["text"] for line in f]


def cached_truth(
    corpus: Path, threshold: float = 0.8, cache: Path | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Ground truth of a JSONL corpus, cached in ``cache`` (an ``.npz``) keyed on the corpus
    file's size and modification time and the threshold."""
    st = corpus.stat()
    key = np.array([st.st_size, st.st_mtime_ns], np.int64)
    if cache is not None and cache.exists():
        with np.load(cache) as z:
            if np.array_equal(z["key"], key) and float(z["threshold"]) == threshold:
                return z["a"], z["b"], z["jaccard"]
    t = time.perf_counter()
    a, b, j = jaccard_pairs_at_least(load_texts(corpus), threshold)
    print(
        f"ground truth of {corpus.name}: {len(a):,} pairs with J >= {threshold} "
        f"in {time.perf_counter() - t:.1f} s",
        file=sys.stderr,
    )
    if cache is not None:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(cache.name + ".tmp.npz")
        np.savez(tmp, a=a, b=b, jaccard=j, key=key, threshold=np.float64(threshold))
        tmp.replace(cache)
    return a, b, j


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpus", type=Path, help="JSONL corpus with a 'text' field per line")
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="an .npz to reuse (if it matches the corpus file) or write",
    )
    a = ap.parse_args(argv)
    t = time.perf_counter()
    pa, pb, pj = cached_truth(a.corpus, a.threshold, a.cache)
    print(
        f"{len(pa):,} pairs with J >= {a.threshold} ({np.count_nonzero(pj >= 0.85):,} with "
        f"J >= 0.85) in {time.perf_counter() - t:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
