"""Online near-duplicate index: :class:`Index` over a storage backend (memory, SQLite, Redis)."""

from .checking import CheckResult, CommonPassage, Match
from .core import Index
from .storage import (
    FORMAT_VERSION,
    DuplicateIdError,
    IndexBusyError,
    IndexChangedError,
    IndexFullError,
    IndexNotFoundError,
    MemoryStorage,
    Storage,
    StoredDoc,
)

__all__ = [
    "CheckResult",
    "CommonPassage",
    "Index",
    "IndexChangedError",
    "Match",
    "Storage",
    "StoredDoc",
    "MemoryStorage",
    "DuplicateIdError",
    "IndexBusyError",
    "IndexFullError",
    "IndexNotFoundError",
    "FORMAT_VERSION",
]
