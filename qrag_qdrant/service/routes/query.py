"""``POST /v1/query``: evidence, or an answer from it (JSON or a stream), through the result cache
and the model's queue; ``GET /v1/collections`` and ``POST /v1/feedback``.

Every ``/v1/`` route runs as the team whose key ``auth.guard.BodyGuard`` found before the body
was read, confined to that team's namespace. What the routes share lives on ``app.state.service``.
"""

from __future__ import annotations

import functools
import threading
import time
import uuid

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from sse_starlette import EventSourceResponse

from ...api import CollectionInfo
from ...generation.scheduler import CLIENT_LEFT, QueueFull
from ...results import Answer, Evidence
from ...retrieval.conversation import conversation_step
from ...store.filters import DocumentFilter
from ..audit import answer_fields
from ..auth.keys import Principal
from ..cache import normalise
from ..errors import ServiceError, one_line
from ..feedback import AskedQuery
from ..schemas import FeedbackRequest, QueryRequest
from ..state import FeedbackCaller, LookupCaller, QueryCaller, ServiceState, State
from ..streaming import answer_unless_gone, busy, event_stream, shown, stream_answer, unless_gone

#: what a team sees of the service's failure to answer (the evidence is in the response too)
GENERATION_FAILED = "generation_failed"

queries = APIRouter(prefix="/v1")


@queries.get("/collections")
def collections(state: State, principal: LookupCaller) -> list[CollectionInfo]:
    return state.spaces().collections(principal.namespace, principal.readers)


@queries.post("/query", response_model=None)
async def query(
    body: QueryRequest, request: Request, state: State, principal: QueryCaller
) -> JSONResponse | EventSourceResponse:
    namespace, spaces = principal.namespace, state.spaces()
    result, stamp = await evidence_for(state, request, principal, body)
    query_id = uuid.uuid4().hex
    state.recent.add(query_id, AskedQuery.of(namespace, result))
    remember = state.noting_answer(
        request, principal, functools.partial(remember_answer, state, principal, stamp=stamp, documents=body.filter)
    )
    rag = spaces.rag(namespace)
    generate, result = answer_allowed(state, request, principal, body.generate, result)
    if body.stream:
        ping = state.settings.service.stream_ping_seconds
        return event_stream(stream_answer(rag, generate, result, remember, query_id), ping)
    if generate and not isinstance(result, Answer):
        result = await answer_unless_gone(request, rag, result)
        remember(result)
        if result.error is not None and not result.answer:
            return JSONResponse(
                {
                    "code": GENERATION_FAILED,
                    "message": one_line(result.error),
                    "query_id": query_id,
                    **shown(result).model_dump(mode="json", exclude={"error"}),  # its mark_reason says it too
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
    state.note_question(request, body)
    state.charge(principal, queries=1)
    result, stamp = await retrieved_unless_gone(request, state, principal, body)
    if isinstance(result, Answer):
        state.note(request, answer=answer_fields(result) | {"cached": True})
    return result, stamp


async def retrieved_unless_gone(
    request: Request, state: ServiceState, principal: Principal, body: QueryRequest
) -> tuple[Evidence, tuple[int, ...]]:
    """``cached_or_retrieved`` as one request's work: a client that leaves meanwhile takes the model
    calls retrieval makes for it (a rewrite, a split, expansions) out of the model's queue, or stops
    them (``scheduler.CLIENT_LEFT``, seen by the worker thread, which runs in a copy of this context)."""
    gone = threading.Event()
    token = CLIENT_LEFT.set(gone)
    try:
        return await unless_gone(request, gone, lambda: cached_or_retrieved(state, principal, body))
    finally:
        CLIENT_LEFT.reset(token)


def answer_allowed(
    state: ServiceState, request: Request, principal: Principal, generate: bool, result: Evidence
) -> tuple[bool, Evidence]:
    """Whether the model answers, and what is answered from: a question to answer takes a place in
    the model's queue (503 when it is full) and an answer from the caller's quota (429; with
    ``service.quota_fallback = "evidence"``, the evidence alone, with a warning that says why)."""
    if not generate or isinstance(result, Answer) or result.abstained:
        return generate, result
    room_for_an_answer(state, principal.namespace)
    if state.charged_answer(request, principal):
        return True, result
    return False, Answer.from_evidence(result, warnings=[OVER_QUOTA])


#: the warning on the evidence sent instead of an answer over the quota
OVER_QUOTA = "no answer: this key's answer quota is spent; here is the evidence (service.quotas)"


def room_for_an_answer(state: ServiceState, namespace: str) -> None:
    """A 503 with ``Retry-After`` now, before a response starts, when the model's queue is full or
    the namespace holds its share of it."""
    try:
        state.scheduler.check_room(namespace)
    except QueueFull as full:
        raise busy(full) from None


def cached_or_retrieved(
    state: ServiceState, principal: Principal, body: QueryRequest
) -> tuple[Evidence, tuple[int, ...]]:
    """The cached result of the same question asked by a caller who may read the same documents,
    or a fresh retrieval (then cached)."""
    spaces, cache, namespace = state.spaces(), state.cache, principal.namespace
    cached_for = (*cache_key(principal), body.filter)
    started = time.perf_counter()
    # taken before retrieval, so an ingest that lands meanwhile leaves the entry stale; with the
    # cache off there is nothing to compare, and no manifests are read
    stamp = spaces.stamp(namespace) if cache.enabled else ()
    asked = spaces.asked(namespace, body.question, body.history)  # a follow-up's rewrite: a model call
    question = normalise(asked.searched_for)
    wanted = "answer" if body.generate else "evidence"
    cached = cache.get((*cached_for, question, wanted), stamp) or (
        cache.get((*cached_for, question, "evidence"), stamp) if body.generate else None
    )
    lookup_ms = round((time.perf_counter() - started) * 1000, 3)
    if cached is not None:
        asked_now = {"question": asked.question, "conversation": conversation_step(asked)}
        return cached.model_copy(update={"timings_ms": {"cache_hit": lookup_ms}, **asked_now}), stamp
    result = spaces.retrieve(namespace, asked, principal.readers, body.filter)
    result.timings_ms["cache_miss"] = lookup_ms
    cache.put((*cached_for, question, "evidence"), stamp, result)
    return result, stamp


def cache_key(principal: Principal) -> tuple[str, tuple[str, ...] | None]:
    """Whose results an entry is: the namespace and the groups read as, so a result is served only
    to callers who may read exactly the same documents."""
    return principal.namespace, principal.readers


def remember_answer(
    state: ServiceState,
    principal: Principal,
    answer: Answer,
    stamp: tuple[int, ...],
    documents: DocumentFilter | None = None,
) -> None:
    """A complete, checked answer is reused for the same question (and filter) until the index changes."""
    if answer.complete and answer.error is None and (answer.answer is not None or answer.abstained):
        state.cache.put((*cache_key(principal), documents, normalise(answer.searched), "answer"), stamp, answer)


@queries.post("/feedback", status_code=201)
def feedback(body: FeedbackRequest, state: State, principal: FeedbackCaller) -> dict[str, str]:
    asked = state.recent.get(body.query_id)
    if asked is None or asked.namespace != principal.namespace:  # another team's ids do not exist for you
        raise ServiceError(404, "unknown_query", f"no recent query {body.query_id[:40]!r} in this namespace")
    assert state.feedback is not None
    state.feedback.add(body.query_id, asked, body.rating, body.comment)
    return {"query_id": body.query_id, "rating": body.rating}
