"""Online near-duplicate index: :class:`Index` over a storage backend (memory, SQLite, Redis)."""

from .core import CheckResult, Index, IndexChangedError, Match
from .storage import (
    FORMAT_VERSION,
    DuplicateIdError,
    IndexBusyError,
    MemoryStorage,
    Storage,
    StoredDoc,
)

__all__ = ["CheckResult", "Index", "IndexChangedError", "Match", "Storage", "StoredDoc", "MemoryStorage",
           "DuplicateIdError", "IndexBusyError", "FORMAT_VERSION"]
