"""The team's documents: ``GET /v1/documents`` (a page, sorted by source),
``GET /v1/documents/{source}`` (one, with its chunks' locations) and
``DELETE /v1/documents/{source}`` (read-write keys). The key decides the namespace, so a team
never sees or touches another's documents: another team's source is simply not there (404).
A new version is an upload under the same name (``POST /v1/ingest``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import Field

from ...ingest.documents import MAX_PAGE, DocumentDetail, DocumentPage, RemovalReport
from ..errors import ServiceError
from ..state import IngestCaller, LookupCaller, QueryCaller, State

documents = APIRouter(prefix="/v1", tags=["documents"])
#: the longest source a request may name
MAX_SOURCE_CHARS = 1000


class DocumentList(DocumentPage):
    can_remove: bool = Field(description="whether this key may remove documents (a read-write key)")


def checked_source(source: str) -> str:
    if not source.strip() or len(source) > MAX_SOURCE_CHARS:
        raise ServiceError(400, "bad_request", f"a document's source is 1 to {MAX_SOURCE_CHARS} characters")
    return source


@documents.get("/documents")
def list_documents(
    state: State,
    principal: QueryCaller,
    offset: Annotated[int, Query(ge=0, description="documents to skip, sorted by source")] = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="documents to list")] = 100,
) -> DocumentList:
    page = state.spaces().rag(principal.namespace).documents().page(offset, limit)
    return DocumentList(**page.model_dump(), can_remove=principal.can_write)


@documents.get("/documents/{source:path}")
def show_document(source: str, state: State, principal: LookupCaller) -> DocumentDetail:
    return state.spaces().rag(principal.namespace).documents().get(checked_source(source))


@documents.delete("/documents/{source:path}")
def remove_document(source: str, request: Request, state: State, principal: IngestCaller) -> RemovalReport:
    """Remove the document from every collection of the namespace; run it again if it was cut short."""
    if not principal.can_write:
        raise ServiceError(403, "forbidden", "this key may only read; removing a document needs a read-write key")
    state.note(request, source=checked_source(source)[:300])
    report = state.spaces().rag(principal.namespace).documents().remove(source)
    state.note(request, points=sum(report.removed.values()))
    return report
