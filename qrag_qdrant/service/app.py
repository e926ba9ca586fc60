"""The FastAPI application: the embedder, the store and the generation backend stay warm, and
every request is confined to the namespace its bearer key names.

Errors are JSON, ``{"code", "message"}``, with the CLI's taxonomy; no traceback ever leaves.
"""

from __future__ import annotations

import json
import queue
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from ..api import CollectionInfo, QuorumRAG
from ..config import Settings
from ..embedding import DenseEmbedder
from ..errors import (ConfigError, CorpusError, GenerationError, NothingIngestedError, QragError, QuestionError,
                      StoreError, StoreInUseError)
from ..evidence import Answer, Evidence
from ..ingest import IngestProgress, IngestReport
from .auth import KeyFile, Principal
from .cache import ResultCache, normalise
from .feedback import AskedQuery, FeedbackFile, RecentQueries
from .jobs import IngestJobs

#: the web page and its script and style, shipped in the package
WEB = resources.files(__package__) / "static"

#: the CLI's error classes as HTTP statuses and stable codes, most specific first
ERROR_CODES: tuple[tuple[type[QragError], int, str], ...] = (
    (QuestionError, 400, "bad_question"),
    (CorpusError, 400, "bad_corpus"),
    (NothingIngestedError, 404, "nothing_ingested"),
    (StoreInUseError, 409, "store_in_use"),
    (StoreError, 503, "store_unavailable"),
    (GenerationError, 502, "generation_failed"),
    (ConfigError, 500, "config"),
    (QragError, 500, "error"),
)


class ServiceError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    generate: bool = Field(True, description="answer with the generation backend; false: the evidence only")
    stream: bool = Field(False, description="Server-Sent Events: evidence, then answer tokens, then done")


class IngestPathRequest(BaseModel):
    """An admin's ingest of a folder on the server's own disk."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(description="a folder or file on the server")
    prune: bool = Field(False, description="remove the chunks of files that are gone from the folder")
    rebuild: bool = Field(False, description="build fresh collections, then switch to them at once")


#: POST /v1/ingest reads its body itself (files, or a path as JSON); this documents both
INGEST_BODY = {"requestBody": {"required": True, "content": {
    "multipart/form-data": {"schema": {"type": "object", "required": ["files"], "properties": {
        "files": {"type": "array", "items": {"type": "string", "format": "binary"},
                  "description": "documents; each file name (may hold folders) becomes its source"}}}},
    "application/json": {"schema": IngestPathRequest.model_json_schema()},
}}}


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_id: str
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=2000)


class Namespaces:
    """One warm QuorumRAG per namespace, opened on first use, sharing one embedder. Each opens
    its own store bound to its namespace, so the store itself refuses other teams' collections.
    Retrievals of a namespace take turns under its lock (the embedded engine is not promised
    to be thread-safe for concurrent searches); an ingest job and answer generation run beside
    them (Edge served 6,218 searches during an ingest without an error)."""

    def __init__(self, settings: Settings, embedder: DenseEmbedder):
        self.settings, self.embedder = settings, embedder
        self._lock = threading.Lock()
        self._rags: dict[str, tuple[QuorumRAG, threading.Lock]] = {}

    def _open(self, namespace: str) -> tuple[QuorumRAG, threading.Lock]:
        with self._lock:
            if namespace not in self._rags:
                settings = self.settings.model_copy(update={"namespace": namespace})
                self._rags[namespace] = (QuorumRAG(settings, embedder=self.embedder), threading.Lock())
            return self._rags[namespace]

    def rag(self, namespace: str) -> QuorumRAG:
        return self._open(namespace)[0]

    def retrieve(self, namespace: str, question: str) -> Evidence:
        rag, lock = self._open(namespace)
        with lock:
            return rag.retrieve(question)

    def ingest(self, namespace: str, path: Path, progress: IngestProgress, prune: bool = False,
               rebuild: bool = False) -> IngestReport:
        """Outside the retrieval lock: queries go on during an ingest and see the old index until
        each document's new version is complete."""
        return self.rag(namespace).ingest(path, prune=prune, rebuild=rebuild, progress=progress)

    def collections(self, namespace: str) -> list[CollectionInfo]:
        rag, lock = self._open(namespace)
        with lock:
            return rag.collections()

    def stamp(self, namespace: str) -> tuple[int, ...]:
        """The index stamps of the namespace's collections: they change with every ingest."""
        rag, lock = self._open(namespace)
        with lock:
            manifests = [rag.store.manifest(spec.name) for spec in rag.settings.collections]
        return tuple(m.indexed if m is not None else -1 for m in manifests)

    def store_reachable(self) -> bool:
        rag, lock = self._open(self.settings.namespace)
        with lock:
            try:
                rag.store.list_collections(self.settings.namespace)
                return True
            except QragError:
                return False

    def close(self) -> None:
        for rag, _ in self._rags.values():
            rag.close()


