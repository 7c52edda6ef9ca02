"""Ingest: a chunk of texts made into arrays.

:func:`ingest_chunk` normalises, fingerprints (exact groups), shingles and sketches the first
copy of each distinct text, and computes its band keys. The local engine calls it in its two
halves (:func:`fingerprint_chunk` on the reading thread and :func:`sketch_chunk` on a worker
thread, so that reading and sketching overlap); each partition of the Dask engine and the
online index call it whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .._kernels import lsh as _lsh_k  # type: ignore[attr-defined]  # compiled: no stubs
from .._records import record
from ..config import DedupConfig, ShingleConfig, SketchConfig, check_banding
from ..exact import FingerprintTable, fingerprints
from ..sketch import shingle_sketch
from ..text.normalize import NormalizedBatch, normalize
from .verification import sort_sets

__all__ = [
    "Fingerprinted",
    "Sketched",
    "TextSketches",
    "fingerprint_chunk",
    "sketch_chunk",
    "ingest_chunk",
    "sketch_texts",
    "gather_sets",
]


@record
class Fingerprinted:
    """A normalised chunk of ``n`` texts and its ``G`` distinct non-empty texts.

    ``group``: ``int64[n]``, each text's distinct-text number (the fingerprint table's group,
    counted across chunks; -1 for an empty text); ``docs``: ``int64[G]``, the position in the
    chunk of each distinct text seen for the first time (the one that is shingled);
    ``lengths``/``fp_hi``/``fp_lo``: its normalised length in bytes and 128-bit fingerprint
    (``None`` when the chunk was not grouped by a fingerprint table).
    """

    batch: NormalizedBatch
    group: np.ndarray
    docs: np.ndarray
    lengths: np.ndarray
    fp_hi: np.ndarray | None
    fp_lo: np.ndarray | None
    empty: int


@record
class Sketched:
    """Shingles and sketches of the ``G`` new distinct texts of a chunk: ``keys``
    (``uint64[bands, G]``, LSH band keys) or ``signatures`` (``uint32[G, num_perm]``, when
    kept whole), and each text's 32-bit shingle fingerprints ``shingles[offsets[i]:offsets[i+1]]``
    (unsorted, with repeats)."""

    keys: np.ndarray | list[np.ndarray] | None
    signatures: np.ndarray | None
    shingles: np.ndarray
    offsets: np.ndarray

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)


def fingerprint_chunk(
    batch: NormalizedBatch, table: FingerprintTable | None = None
) -> Fingerprinted:
    """Fingerprint a normalised chunk. With a ``table`` (exact groups across chunks), only the
    first copy of each text is new; without one, every non-empty text is its own group and no
    fingerprint is computed (``fp_hi``/``fp_lo`` are ``None``: the online index needs none, and
    a process that only queries then never loads that kernel)."""
    empty = batch.offsets[1:] == batch.offsets[:-1]
    hi: np.ndarray | None
    lo: np.ndarray | None
    if table is not None:
        hi, lo = fingerprints(batch.data, batch.offsets)
        group, first = table.add(hi, lo, skip=empty)
        docs = np.flatnonzero(first).astype(np.int64)
        hi, lo = hi[docs], lo[docs]
    else:
        docs = np.flatnonzero(~empty).astype(np.int64)
        group = np.full(len(empty), -1, np.int64)
        group[docs] = np.arange(len(docs), dtype=np.int64)
        hi = lo = None
    return Fingerprinted(
        batch, group, docs, batch.lengths[docs], hi, lo, int(np.count_nonzero(empty))
    )


def sketch_chunk(
    fp: Fingerprinted,
    shingle: ShingleConfig,
    sketch: SketchConfig,
    bands_rows: tuple[int, int] | None,
    out: Callable[[int], np.ndarray] | None = None,
    keys_out: Sequence[np.ndarray] | None = None,
) -> Sketched:
    """Shingle and sketch the new distinct texts of ``fp`` in one pass; with ``bands_rows``
    keep only their LSH band keys, without it their signatures. ``out(m)`` may supply the
    ``uint32[m]`` array the shingle fingerprints are written to (an engine's growing store),
    ``keys_out`` one ``uint64[G]`` array per band for the keys (its stores' free ends: the keys
    are then written there by the parallel kernel, and ``keys`` is that list instead of an
    array)."""
    if bands_rows is None:
        sigs, h32, off = shingle_sketch(fp.batch, shingle, sketch, fp.docs, out)
        return Sketched(None, sigs, h32, off)
    bands, rows = bands_rows
    n = len(fp.docs)
    keys = None
    if keys_out is None:
        keys = np.empty((bands, n), np.uint64)
        keys_out = list(keys)
    if len(keys_out) != bands or any(
        k.dtype != np.uint64 or k.shape != (n,) or not k.flags.c_contiguous or not k.flags.writeable
        for k in keys_out
    ):
        raise ValueError(f"keys_out must be {bands} writable uint64[{n}] arrays")
    addresses = np.array([k.ctypes.data for k in keys_out], np.uint64)
    check_banding(sketch.num_perm, bands, rows)

    def keys_of(sig: np.ndarray, lo: int, hi: int) -> None:  # sig: uint32, either scheme
        _lsh_k.band_keys_into(sig, bands, rows, addresses, lo, hi)

    _, h32, off = shingle_sketch(fp.batch, shingle, sketch, fp.docs, out, keys_of)
    return Sketched(list(keys_out) if keys is None else keys, None, h32, off)


def ingest_chunk(
    texts: Sequence[str],
    config: DedupConfig,
    bands_rows: tuple[int, int] | None,
    table: FingerprintTable | None = None,
) -> tuple[Fingerprinted, Sketched]:
    """Normalise, fingerprint, shingle and sketch a chunk: :func:`fingerprint_chunk` then
    :func:`sketch_chunk`, in one call."""
    fp = fingerprint_chunk(normalize(texts, config.normalize), table)
    return fp, sketch_chunk(fp, config.shingle, config.sketch, bands_rows)


@record
class TextSketches:
    """The band keys and shingle sets of a chunk's texts, as the online index stores them:
    text ``i`` has the set ``group[i]`` (-1: an empty text, none); set ``g`` has the band keys
    ``keys[:, g]`` (``uint64[bands, G]``) and the distinct shingle fingerprints
    ``hashes[starts[g]:ends[g]]``, sorted."""

    group: np.ndarray
    keys: np.ndarray
    hashes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray


def sketch_texts(
    texts: Sequence[str], config: DedupConfig, bands_rows: tuple[int, int]
) -> TextSketches:
    """:func:`ingest_chunk` of texts each of which is its own set (no exact groups), with the
    sets sorted: what the online index stores of each text."""
    fp, sk = ingest_chunk(texts, config, bands_rows)
    h32, off = sk.shingles, sk.offsets
    ends = sort_sets(h32, off, np.arange(len(fp.docs), dtype=np.int64))
    assert isinstance(sk.keys, np.ndarray)  # made here, not written into an engine's stores
    return TextSketches(fp.group, sk.keys, h32, off[:-1], ends)


def gather_sets(
    read: Callable[[np.ndarray], np.ndarray],
    starts: np.ndarray,
    ends: np.ndarray,
    group: np.ndarray,
    keys: np.ndarray | None,
    bands: int,
) -> TextSketches:
    """:class:`TextSketches` of sets kept elsewhere (an engine's stores): set ``g`` is the
    fingerprints at the positions ``starts[g]:ends[g]`` of a store, which ``read(positions)``
    copies out (as shingled: they are sorted here); ``keys``: its band keys (``None``: no set)."""
    sizes = ends - starts
    off = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=off[1:])
    h = read(np.repeat(starts - off[:-1], sizes) + np.arange(off[-1])).astype(np.uint32, copy=False)
    set_ends = sort_sets(h, off, np.arange(len(sizes), dtype=np.int64))
    if keys is None:
        keys = np.zeros((bands, 0), np.uint64)
    return TextSketches(group, keys, h, off[:-1], set_ends)
