"""What the endpoints share: the service's default limits, and :class:`Service`, the state
of one application (its index, limits, writer of batches, collections and gates) that
:func:`~neardup.server.app.create_app` makes and hands to each function adding routes."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import field
from typing import TYPE_CHECKING, Any

from fastapi import Depends, HTTPException

from .._records import record

if TYPE_CHECKING:
    from ..index import Index
    from .collection_store import CollectionStore
    from .collections import UploadSlots
    from .guard import _Counts
    from .writer import BatchWriter

#: Passages that one ``/check`` answer carries at most (``reused_capped`` says when more were
#: found).
MAX_PASSAGES = 200
#: Indexed texts one ``/check`` compares its text with at most, and the seconds it may spend
#: comparing them (``reuse_incomplete`` says when either stopped it).
CHECK_CANDIDATES = 1000
CHECK_SECONDS = 2.0
#: ``/check`` searches for reused passages made at once by a process, by default; the others
#: wait for one (within their CHECK_SECONDS). A search compares hundreds of texts; several at
#: once take turns at the interpreter with each other and with every cheaper request: over an
#: index of a million texts, one at a time gave /query p99 38 ms instead of 67 and 1,517 adds a
#: second instead of 700 beside four readers (benchmarks/service_scale.py).
CHECK_SLOTS = 1
#: seconds one ``/query`` may spend reading and verifying its candidates (``incomplete`` says
#: when it stopped)
QUERY_SECONDS = 2.0

#: Threads that run the endpoints' work, by default (Starlette's default is 40: as many SQLite
#: connections, each with a page cache of up to 64 MB, and as many threads taking turns at the
#: interpreter on a machine with a few cores).
THREADS = 16
#: Matches of ``/check`` that come with their text and shared passages.
CHECK_DETAILS = 10
#: Matches one ``/query`` or ``/check`` answer carries at most, best first (``matches_capped``
#: says when more reached the threshold).
MAX_MATCHES = 1000
#: UTF-8 bytes of matched texts one ``/check`` answer carries at most (``texts_capped`` says
#: when a match comes without its text).
CHECK_TEXT_BYTES = 4_000_000
#: seconds ``/collections/{cid}/pair`` may spend finding the shared passages (``incomplete``
#: says when it stopped)
PAIR_SECONDS = 0.8


@record
class Service:
    """The state of one application, given to the functions that add its routes: the index
    served, the writer of its batches (:mod:`.writer`), the uploaded collections and the
    uploads' slots, the request counts, the limits (as :func:`~neardup.server.app.create_app`
    took them), and the dependencies of the endpoints (``read``, ``write``: the role the key
    needs; ``there``: the index is still the one opened)."""

    index: Index
    batches: BatchWriter
    collections: CollectionStore
    uploads: UploadSlots
    counts: _Counts
    read: Any
    write: Any
    max_upload_bytes: int
    max_text_bytes: int
    max_batch: int
    max_documents: int | None
    large_text_bytes: int
    max_large_requests: int
    check_text_bytes: int
    check_slots: int
    max_collections: int
    #: ``/check`` searches for reused passages made at once (``check_slots``), and requests
    #: with a large text handled at once (``max_large_requests``)
    check_gate: threading.BoundedSemaphore = field(init=False)
    large: threading.BoundedSemaphore = field(init=False)
    there: Any = field(init=False)

    def __post_init__(self) -> None:
        self.check_gate = threading.BoundedSemaphore(self.check_slots)
        self.large = threading.BoundedSemaphore(self.max_large_requests)
        self.there = Depends(self.index_there)

    def index_there(self) -> None:
        """Refuse to answer from a backend that no longer holds the index opened (503)."""
        self.index.verify_identity()

    def room(self, adding: int) -> None:
        """507 where adding would take the index over ``max_documents``."""
        max_documents = self.max_documents
        if max_documents is not None and len(self.index) + adding > max_documents:
            raise HTTPException(
                507,
                f"the index is full: it holds {len(self.index):,} documents "
                f"and this service keeps at most {max_documents:,} "
                "(--max-documents); delete some, or raise the limit",
            )

    @contextlib.contextmanager
    def heavy(self, text: str) -> Iterator[None]:
        """At most ``max_large_requests`` large texts searched at once (503 beyond)."""
        large_text_bytes = self.large_text_bytes
        if len(text) < large_text_bytes // 4 or len(text.encode()) < large_text_bytes:
            yield
            return
        if not self.large.acquire(blocking=False):
            raise HTTPException(
                503,
                f"{self.max_large_requests} requests with texts of "
                f"{large_text_bytes:,} bytes or more are being handled; "
                "try again in a moment",
                headers={"Retry-After": "2"},
            )
        try:
            yield
        finally:
            self.large.release()


def _utf8_size(text: str) -> int:
    """``text``'s size in UTF-8 bytes (as :func:`neardup.io.utf8_len`, which the service does
    not load before an upload)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _check_size(text: str, limit: int, what: str) -> None:
    n = _utf8_size(text)
    if n > limit:
        raise HTTPException(413, f"{what} is {n} bytes; the limit is {limit} bytes")
