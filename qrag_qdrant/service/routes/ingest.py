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

from ..errors import ServiceError
from ..schemas import INGEST_BODY, IngestPathRequest
from ..state import Caller, IngestCaller, State

ingests = APIRouter(prefix="/v1")


@ingests.post("/ingest", status_code=202, openapi_extra=INGEST_BODY)
async def ingest(request: Request, state: State, principal: IngestCaller) -> JSONResponse:
    """Start an ingest job: uploaded files (multipart, field ``files``), or for an admin key a
    path on the server (JSON). Poll ``GET /v1/jobs/{id}`` for its progress and report."""
    if not principal.can_write:
        raise ServiceError(403, "forbidden", "this key may only query; ingest needs a read-write key")
    content_type = request.headers.get("content-type", "")
    if content_type.startswith("multipart/form-data"):
        # the body counts against the namespace's upload quota as it streams, before it is parsed
        with state.uploads.receiving(principal.namespace) as upload:
            counted = Request(request.scope, upload.wrap(request.receive))
            async with counted.form(max_files=10_000) as form:
                files = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
                if not files:
                    raise ServiceError(422, "invalid_request", "files: upload at least one file in the field 'files'")
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
            options={"ingested_by": principal.key_id},
        )
        state.note(request, job=job.id, files=len(names))
    elif content_type.startswith("application/json"):
        try:
            body = IngestPathRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            raise RequestValidationError(exc.errors()) from None
        if not principal.can_read_server_paths:
            raise ServiceError(
                403, "forbidden", "ingesting a path on the server needs an admin key; upload the files instead"
            )
        if not Path(body.path).exists():
            raise ServiceError(400, "bad_corpus", f"path does not exist on the server: {body.path}")
        job = state.jobs.submit(
            principal.namespace,
            Path(body.path),
            body.path,
            options={"prune": body.prune, "rebuild": body.rebuild, "ingested_by": principal.key_id},
        )
        state.note(request, job=job.id, server_path=body.path)
    else:
        raise ServiceError(
            415, "unsupported_media_type", "send the files as multipart/form-data, or a server path as application/json"
        )
    return JSONResponse(
        job.view(principal.can_read_server_paths), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"}
    )


@ingests.get("/jobs/{job_id}")
def job(job_id: str, state: State, principal: Caller) -> dict[str, Any]:
    found = state.jobs.get(job_id, principal.namespace)
    if found is None:
        raise ServiceError(404, "unknown_job", f"no job {job_id[:40]!r} in this namespace")
    return found.view(principal.can_read_server_paths)
