"""numba for neardup's kernels, with a cache folder that works on read-only installations.

numba caches compiled kernels next to their source (``__pycache__``) or, when that folder is
not writable (site-packages of a container, a system install), in the user's cache folder; when
neither is writable (a read-only home too) decorating a ``cache=True`` function fails with
"no locator available". Every kernel module imports ``njit``/``prange`` from here, so that
before the first kernel is decorated neardup points numba at a private folder of the user's in
the temporary directory in that case (``NUMBA_CACHE_DIR``, if the user set it, always wins).
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

# The kernels start a parallel region a few times per chunk; between them OpenMP's worker
# threads would spin (GOMP's default), taking a core from the thread that reads and normalises
# the next chunk: measured 0.4 s of CPU and 0.3 s of wall time on 100,000 documents. Read when
# numba first loads its OpenMP threading layer, so it is set here; a user's setting wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402
import numba.np.arraymath  # noqa: E402, F401  (see below)
from numba import njit, prange  # noqa: E402

# numba loads its array-maths registry (which imports scipy.linalg for BLAS) at the first kernel
# call of a process anyway; loaded here, before any kernel has started numba's thread pool, it
# measured ~50 ms faster (scipy's own threads then start on a quiet process).

__all__ = ["njit", "prange", "fallback_cache_dir", "is_cached"]


def _can_create(folder: Path) -> bool:
    """Whether ``folder`` exists and takes new files, or can be made (by its nearest existing
    ancestor being writable)."""
    p = folder
    while not p.exists():
        if p.parent == p:
            return False
        p = p.parent
    return p.is_dir() and os.access(p, os.W_OK | os.X_OK)


def _private_dir(base: Path) -> Path | None:
    """``base`` made (or found) as a folder only this user can use, or ``None`` if it exists
    and someone else could have planted files in it (the cache holds pickles)."""
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        st = base.lstat()
    except OSError:
        return None
    uid = getattr(os, "getuid", lambda: None)()
    if not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid) \
            or st.st_mode & 0o022:
        return None
    return base


def fallback_cache_dir(package_dir: Path, user_cache_dir: Path, tmp: Path) -> Path | None:
    """The cache folder neardup gives numba, or ``None`` to leave numba's own choice: the
    package's ``__pycache__`` if it can be written, else ``user_cache_dir``; when neither can,
    a private ``neardup-numba-<uid>`` folder under ``tmp`` (a fresh one if that name is taken
    by someone else)."""
    if _can_create(package_dir / "__pycache__") or _can_create(user_cache_dir):
        return None
    uid = getattr(os, "getuid", lambda: "user")()
    found = _private_dir(tmp / f"neardup-numba-{uid}")
    if found is None:
        try:
            found = Path(tempfile.mkdtemp(prefix="neardup-numba-", dir=tmp))
        except OSError:
            return None
    return found


def is_cached(kernel) -> bool:
    """Whether the ``cache=True`` kernel has machine code in the cache (an index file): if not,
    its first call in this installation compiles it."""
    cache_file = getattr(getattr(kernel, "_cache", None), "_cache_file", None)
    index = getattr(cache_file, "_index_path", None)
    return index is None or os.path.exists(index)


def _configure() -> None:
    if os.environ.get("NUMBA_CACHE_DIR") or numba.config.CACHE_DIR:
        return
    from numba.misc.appdirs import AppDirs

    user = Path(AppDirs(appname="numba", appauthor=False).user_cache_dir)
    found = fallback_cache_dir(Path(__file__).parent, user, Path(tempfile.gettempdir()))
    if found is not None:
        numba.config.CACHE_DIR = str(found)


_configure()
