"""The service's routes, one router per area; ``app.create_app`` assembles them.

Every ``/v1/`` route runs as the team whose key ``limits.BodyGuard`` found before the body was
read, confined to that team's namespace. What the routes share lives on ``app.state.service``.
"""

from __future__ import annotations

import functools
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from fastapi import APIRouter, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import UploadFile

from ..api import CollectionInfo
from ..config_service import OidcSettings
from ..coordinator.conversation import conversation_step
from ..evidence import Answer, Evidence
from ..generation.scheduler import QueueFull
from .audit import answer_fields
from .auth import Principal
from .cache import normalise
from .errors import ServiceError, one_line
from .feedback import AskedQuery
from .generation_metrics import queue_exposition
from .state import Caller, FeedbackCaller, IngestCaller, QueryCaller, ServiceState, State
from .streaming import answer_unless_gone, busy, shown, stream_answer
from .usage import usage_exposition

#: what a team sees of the service's failure to answer (the evidence is in the response too)
GENERATION_FAILED = "generation_failed"


class HistoryTurn(BaseModel):
    """One earlier message of the conversation; an assistant turn is what the client says was
    answered (unverified: it is only read to make the question stand-alone)."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    history: list[HistoryTurn] = Field(
        default_factory=list,
        description="the conversation's earlier turns, oldest first: a follow-up is searched as a stand-alone "
        "question made from them (retrieval.conversation; bounded by retrieval.max_history_*)",
    )
    generate: bool = Field(True, description="answer with the generation backend; false: the evidence only")
    stream: bool = Field(False, description="Server-Sent Events: evidence, then answer tokens, then done")


class IngestPathRequest(BaseModel):
    """An admin's ingest of a folder on the server's own disk."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="a folder or file on the server")
    prune: bool = Field(False, description="remove the chunks of files that are gone from the folder")
    rebuild: bool = Field(False, description="build fresh collections, then switch to them at once")


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(max_length=64)
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=2000)


#: POST /v1/ingest reads its body itself (files, or a path as JSON); this documents both
INGEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["files"],
                    "properties": {
                        "files": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": "documents; each file name (may hold folders) becomes its source",
                        }
                    },
                }
            },
            "application/json": {"schema": IngestPathRequest.model_json_schema()},
        },
    }
}

health = APIRouter()
queries = APIRouter(prefix="/v1")
ingests = APIRouter(prefix="/v1")


@health.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz")
def readyz(state: State) -> JSONResponse:
    ready = state.namespaces is not None
    checks = {"embedder": ready, "store": ready and state.spaces().store_reachable()}
    return JSONResponse({"ready": all(checks.values()), **checks}, status_code=200 if all(checks.values()) else 503)


@health.get("/metrics", response_class=PlainTextResponse)
def metrics(state: State) -> str:
    """Service-wide counters; per namespace only with service.metrics_per_namespace, which names the teams."""
    counters = state.cache.counters
    return (
        "".join(
            f"# HELP qrag_cache_{name}_total result cache {name}, all namespaces together\n"
            f"# TYPE qrag_cache_{name}_total counter\nqrag_cache_{name}_total {value}\n"
            for name, value in (("hits", counters.hits), ("misses", counters.misses), ("stale", counters.stale))
        )
        + state.generation.exposition()
        + queue_exposition(state.scheduler.stats)
        + (
            usage_exposition(state.usage)
            if state.usage is not None and state.settings.service.metrics_per_namespace
            else ""
        )
    )


@queries.get("/collections")
def collections(state: State, principal: Caller) -> list[CollectionInfo]:
    return state.spaces().collections(principal.namespace)


@queries.post("/query", response_model=None)
async def query(
    body: QueryRequest, request: Request, state: State, principal: QueryCaller
) -> JSONResponse | StreamingResponse:
    namespace, spaces = principal.namespace, state.spaces()
    result, stamp = await evidence_for(state, request, principal, body)
    query_id = uuid.uuid4().hex
    state.recent.add(query_id, AskedQuery.of(namespace, result))
    remember = state.noting_answer(
        request, principal, functools.partial(remember_answer, state, namespace, stamp=stamp)
    )
    rag = spaces.rag(namespace)
    generate, result = answer_allowed(state, request, principal, body.generate, result)
    if body.stream:
        return StreamingResponse(
            stream_answer(rag, generate, result, remember, query_id), media_type="text/event-stream"
        )
    if generate and not isinstance(result, Answer):
        result = await answer_unless_gone(request, rag, result)
        remember(result)
        if result.error is not None and not result.answer:
            return JSONResponse(
                {
                    "code": GENERATION_FAILED,
                    "message": one_line(result.error),
                    "query_id": query_id,
                    **result.model_dump(mode="json", exclude={"error"}),
                },
                status_code=502,
            )
    # pydantic's own serialiser, not FastAPI's encoder: a quarter of a millisecond less per query
    return JSONResponse({"query_id": query_id, **shown(result).model_dump(mode="json")})


