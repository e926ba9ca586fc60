"""The namespace's sources: ``GET /v1/sources`` (each source and its last syncs) and
``POST /v1/sources/{name}/sync`` (an admin key: sync it now, as a job). Sources are declared in
the service's config (``[[service.sources]]``) or added with ``qrag-qdrant sources add``; the key
decides the namespace, so a team sees only its own."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ...errors import ConfigError, redacted
from ...ingest.sources.register import RecordedSource
from ..auth.keys import Principal
from ..errors import ServiceError
from ..jobs import SERVER_FOLDER
from ..sources import URL_LIKE
from ..state import IngestCaller, LookupCaller, State

sources = APIRouter(prefix="/v1", tags=["sources"])


def view(recorded: RecordedSource, principal: Principal) -> dict[str, Any]:
    """A source as the key may see it: a folder on the server only for an admin key, a URL's
    credentials never, and the files a sync skipped only for a key that reads every document."""
    shown = recorded.model_dump(mode="json")
    location = recorded.spec.location
    hidden = not principal.can_read_server_paths and not URL_LIKE.match(location)
    shown["spec"]["location"] = SERVER_FOLDER if hidden else redacted(location)
    for result in (shown["last"], shown["last_success"]):
        if result is None:
            continue
        if principal.readers is not None:
            result["skipped"] = {}
        if result["error"]:
            result["error"] = redacted(result["error"].replace(location, shown["spec"]["location"]))
    return shown


@sources.get("/sources")
def list_sources(state: State, principal: LookupCaller) -> dict[str, Any]:
    recorded = state.schedule().register(principal.namespace).read()
    return {"sources": [view(source, principal) for source in recorded.values()]}


@sources.post("/sources/{name}/sync", status_code=202)
def sync_source(name: str, request: Request, state: State, principal: IngestCaller) -> JSONResponse:
    """Sync the source now (an admin key); a sync queued already is returned as it is, and one
    running gets another queued behind it.
    Poll ``GET /v1/jobs/{id}`` for its progress and what it did."""
    if not principal.can_read_server_paths:
        raise ServiceError(403, "forbidden", "syncing a source needs an admin key")
    try:
        job = state.schedule().sync(principal.namespace, name[:100], submitted_by=principal.key_id)
    except ConfigError:
        raise ServiceError(404, "unknown_source", f"no source {name[:100]!r} in this namespace") from None
    state.note(request, job=job.id, source=name[:100])
    return JSONResponse(job.view(), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})
