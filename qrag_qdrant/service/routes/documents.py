"""The team's documents: ``GET /v1/documents`` (a page, sorted by source),
``GET /v1/documents/{source}`` (one, with its chunks' locations),
``DELETE /v1/documents/{source}`` (read-write keys) and ``PUT /v1/documents/{source}/readers``
(read-write keys: who may read it). The key decides the namespace, so a team never sees or
touches another's documents: another team's source is simply not there (404). Inside the
namespace the key's groups decide: a document it may not read is not there either (404, the same
answer as for a name no document has). A new version is an upload under the same name
(``POST /v1/ingest``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import APIRouter, Query, Request
from pydantic import Field

from ...errors import DocumentNotFound
from ...ingest.documents import MAX_PAGE, DocumentDetail, DocumentPage, ReadersReport, RemovalReport
from ..auth.keys import Principal
from ..errors import ServiceError
from ..schemas import ReadersRequest
from ..state import IngestCaller, LookupCaller, QueryCaller, ServiceState, State
from .ingest import checked_readers

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
    page = state.spaces().rag(principal.namespace).documents(principal.readers).page(offset, limit)
    return DocumentList(**page.model_dump(), can_remove=principal.can_write)


@documents.get("/documents/{source:path}")
def show_document(source: str, request: Request, state: State, principal: LookupCaller) -> DocumentDetail:
    with refusal_noted(state, request, principal, checked_source(source)):
        return state.spaces().rag(principal.namespace).documents(principal.readers).get(source)


@documents.put("/documents/{source:path}/readers")
def set_readers(
    source: str, body: ReadersRequest, request: Request, state: State, principal: IngestCaller
) -> ReadersReport:
    """Who may read the document from now on, in every collection, without embedding it again;
    an empty list lets everyone in the namespace read it. Result caches start over."""
    if not principal.can_write:
        raise ServiceError(403, "forbidden", "this key may only read; setting readers needs a read-write key")
    readers = checked_readers(body.readers)
    state.note(request, source=checked_source(source)[:300], readers=list(readers), groups=list(principal.groups))
    with refusal_noted(state, request, principal, source):
        return state.spaces().rag(principal.namespace).documents(principal.readers).set_readers(source, readers)


@contextmanager
def refusal_noted(state: ServiceState, request: Request, principal: Principal, source: str) -> Iterator[None]:
    """A document the caller may not read answers 404 like a missing one, at the same cost: for a
    caller that reads as groups, both are looked up again and both written to the audit log, which
    only the operator reads and which tells them apart (``refused``: ``not_a_reader`` or
    ``not_found``)."""
    try:
        yield
    except DocumentNotFound:
        if principal.readers is not None:
            hidden = source_exists(state, principal.namespace, source)
            state.note(
                request,
                event="refused",
                outcome="refused",
                reason="not_a_reader" if hidden else "not_found",
                source=source[:300],
                groups=list(principal.groups),
            )
        raise


def source_exists(state: ServiceState, namespace: str, source: str) -> bool:
    """Whether a document holds ``source``: the same work for a hidden name as for a missing one."""
    return state.spaces().rag(namespace).documents().exists(source)


@documents.delete("/documents/{source:path}")
def remove_document(source: str, request: Request, state: State, principal: IngestCaller) -> RemovalReport:
    """Remove the document from every collection of the namespace; run it again if it was cut short."""
    if not principal.can_write:
        raise ServiceError(403, "forbidden", "this key may only read; removing a document needs a read-write key")
    state.note(request, source=checked_source(source)[:300])
    with refusal_noted(state, request, principal, source):
        report = state.spaces().rag(principal.namespace).documents(principal.readers).remove(source)
    state.note(request, points=sum(report.removed.values()))
    return report
