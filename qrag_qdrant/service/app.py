"""The FastAPI application: the embedder, the store and the generation backend stay warm, and
every request is confined to the namespace its bearer key names.

Errors are JSON, ``{"code", "message"}``, with the CLI's taxonomy; no traceback ever leaves.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..api import CollectionInfo, QuorumRAG
from ..config import Settings
from ..embedding import DenseEmbedder
from ..errors import (ConfigError, GenerationError, NothingIngestedError, QragError, QuestionError, StoreError,
                      StoreInUseError)
from ..evidence import Answer, Evidence
from .auth import KeyFile, Principal
from .cache import ResultCache, normalise
from .feedback import AskedQuery, FeedbackFile, RecentQueries

#: the CLI's error classes as HTTP statuses and stable codes, most specific first
ERROR_CODES: tuple[tuple[type[QragError], int, str], ...] = (
    (QuestionError, 400, "bad_question"),
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


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query_id: str
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=2000)


class Namespaces:
    """One warm QuorumRAG per namespace, opened on first use, sharing one embedder. Each opens
    its own store bound to its namespace, so the store itself refuses other teams' collections.
    Retrieval holds the namespace's lock (the embedded engine is not promised to be
    thread-safe); answer generation, the slow part, runs outside it."""

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


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": " ".join(message.split())[:500]}, status_code=status)


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
        model.embed(["warm up"])  # load the model now, so /readyz means it
        state["namespaces"] = app.state.namespaces = Namespaces(settings, model)
        yield
        state.pop("namespaces").close()

    app = FastAPI(title="qrag-qdrant", lifespan=lifespan,
                  description="Answers only from evidence that several retrievers agree on, or abstains.")
    app.state.keys = keys

    @app.middleware("http")
    async def limit_body(request: Request, call_next):  # noqa: ANN001, ANN202 - Starlette's signature
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > settings.service.max_body_bytes):
            return error_response(413, "body_too_large",
                                  f"the request body is larger than {settings.service.max_body_bytes} bytes")
        return await call_next(request)

    @app.exception_handler(ServiceError)
    async def service_error(_: Request, exc: ServiceError) -> JSONResponse:
        return error_response(exc.status, exc.code, exc.message)

    @app.exception_handler(QragError)
    async def qrag_error(_: Request, exc: QragError) -> JSONResponse:
        status, code = next((s, c) for kind, s, c in ERROR_CODES if isinstance(exc, kind))
        return error_response(status, code, str(exc))

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
        return error_response(500, "internal", f"unexpected {type(exc).__name__}")

    def namespaces() -> Namespaces:
        return state["namespaces"]

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
    def query(body: QueryRequest, caller: Caller) -> dict[str, Any] | StreamingResponse:
        spaces, namespace = namespaces(), caller.namespace
        rag = spaces.rag(namespace)
        wanted = "answer" if body.generate else "evidence"
        started = time.perf_counter()
        stamp = spaces.stamp(namespace)
        cached = cache.get((namespace, normalise(body.question), wanted), lambda: stamp) or (
            cache.get((namespace, normalise(body.question), "evidence"), lambda: stamp) if body.generate else None)
        lookup_ms = (time.perf_counter() - started) * 1000
        if cached is not None:
            result = cached.model_copy(update={"timings_ms": {"cache_hit": round(lookup_ms, 3)}})
        else:
            result = spaces.retrieve(namespace, body.question)
            result.timings_ms["cache_miss"] = round(lookup_ms, 3)
            cache.put((namespace, normalise(body.question), "evidence"), stamp, result)
        query_id = uuid.uuid4().hex
        recent.add(query_id, AskedQuery.of(namespace, result))
        if body.stream:
            return StreamingResponse(stream_answer(rag, body, result, lambda a: remember(namespace, a, stamp),
                                                   query_id), media_type="text/event-stream")
        if body.generate and not isinstance(result, Answer):
            result = rag.answer(body.question, evidence=result)
            remember(namespace, result, stamp)
        return {"query_id": query_id, **result.model_dump()}

    @app.post("/v1/feedback", status_code=201)
    def feedback(body: FeedbackRequest, caller: Caller) -> dict[str, str]:
        asked = recent.get(body.query_id)
        if asked is None or asked.namespace != caller.namespace:  # another team's ids do not exist for you
            raise ServiceError(404, "unknown_query", f"no recent query {body.query_id[:40]!r} in this namespace")
        feedback_file.add(body.query_id, asked, body.rating, body.comment)
        return {"query_id": body.query_id, "rating": body.rating}

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
