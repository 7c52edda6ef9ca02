"""glibc malloc tuning for the batch pipeline.

Each chunk of the pipeline allocates and frees the same few large buffers (the joined text, the
normalised bytes, the chunk's signatures and shingle fingerprints: tens of MB). By default glibc
serves such blocks with ``mmap`` and returns them with ``munmap``, so every chunk pays for
zero-filled fresh pages again: about 6,000 page faults per 10,000 documents, 15% of the CPU time of
ingestion. Raising the mmap threshold to 64 MB and the trim threshold to 256 MB lets the freed
blocks be reused from the heap instead (measured: page faults down 3.6x, system time halved).

numpy, on Linux, asks for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for every array of
4 MB or more: each first touch of such an array then makes the kernel clear 2 MB at once, from
memory that a virtual machine's host has often taken back (the host then backs it again, 4 KB at a
time). The pipeline's arrays of that size are per-chunk buffers read once in order, which gain
nothing from huge pages, so the tuning turns numpy's request off too: for a million documents on
a 2-core virtual machine, huge-page faults went from about 200 to 30 per run and the whole
process from 8.0-8.8 s to 7.5-8.6 s (system time 2.4-3.1 s to 2.0-2.9 s), alternating runs.

Applied once per process when a :class:`~neardup.Deduplicator` is created (the malloc part on
glibc only); ``NEARDUP_MALLOC_TUNING=0`` in the environment turns it off. It changes only where
memory comes from and where freed memory goes, never what any computation returns.
"""

from __future__ import annotations

import ctypes
import os
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 64 << 20
TRIM_THRESHOLD = 256 << 20

_done = False


def tune_malloc() -> bool:
    """Apply the tuning (idempotent); return whether it is in effect."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux") or os.environ.get("NEARDUP_MALLOC_TUNING") == "0":
        return False
    _numpy_small_pages()
    try:
        # the C library this process runs on (its symbols are the program's): no search for
        # it (ctypes.util.find_library costs 17 ms of start-up with its imports)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1
    ok = mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1 and ok
    _done = ok
    return ok


def _numpy_small_pages() -> None:
    """Stop numpy asking for transparent huge pages for its large arrays (see above)."""
    import numpy as np

    for where in ("_core", "core"):  # numpy 2, numpy 1.26
        module = getattr(np, where, None)
        setter = getattr(getattr(module, "multiarray", None), "_set_madvise_hugepage", None)
        if setter is not None:
            setter(False)
            return