async def evidence_for(
    state: ServiceState, request: Request, principal: Principal, body: QueryRequest
) -> tuple[Evidence, tuple[int, ...]]:
    """``cached_or_retrieved`` on a worker thread, once the question is taken from the caller's
    quota, with the question (and a cached answer) noted for the request's audit line."""
    namespace = principal.namespace
    state.note_question(request, body)
    state.charge(principal, queries=1)
    result, stamp = await run_in_threadpool(cached_or_retrieved, state, namespace, body)
    if isinstance(result, Answer):
        state.note(request, answer=answer_fields(result) | {"cached": True})
    return result, stamp


def answer_allowed(
    state: ServiceState, request: Request, principal: Principal, generate: bool, result: Evidence
) -> tuple[bool, Evidence]:
    """Whether the model answers, and what is answered from: a question to answer takes a place in
    the model's queue (503 when it is full) and an answer from the caller's quota (429; with
    ``service.quota_fallback = "evidence"``, the evidence alone, with a warning that says why)."""
    if not generate or isinstance(result, Answer) or result.abstained:
        return generate, result
    room_for_an_answer(state)
    if state.charged_answer(request, principal):
        return True, result
    return False, Answer.from_evidence(result, warnings=[OVER_QUOTA])


#: the warning on the evidence sent instead of an answer over the quota
OVER_QUOTA = "no answer: this key's answer quota is spent; here is the evidence (service.quotas)"


def room_for_an_answer(state: ServiceState) -> None:
    """A 503 with ``Retry-After`` now, before a response starts, when the model's queue is full."""
    try:
        state.scheduler.check_room()
    except QueueFull as full:
        raise busy(full) from None


def cached_or_retrieved(state: ServiceState, namespace: str, body: QueryRequest) -> tuple[Evidence, tuple[int, ...]]:
    """The cached result of the same question, or a fresh retrieval (then cached)."""
    spaces, cache = state.spaces(), state.cache
    started = time.perf_counter()
    # taken before retrieval, so an ingest that lands meanwhile leaves the entry stale; with the
    # cache off there is nothing to compare, and no manifests are read
    stamp = spaces.stamp(namespace) if cache.enabled else ()
    asked = spaces.asked(namespace, body.question, body.history)  # a follow-up's rewrite: a model call
    question = normalise(asked.searched_for)
    wanted = "answer" if body.generate else "evidence"
    cached = cache.get((namespace, question, wanted), stamp) or (
        cache.get((namespace, question, "evidence"), stamp) if body.generate else None
    )
    lookup_ms = round((time.perf_counter() - started) * 1000, 3)
    if cached is not None:
        asked_now = {"question": asked.question, "conversation": conversation_step(asked)}
        return cached.model_copy(update={"timings_ms": {"cache_hit": lookup_ms}, **asked_now}), stamp
    result = spaces.retrieve(namespace, asked)
    result.timings_ms["cache_miss"] = lookup_ms
    cache.put((namespace, question, "evidence"), stamp, result)
    return result, stamp


def remember_answer(state: ServiceState, namespace: str, answer: Answer, stamp: tuple[int, ...]) -> None:
    """A complete, checked answer is reused for the same question until the index changes."""
    if answer.complete and answer.error is None and (answer.answer is not None or answer.abstained):
        state.cache.put((namespace, normalise(answer.searched), "answer"), stamp, answer)


@queries.post("/feedback", status_code=201)
def feedback(body: FeedbackRequest, state: State, principal: FeedbackCaller) -> dict[str, str]:
    asked = state.recent.get(body.query_id)
    if asked is None or asked.namespace != principal.namespace:  # another team's ids do not exist for you
        raise ServiceError(404, "unknown_query", f"no recent query {body.query_id[:40]!r} in this namespace")
    assert state.feedback is not None
    state.feedback.add(body.query_id, asked, body.rating, body.comment)
    return {"query_id": body.query_id, "rating": body.rating}


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


def page_router(web: Any, oidc: OidcSettings) -> APIRouter:
    """The web page, its sign-in settings, and Swagger UI's files from the pinned
    ``swagger-ui-bundle-v2`` wheel (no CDN)."""
    router = APIRouter(include_in_schema=False)

    @router.get("/sign-in.json")
    def sign_in() -> dict[str, str]:
        """What the page needs to sign in through the identity provider; 404 when it cannot."""
        if not oidc.page_signs_in:
            raise ServiceError(404, "not_found", "this service signs in with team keys only")
        return {"issuer": str(oidc.issuer), "client_id": str(oidc.client_id), "scope": oidc.scope}

    @router.get("/")
    def page() -> FileResponse:
        return FileResponse(str(web / "index.html"))

    @router.get("/docs")
    def docs() -> FileResponse:
        return FileResponse(str(web / "docs.html"))

    return router