def one_line(message: str) -> str:
    return " ".join(message.split())[:500]


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": one_line(message)}, status_code=status)


class BodyLimit:
    """413 from the Content-Length header, before the body is read. Plain ASGI: Starlette's
    ``@app.middleware`` wraps every request in extra tasks and streams, which a warm query pays."""

    def __init__(self, app: ASGIApp, limit_of: Callable[[str], int]):
        self.app, self.limit_of = app, limit_of

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length")
            limit = self.limit_of(scope["path"])
            if length is not None and (not length.isdigit() or int(length) > limit):
                response = error_response(413, "body_too_large", f"the request body is larger than {limit} bytes")
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def error_of(exc: BaseException) -> tuple[int, str, str]:
    """An exception as the service's error: status, stable code, one-line message."""
    if isinstance(exc, QragError):
        status, code = next((s, c) for kind, s, c in ERROR_CODES if isinstance(exc, kind))
        return status, code, one_line(str(exc))
    return 500, "internal", f"unexpected {type(exc).__name__}"


def upload_name(filename: str | None) -> PurePosixPath:
    """An uploaded file's name as a relative path inside the job's folder, or a 422."""
    name = PurePosixPath((filename or "").replace("\\", "/"))
    if not name.parts or name.is_absolute() or any(part in ("..", ".") or part.startswith(".") for part in name.parts):
        raise ServiceError(422, "invalid_request", f"file name {filename!r} is not a plain relative name")
    return name


