"""Answers as the service delivers them: waiting their turn for the model, streamed as Server-Sent
Events or whole, and stopped (or taken out of the queue) when their client goes away."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, TypeVar

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from ..api import QuorumRAG
from ..generation.scheduler import QueueFull
from ..results import Answer, Evidence
from .errors import ServiceError, one_line

log = logging.getLogger(__name__)

EvidenceT = TypeVar("EvidenceT", bound=Evidence)
T = TypeVar("T")


def busy(full: QueueFull) -> ServiceError:
    return ServiceError(503, "model_busy", str(full), headers={"Retry-After": str(full.retry_after)})


def shown(result: EvidenceT) -> EvidenceT:
    """What a team may read of a result: an error message without credentials or server paths."""
    if isinstance(result, Answer) and result.error:
        return result.model_copy(update={"error": one_line(result.error)})
    return result


async def answer_unless_gone(request: Request, rag: QuorumRAG, evidence: Evidence) -> Answer:
    """The answer, generated on a worker thread; a client that disconnects meanwhile stops the
    model at its next token (the thread's answer is then incomplete, and nobody reads it)."""
    cancelled = threading.Event()
    try:
        return await unless_gone(
            request, cancelled, lambda: rag.answer(evidence.question, evidence=evidence, cancelled=cancelled)
        )
    except QueueFull as full:  # filled up between the check and the answer's turn
        raise busy(full) from None


async def unless_gone(request: Request, gone: threading.Event, work: Callable[[], T]) -> T:
    """``work`` on a worker thread (in a copy of this context), with ``gone`` set if the client
    disconnects meanwhile: waiting for the model, the work leaves the queue; at it, the model stops."""
    working = asyncio.ensure_future(run_in_threadpool(work))
    watching = asyncio.ensure_future(until_disconnected(request))
    try:
        await asyncio.wait({working, watching}, return_when=asyncio.FIRST_COMPLETED)
        if watching.done():
            gone.set()
        return await working
    finally:
        watching.cancel()


async def until_disconnected(request: Request) -> None:
    """Returns when the client goes away (the body is read: the next message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


#: lines end in LF: the clients parse what every SSE library writes, and so do the tests
SSE_LINE_END = "\n"


def sse(event: str | None, data: Any) -> ServerSentEvent:
    """One event: its name (none for OpenAI's chunks) and its data, JSON unless already text."""
    return ServerSentEvent(data=data if isinstance(data, str) else json.dumps(data), event=event, sep=SSE_LINE_END)


def event_stream(events: AsyncIterator[ServerSentEvent], ping_seconds: float) -> EventSourceResponse:
    """Server-Sent Events through sse-starlette: a comment line every ``ping_seconds`` while nothing
    else is sent (an answer waiting for the model), so proxies keep the stream open; and one task
    that watches for the client leaving, which ends ``events`` at once, the model waiting or
    reading the prompt included (a write that fails would be noticed only at the first token)."""
    return EventSourceResponse(
        events,
        ping=ping_seconds,
        sep=SSE_LINE_END,
        ping_message_factory=lambda: ServerSentEvent(comment="ping", sep=SSE_LINE_END),
    )


async def stream_answer(
    rag: QuorumRAG, generate: bool, result: Evidence, on_done: Callable[[Answer], None], query_id: str
) -> AsyncIterator[ServerSentEvent]:
    """The evidence (with the query's id, for feedback), each answer token as it arrives, then the
    checked answer. A cached answer arrives as one token. A client that leaves mid-stream stops the
    model at once (``event_stream`` closes this generator, which takes the answer out of the queue
    or stops the model within a prompt batch)."""
    fields = {*Evidence.model_fields, *Evidence.model_computed_fields}
    yield sse("evidence", {"query_id": query_id, **result.model_dump(include=fields)})
    if isinstance(result, Answer):
        if result.answer:
            yield sse("token", {"text": result.answer})
        yield sse("done", {"query_id": query_id, **shown(result).model_dump()})
        return
    if result.abstained or not generate:
        yield sse("done", {"query_id": query_id, **Answer.from_evidence(result).model_dump()})
        return
    if note := rag.loading_note(result):  # the first answer of the process waits for the model: say so
        yield sse("loading", {"message": note})
    async with aclosing(answer_events(rag, result, on_done)) as events:  # closed with this generator
        async for item in events:
            if isinstance(item, Answer):
                yield sse("done", {"query_id": query_id, **shown(item).model_dump()})
            elif isinstance(item, Queued):
                yield sse("queued", {"position": item.position})
            else:
                yield sse("token", {"text": item})


@dataclass(frozen=True)
class Queued:
    """The answer's place in the model's queue (1: next), as it waits."""

    position: int


async def answer_events(
    rag: QuorumRAG, evidence: Evidence, on_done: Callable[[Answer], None]
) -> AsyncGenerator[str | Queued | Answer, None]:
    """Its place in the model's queue while it waits, each answer token as the model writes it (on
    a worker thread), then the checked answer. Closing this generator early (the client left)
    takes it out of the queue, or stops the model at its next token."""
    loop, tokens = asyncio.get_running_loop(), asyncio.Queue[str | Queued | Answer]()
    cancelled = threading.Event()

    def post(item: str | Queued | Answer) -> None:
        try:
            loop.call_soon_threadsafe(tokens.put_nowait, item)
        except RuntimeError:  # the loop has closed: the client left, nobody reads this any more
            cancelled.set()

    def generate() -> None:
        try:
            answer = rag.answer(
                evidence.question,
                evidence=evidence,
                cancelled=cancelled,
                on_token=post,
                on_queued=lambda position: post(Queued(position)),
            )
            on_done(answer)
        except QueueFull as full:
            answer = Answer.from_evidence(evidence, error=str(full), complete=False)
        except Exception as exc:
            log.error("the streamed answer failed", exc_info=True)
            answer = Answer.from_evidence(evidence, error=f"unexpected {type(exc).__name__}")
        post(answer)

    # in the request's context, so its log lines carry its id
    threading.Thread(target=contextvars.copy_context().run, args=(generate,), name="qrag-answer", daemon=True).start()
    try:
        while not isinstance(item := await tokens.get(), Answer):
            yield item
        yield item
    finally:
        cancelled.set()  # done, or the client left: either way the model has nothing more to write
