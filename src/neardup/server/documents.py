"""The routes of the index's documents: add one (``POST /documents``), add many, all or none
(``POST /documents:batch``), list their ids, get and remove one."""

from __future__ import annotations

from typing import Annotated

from fastapi import FastAPI, HTTPException, Query
from fastapi.responses import Response

from .ids import normal_id
from .models import (
    _ERRORS,
    _WRITE_ERRORS,
    BatchIn,
    BatchOut,
    Created,
    DocumentIn,
    DocumentOut,
    IdPage,
)
from .state import Service, _check_size


def add_document_routes(app: FastAPI, service: Service) -> None:
    """Add the routes of ``/documents`` to ``app``, serving ``service``'s index."""

    @app.post(
        "/documents",
        status_code=201,
        response_model=Created,
        responses=_WRITE_ERRORS,
        tags=["index"],
        summary="Add one document",
        dependencies=[service.write, service.there],
    )
    async def add_document(doc: DocumentIn) -> Created:
        """Add a document; 409 if its id is already in the index."""
        _check_size(doc.text, service.max_text_bytes, "the text")
        service.room(1)
        await service.batches.acall("add", doc.id, doc.text)
        return Created(id=doc.id)

    @app.post(
        "/documents:batch",
        status_code=201,
        response_model=BatchOut,
        responses=_WRITE_ERRORS,
        tags=["index"],
        summary="Add many documents, all or none",
        dependencies=[service.write, service.there],
    )
    async def add_documents(batch: BatchIn) -> BatchOut:
        """Add documents in one transaction; 409 naming an id already present (nothing added)."""
        docs = batch.documents
        if len(docs) > service.max_batch:
            raise HTTPException(
                413,
                f"a batch holds at most {service.max_batch} documents; got {len(docs)}: split it",
            )
        first: dict[str, int] = {}
        for i, d in enumerate(docs):
            _check_size(d.text, service.max_text_bytes, f"documents[{i}].text")
            if d.id in first:
                raise HTTPException(
                    422,
                    f"id {d.id!r} appears twice in the batch "
                    f"(documents[{first[d.id]}] and documents[{i}])",
                )
            first[d.id] = i
        if not docs:
            return BatchOut(added=0)
        service.room(len(docs))
        added = await service.batches.acall(
            "add_many", [(d.id, d.text) for d in docs], batch_size=len(docs)
        )
        return BatchOut(added=added)

    @app.get(
        "/documents",
        response_model=IdPage,
        responses=_ERRORS,
        tags=["index"],
        summary="List the ids in the index, a page at a time",
        dependencies=[service.read, service.there],
    )
    def list_documents(
        after: Annotated[
            str | None,
            Query(
                max_length=1024,
                description="Start after this id (the `next` of the previous page).",
            ),
        ] = None,
        limit: Annotated[int, Query(ge=1, le=1000, description="Ids per page.")] = 100,
    ) -> IdPage:
        """Ids in code-point order, `limit` at a time; follow `next` until it is null."""
        ids = service.index.list_ids(None if after is None else normal_id(after), limit)
        return IdPage(ids=ids, next=ids[-1] if len(ids) == limit else None)

    @app.get(
        "/documents/{doc_id:path}",
        response_model=DocumentOut,
        responses=_ERRORS,
        tags=["index"],
        summary="Get a document's text",
        dependencies=[service.read, service.there],
    )
    def get_document(doc_id: str) -> DocumentOut:
        """The stored text of a document; 404 if the id is unknown. Percent-encode the id; an id
        `.` or `..` must be sent as `%2E` or `%2E%2E` (clients drop dot segments from paths)."""
        doc_id = normal_id(doc_id)
        try:
            return DocumentOut(id=doc_id, text=service.index.get(doc_id))
        except KeyError:
            raise HTTPException(404, f"no document with id {doc_id!r}") from None

    @app.delete(
        "/documents/{doc_id:path}",
        status_code=204,
        responses=_ERRORS,
        tags=["index"],
        summary="Remove a document",
        dependencies=[service.write, service.there],
    )
    async def delete_document(doc_id: str) -> Response:
        """Remove a document; 404 if the id is unknown."""
        doc_id = normal_id(doc_id)
        if not await service.batches.acall("remove", doc_id):
            raise HTTPException(404, f"no document with id {doc_id!r}")
        return Response(status_code=204)
