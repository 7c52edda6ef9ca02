"""Uploaded collections, their HTTP side: reading an upload (CSV, JSON Lines or Parquet) into
records with the service's rules and answers (415 for a file of another kind, 422 for one
without a usable record), the slots that bound the uploads deduplicated at once
(:class:`UploadSlots`; a 503 beyond, so that the service's peak memory is bounded), and the
routes of ``/collections``: ``POST /collections`` deduplicates an upload with
:func:`neardup.dedup` and keeps what the page asks for later, the result, an export as a file,
two documents side by side. What is kept, and how, is :mod:`.collection_store`.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from fastapi import FastAPI, File, Form, HTTPException, Query, UploadFile
from fastapi.responses import Response

from .._records import record
from ..errors import InputError, SkipReason
from .collection_store import (
    COLLECTION_DISK_BYTES,
    COLLECTION_ID,
    COLLECTION_MEMORY_BYTES,
    COLLECTION_SHINGLE,
    EXPORT_FORMATS,
    MAX_COLLECTIONS,
    STALE_SECONDS,
    TITLE_CHARS,
    TOUCH_SECONDS,
    Collection,
    CollectionStore,
    known_pairs,
    summary_json,
    title_of,
)
from .memory import release_free_memory
from .models import (
    _ERRORS,
    CLUSTER_DEFAULT,
    THRESHOLD_DEFAULT,
    THRESHOLD_GE,
    THRESHOLD_GT,
    THRESHOLD_LE,
    THRESHOLD_LT,
    ClusterMethod,
    CollectionOut,
    DocumentOut,
    PairOut,
    Passage,
    SkipExample,
)
from .passages import passages_within
from .state import PAIR_SECONDS, Service

__all__ = [
    "COLLECTION_DISK_BYTES",
    "COLLECTION_ID",
    "COLLECTION_MEMORY_BYTES",
    "COLLECTION_SHINGLE",
    "CONCURRENT_UPLOADS",
    "EXPORT_FORMATS",
    "MAX_COLLECTIONS",
    "MAX_SKIP_EXAMPLES",
    "STALE_SECONDS",
    "TITLE_CHARS",
    "TOUCH_SECONDS",
    "UPLOAD_FORMATS",
    "Collection",
    "CollectionStore",
    "Upload",
    "UploadSlots",
    "add_collection_routes",
    "known_pairs",
    "read_upload",
    "summary_json",
    "text_fields",
    "title_of",
    "upload_format",
]

#: Uploads deduplicated at once (503 beyond).
CONCURRENT_UPLOADS = 2
#: Skipped records of an upload named with their line number.
MAX_SKIP_EXAMPLES = 5
#: The formats an upload may have.
UPLOAD_FORMATS = ("csv", "jsonl", "parquet")


# ---------------------------------------------------------------------------------------------
# Reading an upload: neardup.io reads it; what is left here is the service's policy


def upload_format(filename: str | None, content_type: str | None, head: bytes) -> str:
    """ "csv" or "jsonl", from the file name's suffix, else its content type, else its content
    (:func:`neardup.io.detect_format`); compressed uploads are refused (415)."""
    # the readers and the batch engine load with the first upload, not with the service
    from ..io import detect_format, split_compression

    try:
        fmt: str | None = detect_format(name=filename or "", content_type=content_type, head=head)
    except InputError:
        fmt = None
    if fmt not in UPLOAD_FORMATS or split_compression(filename or "")[1] is not None:
        ctype = (content_type or "").split(";")[0].strip().lower()
        raise HTTPException(
            415,
            f"upload a CSV (.csv), JSON Lines (.jsonl) or Parquet "
            f"(.parquet) file; got {filename or 'a file without a name'!r} "
            f"({ctype or 'no type'})",
        )
    return fmt


@record
class Upload:
    """The records of an upload, and those left out: counted by reason, the first few with
    their line."""

    ids: list[str]
    texts: list[str]
    skipped: dict[str, int]
    examples: list[dict[str, Any]]
    #: where the ids came from: the field named, the field ``id`` found in every record, or
    #: None for line numbers
    id_field: str | None = None


def text_fields(text_field: str) -> tuple[str, ...]:
    """The fields an upload's ``text_field`` names: one, or several separated by commas
    ("title,description"), whose texts are joined with a newline."""
    fields = tuple(f.strip() for f in text_field.split(","))
    if not all(fields):
        raise HTTPException(
            422,
            f"text_field {text_field!r}: a field name, or several "
            "separated by commas (e.g. 'title,description')",
        )
    return fields


def _may_have_id(data: bytes, fmt: str) -> bool:
    """Whether an upload may have the field ``id`` in every record, from its first line (its
    schema for Parquet): otherwise it is not read twice."""
    if fmt == "parquet":
        import io

        import pyarrow.parquet as pq

        try:
            return "id" in pq.read_schema(io.BytesIO(data)).names
        except Exception:  # noqa: BLE001 - the read that follows says what is wrong
            return False
    first = data.lstrip()[:65536].split(b"\n", 1)[0]
    if fmt == "jsonl":
        return b'"id"' in first
    return "id" in (c.strip().strip('"') for c in first.decode("utf-8", "replace").split(","))


def read_upload(
    data: bytes,
    filename: str | None,
    fmt: str,
    text_field: str,
    id_field: str | None,
    max_text_bytes: int,
) -> Upload:
    """Read an upload with :func:`neardup.io.record_stream`: bad records are skipped and counted
    (texts over ``max_text_bytes`` and empty texts too). Ids: the field ``id_field``; without
    it, as ``neardup dedup`` takes them, the field ``id`` where every record has one and they
    are distinct, else the line numbers. ``text_field``: one field, or several separated by
    commas (their texts joined with a newline). A problem with the whole file (no header, no
    such column, no record) is a 422."""
    if id_field is None and _may_have_id(data, fmt):
        try:
            got = _read_upload(data, filename, fmt, text_field, None, max_text_bytes, True)
        except InputError as e:
            if e.reason is not SkipReason.DUPLICATE_ID:
                raise
            got = None  # ids that repeat: line numbers
        if got is not None:
            return got
    got = _read_upload(data, filename, fmt, text_field, id_field, max_text_bytes, False)
    assert got is not None
    return got


def _read_upload(
    data: bytes,
    filename: str | None,
    fmt: str,
    text_field: str,
    id_field: str | None,
    max_text_bytes: int,
    detect: bool,
) -> Upload | None:
    """:func:`read_upload` with ``id_field``, line numbers, or (``detect``) the field ``id``:
    None if some record lacks it."""
    from ..io import ReadOptions, SkipReport, record_stream
    from .ids import id_problem, normal_id  # the same rule for ids sent as JSON

    ids: dict[str, Any] = (
        {"id_field": None, "detect_id": "id"}
        if detect
        else {"id_field": id_field, "default_id": "{line}" if id_field is None else None}
    )
    options = ReadOptions(
        text_fields=text_fields(text_field),
        format=fmt,
        on_error="skip",
        skip_empty=True,
        max_text_bytes=max_text_bytes,
        **ids,
    )
    report = SkipReport()
    stream = record_stream(data, options, report, name=filename or "upload")
    out = Upload([], [], report.counts, [], "id" if detect else id_field)
    if detect:
        id_field = "id"
    seen: set[str] = set()

    def example(err: InputError) -> None:
        if len(out.examples) < MAX_SKIP_EXAMPLES:
            out.examples.append(
                {"line": err.line, "reason": str(err.reason), "message": err.detail}
            )

    for item in stream.with_errors():
        if isinstance(item, InputError):
            if item.whole_file:
                raise HTTPException(
                    422, _file_problem(item, fmt, filename, text_field, stream.header is not None)
                )
            example(item)
            continue
        problem = (
            f"field {id_field!r} is an empty string; an id must not be empty"
            if not item.id
            # an id names a document in the service's URLs
            else f"field {id_field!r} {id_problem(item.id)}"
            if id_problem(item.id)
            else None
        )
        doc_id = normal_id(item.id)
        if problem is None and doc_id in seen:
            # the reader tells repeated ids apart as written; two forms of one id are one id
            err = InputError(
                f"duplicate id {doc_id!r} (in another Unicode form; ids are kept in NFC form)",
                line=item.line,
                field=id_field,
                reason=SkipReason.DUPLICATE_ID,
            )
            report.add(err)
            example(err)
            continue
        if problem is not None:
            err = InputError(problem, line=item.line, reason=SkipReason.BAD_ID)
            report.add(err)
            example(err)
            continue
        seen.add(doc_id)
        out.ids.append(doc_id)
        out.texts.append(item.text)
    if detect and not stream.ids.from_field:
        return None  # a record without the field: line numbers for all
    return out


def _file_problem(
    err: InputError, fmt: str, filename: str | None, text_field: str, header_seen: bool
) -> str:
    """The 422 message of an error about the whole upload, in the terms of the form."""
    if err.reason is SkipReason.EMPTY_FILE:
        if fmt == "csv" and not header_seen:
            return (
                "the CSV file is empty: it needs a header row naming the text column "
                f"({text_field!r}) and at least one row"
            )
        return (
            f"no usable record in {filename or 'the file'!r} (text field {text_field!r}): "
            "it is empty"
        )
    if err.reason is SkipReason.MISSING_FIELD and err.field is not None:
        # "'sku' is not a column of the CSV header (...)", said of the form field naming it
        return f"{'text_field' if err.field == text_field else 'id_field'} {err.detail}"
    return err.detail


class UploadSlots:
    """At most ``n`` uploads deduplicated at once: :meth:`take` is a context manager that
    answers 503 with ``Retry-After`` when none is free."""

    def __init__(self, n: int = CONCURRENT_UPLOADS):
        self.n = n
        self._sem = threading.BoundedSemaphore(n)

    @contextlib.contextmanager
    def take(self) -> Iterator[None]:
        if not self._sem.acquire(blocking=False):
            raise HTTPException(
                503,
                f"{self.n} upload{'s are' if self.n > 1 else ' is'} being "
                "deduplicated; send the file again in a few seconds",
                headers={"Retry-After": "5"},
            )
        try:
            yield
        finally:
            self._sem.release()


# ---------------------------------------------------------------------------------------------
# The routes


def add_collection_routes(app: FastAPI, service: Service) -> None:
    """Add the routes of ``/collections`` to ``app``, keeping the collections in ``service``."""

    @app.post(
        "/collections",
        status_code=201,
        response_model=CollectionOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="Deduplicate an uploaded CSV, JSONL or Parquet file",
        dependencies=[service.write],
    )
    def upload_collection(
        file: Annotated[
            UploadFile,
            File(
                description="A CSV file with a header row, a JSON "
                "Lines file (one object per line) or a "
                "Parquet file."
            ),
        ],
        text_field: Annotated[
            str,
            Form(
                min_length=1,
                description=(
                    "Field or column holding the text; several separated by commas "
                    "('title,description'), whose texts are joined with a newline."
                ),
            ),
        ] = "text",
        id_field: Annotated[
            str | None,
            Form(
                description=(
                    "Field or column holding the id (default: the field 'id' where every record has "
                    "one and they are distinct, else the line number)."
                )
            ),
        ] = None,
        threshold: Annotated[
            float,
            Form(
                gt=THRESHOLD_GT,
                ge=THRESHOLD_GE,
                lt=THRESHOLD_LT,
                le=THRESHOLD_LE,
                description="Jaccard threshold, (0, 1].",
            ),
        ] = THRESHOLD_DEFAULT,
        cluster: Annotated[
            ClusterMethod,
            Form(
                description="'components' (transitive) or 'strict' (every member verified against "
                "its representative)."
            ),
        ] = CLUSTER_DEFAULT,
    ) -> Response:  # the body of a CollectionOut (response_model), made by _upload
        """Parse the file in memory, deduplicate it with `neardup.dedup` and keep the result
        for `GET /collections/{collection_id}` and the side-by-side view (the most recent
        uploads, within the service's memory and disk limits). Records that cannot be read are
        counted in `skipped`. 503 with `Retry-After` while other uploads are being
        deduplicated."""
        with service.uploads.take():
            try:
                body = _upload(service, file, text_field, id_field or None, threshold, cluster)
            finally:
                # the upload's working memory (its texts, the dedup's arrays) is free now:
                # handed back, so that the process's memory stays that of what it keeps
                release_free_memory()
        return Response(body, status_code=201, media_type="application/json")

    @app.get(
        "/collections/{cid}",
        response_model=CollectionOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="A deduplicated collection again",
        dependencies=[service.read],
    )
    def get_collection(cid: str) -> Response:
        """The result of an earlier upload; 404 once it has been dropped."""
        return Response(_collection(service, cid).summary, media_type="application/json")

    @app.get(
        "/collections/{cid}/export",
        responses={
            **_ERRORS,
            200: {
                "description": "The file (CSV or JSON Lines).",
                "content": {"text/csv": {}, "application/x-ndjson": {}},
            },
        },
        tags=["collections"],
        summary="The deduplicated list or the groups, as a file",
        dependencies=[service.read],
    )
    def export_collection(
        cid: str,
        what: Annotated[
            Literal["kept", "groups"],
            Query(
                description=(
                    "'kept': the deduplicated list (id, text of each cluster's representative and "
                    "of every document in no cluster); 'groups': every document with its cluster, "
                    "representative, similarity to it and whether it is kept."
                )
            ),
        ] = "kept",
        format: Annotated[
            Literal["csv", "jsonl"],
            Query(  # noqa: A002 - the API's word
                description="'csv' (with a header row) or 'jsonl'."
            ),
        ] = "csv",
    ) -> Response:
        """An uploaded collection's result as a file to download."""
        from fastapi.responses import StreamingResponse

        col = _collection(service, cid)
        media = "text/csv; charset=utf-8" if format == "csv" else "application/x-ndjson"
        name = f"{cid}-{what}.{format}"
        return StreamingResponse(
            col.export(what, format),
            media_type=media,
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    @app.get(
        "/collections/{cid}/pair",
        response_model=PairOut,
        responses=_ERRORS,
        tags=["collections"],
        summary="Two documents side by side",
        dependencies=[service.read],
    )
    def get_pair(
        cid: str,
        a: Annotated[str, Query(min_length=1, description="Id of the first document.")],
        b: Annotated[str, Query(min_length=1, description="Id of the second document.")],
    ) -> PairOut:
        """Both texts, their similarity where the run knows it, and the passages they share
        (offsets into each), found within a time budget (`incomplete` says when cut)."""
        deadline = time.monotonic() + PAIR_SECONDS
        col = _collection(service, cid)
        rows = []
        for name, x in (("a", a), ("b", b)):
            r = col.row_of(x)
            if r is None:
                raise HTTPException(404, f"{name}: no document {x!r} in collection {cid!r}")
            rows.append(r)
        ra, rb = rows
        sim = col.similarity(ra, rb)
        ta, tb = col.text(ra), col.text(rb)
        passages, complete = passages_within(ta, tb, int(COLLECTION_SHINGLE[5:]), deadline=deadline)
        return PairOut(
            collection_id=cid,
            a=DocumentOut(id=a, text=ta),
            b=DocumentOut(id=b, text=tb),
            similarity=None if sim is None else round(sim, 6),
            same_cluster=col.same_cluster(ra, rb),
            passages=[Passage.model_validate(p) for p in passages],
            incomplete=not complete,
        )


def _upload(
    service: Service,
    file: UploadFile,
    text_field: str,
    id_field: str | None,
    threshold: float,
    cluster: ClusterMethod,
) -> bytes:
    data = file.file.read(service.max_upload_bytes + 1)
    if len(data) > service.max_upload_bytes:
        raise HTTPException(413, f"the file is over the limit of {service.max_upload_bytes} bytes")
    fmt = upload_format(file.filename, file.content_type, data[:64])
    parsed = read_upload(data, file.filename, fmt, text_field, id_field, service.max_text_bytes)
    del data
    if not parsed.texts:
        why = "; ".join(f"line {e['line']}: {e['message']}" for e in parsed.examples)
        raise HTTPException(
            422,
            f"no usable record in {file.filename or 'the file'!r}"
            f" (text field {text_field!r})" + (f": {why}" if why else ": it is empty"),
        )
    from ..engines.local import dedup

    # the compared pairs only: a group of g copies is g - 1 pairs, not g (g - 1) / 2
    result = dedup(
        parsed.texts,
        parsed.ids,
        threshold=threshold,
        cluster=cluster,
        shingle=COLLECTION_SHINGLE,
        pairs="edges",
    )
    cid = secrets.token_hex(8)
    col = Collection.build(parsed.ids, parsed.texts, result, b"")
    meta = {
        "collection_id": cid,
        "filename": file.filename,
        "format": fmt,
        "id_field": parsed.id_field,
        "documents": len(parsed.ids),
        "skipped": dict(sorted(parsed.skipped.items())),
        "skipped_examples": [SkipExample(**e).model_dump() for e in parsed.examples],
        "threshold": threshold,
        "cluster_method": cluster,
        "clusters": None,
        "pairs": known_pairs(col),
        "duplicates": int(len(result.duplicate_rows)),
    }
    col.summary = summary_json(meta, parsed.ids, result, parsed.texts)
    del parsed, result
    service.collections.put(cid, col)
    return col.summary


def _collection(service: Service, cid: str) -> Collection:
    got = service.collections.get(cid)
    if got is None:
        raise HTTPException(
            404,
            f"no collection {cid!r}: this service keeps the most "
            f"recent uploads only (at most {service.max_collections}, within "
            "its memory and disk limits); upload the file again",
        )
    return got