def save_uploads(files: list[UploadFile]) -> tuple[Path, list[str]]:
    """The uploaded files written into a fresh folder, which the job removes when it ends."""
    names = [upload_name(f.filename) for f in files]
    if len(set(names)) != len(names):
        raise ServiceError(422, "invalid_request", "two uploaded files have the same name")
    folder = Path(tempfile.mkdtemp(prefix="qrag-upload-"))
    for name, upload in zip(names, files):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        with (folder / name).open("wb") as out:
            shutil.copyfileobj(upload.file, out)
    return folder, [str(name) for name in names]


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def caller(request: Request) -> Principal:
    """The team behind the request's bearer key."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    keys: KeyFile = request.app.state.keys
    found = keys.principal(key.strip()) if scheme.lower() == "bearer" and key.strip() else None
    if found is None:
        raise ServiceError(401, "unauthorized", "a valid bearer key is needed: Authorization: Bearer <key>")
    return found


Caller = Annotated[Principal, Depends(caller)]


def create_app(settings: Settings, keys: KeyFile | None = None, embedder: DenseEmbedder | None = None) -> FastAPI:
    keys = keys if keys is not None else KeyFile.load(settings.service.keys)
    state: dict[str, Namespaces] = {}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        model = embedder or DenseEmbedder(settings.embedding)
        model.embed(["warm up"])  # load the models for documents and questions now, so /readyz means it
        model.query_embed("warm up")
        state["namespaces"] = app.state.namespaces = Namespaces(settings, model)
        yield
        jobs.close()  # jobs in flight finish before the store closes
        state.pop("namespaces").close()

    app = FastAPI(title="qrag-qdrant", lifespan=lifespan,
                  description="Answers only from evidence that several retrievers agree on, or abstains.")
    app.state.keys = keys

    app.add_middleware(BodyLimit, limit_of=lambda path: settings.service.max_upload_bytes
                       if path == "/v1/ingest" else settings.service.max_body_bytes)

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(QragError)
    async def qrag_error(_: Request, exc: QragError) -> JSONResponse:
        return error_response(*error_of(exc))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}"
                             for e in exc.errors())
        return error_response(422, "invalid_request", problems)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_response(exc.status_code, "not_found" if exc.status_code == 404 else "http_error",
                              str(exc.detail))

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        return error_response(*error_of(exc))

    def namespaces() -> Namespaces:
        return state["namespaces"]

    jobs = IngestJobs(lambda namespace, path, progress, options: namespaces().ingest(namespace, path, progress,
                                                                                     **options),
                      lambda exc: error_of(exc)[1:])

    @app.get("/healthz")
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz")
    def readyz() -> JSONResponse:
        ready = "namespaces" in state
        checks = {"embedder": ready, "store": ready and namespaces().store_reachable()}
        return JSONResponse({"ready": all(checks.values()), **checks}, status_code=200 if all(checks.values()) else 503)

    @app.get("/v1/collections")
    def collections(caller: Caller) -> list[CollectionInfo]:
        return namespaces().collections(caller.namespace)

    cache: ResultCache[Evidence] = ResultCache(settings.service.cache_entries)
    recent, feedback_file = RecentQueries(), FeedbackFile(settings.store)

    @app.get("/metrics", response_class=PlainTextResponse)
    def metrics() -> str:
        counters = cache.counters
        return "".join(f"# TYPE qrag_cache_{name}_total counter\nqrag_cache_{name}_total {value}\n"
                       for name, value in (("hits", counters.hits), ("misses", counters.misses),
                                           ("stale", counters.stale)))

    @app.post("/v1/query", response_model=None)
    def query(body: QueryRequest, caller: Caller) -> JSONResponse | StreamingResponse:
        spaces, namespace = namespaces(), caller.namespace
        rag = spaces.rag(namespace)
        wanted = "answer" if body.generate else "evidence"
        started = time.perf_counter()
        # taken before retrieval, so an ingest that lands meanwhile leaves the entry stale; with
        # the cache off there is nothing to compare, and no manifests are read
        stamp = spaces.stamp(namespace) if cache.enabled else ()
        question = normalise(body.question)
        cached = cache.get((namespace, question, wanted), stamp) or (
            cache.get((namespace, question, "evidence"), stamp) if body.generate else None)
        lookup_ms = (time.perf_counter() - started) * 1000
        if cached is not None:
            result = cached.model_copy(update={"timings_ms": {"cache_hit": round(lookup_ms, 3)}})
        else:
            result = spaces.retrieve(namespace, body.question)
            result.timings_ms["cache_miss"] = round(lookup_ms, 3)
            cache.put((namespace, question, "evidence"), stamp, result)
        query_id = uuid.uuid4().hex
        recent.add(query_id, AskedQuery.of(namespace, result))
        if body.stream:
            return StreamingResponse(stream_answer(rag, body, result, lambda a: remember(namespace, a, stamp),
                                                   query_id), media_type="text/event-stream")
        if body.generate and not isinstance(result, Answer):
            result = rag.answer(body.question, evidence=result)
            remember(namespace, result, stamp)
        # pydantic's own serialiser, not FastAPI's encoder: a quarter of a millisecond less per query
        return JSONResponse({"query_id": query_id, **result.model_dump(mode="json")})

    @app.post("/v1/feedback", status_code=201)
    def feedback(body: FeedbackRequest, caller: Caller) -> dict[str, str]:
        asked = recent.get(body.query_id)
        if asked is None or asked.namespace != caller.namespace:  # another team's ids do not exist for you
            raise ServiceError(404, "unknown_query", f"no recent query {body.query_id[:40]!r} in this namespace")
        feedback_file.add(body.query_id, asked, body.rating, body.comment)
        return {"query_id": body.query_id, "rating": body.rating}

    @app.post("/v1/ingest", status_code=202, openapi_extra=INGEST_BODY)
    async def ingest(request: Request, caller: Caller) -> JSONResponse:
        """Start an ingest job: uploaded files (multipart, field ``files``), or for an admin key a
        path on the server (JSON). Poll ``GET /v1/jobs/{id}`` for its progress and report."""
        if not caller.can_write:
            raise ServiceError(403, "forbidden", "this key may only query; ingest needs a read-write key")
        content_type = request.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            async with request.form(max_files=10_000) as form:
                files = [f for f in form.getlist("files") if isinstance(f, UploadFile)]
                if not files:
                    raise ServiceError(422, "invalid_request", "files: upload at least one file in the field 'files'")
                folder, names = await run_in_threadpool(save_uploads, files)
            source = ", ".join(names) if len(names) <= 3 else f"{names[0]} and {len(names) - 1} more files"
            job = jobs.submit(caller.namespace, folder, source, remove_after=True)
        elif content_type.startswith("application/json"):
            try:
                body = IngestPathRequest.model_validate_json(await request.body())
            except ValidationError as exc:
                raise RequestValidationError(exc.errors()) from None
            if not caller.can_read_server_paths:
                raise ServiceError(403, "forbidden", "ingesting a path on the server needs an admin key; "
                                   "upload the files instead")
            if not Path(body.path).exists():
                raise ServiceError(400, "bad_corpus", f"path does not exist on the server: {body.path}")
            job = jobs.submit(caller.namespace, Path(body.path), body.path, remove_after=False,
                              options={"prune": body.prune, "rebuild": body.rebuild})
        else:
            raise ServiceError(415, "unsupported_media_type",
                               "send the files as multipart/form-data, or a server path as application/json")
        return JSONResponse(job.view(), status_code=202, headers={"Location": f"/v1/jobs/{job.id}"})

    @app.get("/v1/jobs/{job_id}")
    def job(job_id: str, caller: Caller) -> dict[str, Any]:
        found = jobs.get(job_id, caller.namespace)
        if found is None:
            raise ServiceError(404, "unknown_job", f"no job {job_id[:40]!r} in this namespace")
        return found.view()

    @app.get("/", include_in_schema=False)
    def page() -> FileResponse:
        return FileResponse(str(WEB / "index.html"))

    app.mount("/static", StaticFiles(directory=str(WEB)), name="static")

    def remember(namespace: str, answer: Answer, stamp: tuple[int, ...]) -> None:
        """A complete, checked answer is reused for the same question until the index changes."""
        if answer.complete and answer.error is None and (answer.answer is not None or answer.abstained):
            cache.put((namespace, normalise(answer.question), "answer"), stamp, answer)

    return app


def stream_answer(rag: QuorumRAG, body: QueryRequest, result: Evidence,
                  on_done: Callable[[Answer], None], query_id: str) -> Iterator[str]:
    """The evidence (with the query's id, for feedback), each answer token as it arrives, then the
    checked answer. A cached answer arrives as one token."""
    evidence = Evidence(**{k: v for k, v in result.model_dump().items() if k in Evidence.model_fields})
    yield sse("evidence", {"query_id": query_id, **evidence.model_dump()})
    if isinstance(result, Answer):
        if result.answer:
            yield sse("token", {"text": result.answer})
        yield sse("done", {"query_id": query_id, **result.model_dump()})
        return
    if result.abstained or not body.generate:
        yield sse("done", {"query_id": query_id, **Answer(**result.model_dump()).model_dump()})
        return
    tokens: queue.Queue[str | Answer] = queue.Queue()

    def generate() -> None:
        try:
            answer = rag.answer(body.question, evidence=result, on_token=tokens.put)
            on_done(answer)
        except Exception as exc:  # noqa: BLE001 - reported to the client as the final event
            answer = Answer(**result.model_dump())
            answer.error = f"unexpected {type(exc).__name__}"
        tokens.put(answer)

    threading.Thread(target=generate, name="qrag-answer", daemon=True).start()
    while not isinstance(item := tokens.get(), Answer):
        yield sse("token", {"text": item})
    yield sse("done", {"query_id": query_id, **item.model_dump()})
