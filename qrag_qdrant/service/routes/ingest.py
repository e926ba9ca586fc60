"""``POST /v1/ingest`` (uploads, or a folder on the server for an admin key) and the jobs it starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile

from ...errors import RequestError
from ...store.access import checked_groups
from ..auth.keys import Principal
from ..errors import ServiceError
from ..schemas import INGEST_BODY, IngestPathRequest
from ..state import IngestCaller, LookupCaller, ServiceState, State

ingests = APIRouter(prefix="/v1")


@ingests.post("/ingest", status_code=202, openapi_extra=INGEST_BODY)
async def ingest(request: Request, state: State, principal: IngestCaller) -> JSONResponse:
    """Start an ingest job: uploaded files (multipart, field ``files``), or for an admin key a
    path on the server (JSON). Poll ``GET /v1/jobs/{id}`` for its progress and report."""
    if not principal.can_write:
        raise ServiceError(403, "forbidden", "this key may only query; ingest needs a read-write key")
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        # the body counts against the namespace's upload quota as it streams, before it is parsed, and
        # against the daily ingest quota too: an upload that would pass it is refused before it is read
        allowed = state.ingest_allowed(principal, int(request.headers.get("content-length") or 0))
        with state.uploads.receiving(principal.namespace, allowed) as upload:
            counted = Request(request.scope, upload.wrap(request.receive))
            async with counted.form(max_files=10_000) as form:
                files = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
                if not files:
                    raise ServiceError(422, "invalid_request", "files: upload at least one file in the field 'files'")
                readers = upload_readers(form.get("readers"))
                folder, names = await run_in_threadpool(state.uploads.save, principal.namespace, files, upload)
        try:
            state.charge(principal, ingest_bytes=upload.bytes)
        except ServiceError:  # over the namespace's ingest quota: the upload goes
            state.uploads.release(folder)
            raise
        source = ", ".join(names) if len(names) <= 3 else f"{names[0]} and {len(names) - 1} more files"
        job = state.jobs.submit(
            principal.namespace,
            folder,
            source,
            release=state.uploads.release,
            submitted_by=principal.key_id,
            options={"ingested_by": principal.key_id, "readers": readers, "as_groups": principal.readers},
        )
        state.note(request, job=job.id, files=len(names), readers=readers)
    elif content_type.startswith("application/json"):
        try:
            body = IngestPathRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors()) from None
        path = server_path(state, principal, body.path)
        readers = None if body.readers is None else checked_readers(body.readers)
        job = state.jobs.submit(
            principal.namespace,
            path,
            body.path,
            submitted_by=principal.key_id,
            options={
                "prune": body.prune,
                "rebuild": body.rebuild,
                "ingested_by": principal.key_id,
                "readers": readers,
                "as_groups": principal.readers,
            },
        )
        state.note(request, job=job.id, server_path=body.path, readers=readers)
    else:
        raise ServiceError(
            415, "unsupported_media_type", "send the files as multipart/form-data, or a server path as application/json"
        )
    return JSONResponse(
        job.view(principal.can_read_server_paths), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"}
    )


def upload_readers(field: object) -> tuple[str, ...] | None:
    """The upload's ``readers`` field (comma-separated groups), checked; None when absent."""
    if field is None:
        return None
    if not isinstance(field, str):
        raise ServiceError(422, "invalid_request", "readers: a comma-separated list of groups, not a file")
    return checked_readers(field.split(","))


def checked_readers(groups: list[str]) -> tuple[str, ...]:
    try:
        return checked_groups(groups)
    except RequestError as exc:
        raise ServiceError(422, "invalid_request", str(exc)) from None


def server_path(state: ServiceState, principal: Principal, asked: str) -> Path:
    """The server folder an admin key asked to ingest, resolved, once it is inside one of the
    namespace's ``service.ingest_roots``; 403 otherwise (the same for a path that does not exist
    outside them, so a key learns nothing of the server's disk)."""
    if not principal.can_read_server_paths:
        raise ServiceError(
            403, "forbidden", "ingesting a path on the server needs an admin key; upload the files instead"
        )
    settings = state.settings.service
    if not (settings.ingest_roots.get(principal.namespace) or settings.ingest_roots.get("*")):
        raise ServiceError(
            403,
            "forbidden",
            "this service takes no server paths for this namespace (service.ingest_roots); upload the files",
        )
    refused = ServiceError(
        403, "forbidden", "the path is not inside a folder this namespace may ingest from (service.ingest_roots)"
    )
    path = Path(asked)
    try:
        if not path.is_absolute() or settings.ingest_root_of(principal.namespace, path) is None:
            raise refused
        resolved = path.resolve()
        found = resolved.exists()
    except (OSError, ValueError):  # a name the file system refuses (too long, a NUL): no such folder
        raise refused from None
    if not found:
        raise ServiceError(400, "bad_corpus", f"path does not exist on the server: {asked}")
    return resolved


@ingests.get("/jobs/{job_id}")
def job(job_id: str, state: State, principal: LookupCaller) -> dict[str, Any]:
    # a caller reading every document may follow any job of its namespace; others only their own
    found = state.jobs.get(job_id, principal.namespace, None if principal.readers is None else principal.key_id)
    if found is None:
        raise ServiceError(404, "unknown_job", f"no job {job_id[:40]!r} in this namespace")
    return found.view(principal.can_read_server_paths)
