"""An OpenAI-compatible chat endpoint, so teams point the tools they already run (the ``openai``
SDK, Open WebUI, LibreChat) at quorum evidence: ``POST /v1/chat/completions`` and
``GET /v1/models``. The team's key is the API key.

The last user message is the question, and the user and assistant messages before it are its
history: a follow-up is searched as the stand-alone question made from them (system messages
are ignored; what was searched is ``qrag.searched_for``). The reply is the checked
answer with its ``[n]`` citations; an abstention is an ordinary assistant message saying why,
with ``finish_reason`` ``stop``, never an HTTP error. The field ``qrag`` on the response, and
on the last chunk of a stream, carries everything ``POST /v1/query`` returns: the clusters,
their support and passages with locations, the confidence and the abstention reason.
Models: ``quorum`` answers; ``quorum-evidence`` returns the evidence as the message without
calling a model. Errors have OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt
from sse_starlette import EventSourceResponse, ServerSentEvent

from ...api import QuorumRAG
from ...results import Answer, Evidence
from ...results.marks import INSTRUCTION_WITHHELD
from ...store.filters import DocumentFilter
from ..errors import ServiceError
from ..schemas import HistoryTurn, QueryRequest
from ..state import QueryCaller, State
from ..streaming import answer_events, answer_unless_gone, event_stream, shown, sse
from .query import answer_allowed, evidence_for, remember_answer

ANSWER_MODEL, EVIDENCE_MODEL = "quorum", "quorum-evidence"
MODELS = {
    ANSWER_MODEL: "the answer from quorum evidence, with [n] citations, or an abstention that says why",
    EVIDENCE_MODEL: "the quorum evidence itself as the message: no language model is called",
}
ABSTAINED = {
    "no_quorum": "No answer: the retrievers did not agree on any evidence in your documents.",
    "low_confidence": "No answer: the retrievers agreed on evidence, but it is too weak to answer from; the "
    "documents probably do not hold the answer.",
    "model_declined": "No answer: the passages the retrievers agreed on do not hold the answer.",
    "unsupported_answer": "No answer: the answer was withheld: its cited passages do not support it.",
}

openai = APIRouter(prefix="/v1", tags=["OpenAI-compatible"])


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, list):  # content parts: the text ones, in order
            return " ".join(str(part.get("text", "")) for part in self.content if part.get("type") == "text")
        return self.content or ""


class ChatRequest(BaseModel):
    """OpenAI's request; options a RAG answer has no use for (temperature, top_p, user, ...) are
    accepted and ignored, those it cannot honour are refused."""

    model_config = ConfigDict(extra="allow")

    model: str
    messages: list[ChatMessage]
    stream: StrictBool = False
    n: StrictInt | None = Field(None, description="1 only")
    tools: list[Any] | None = Field(None, description="not supported")
    functions: list[Any] | None = Field(None, description="not supported")
    filter: DocumentFilter | None = Field(
        None,
        description="an extra field: only documents that pass (as /v1/query's filter; extra_body in the openai SDK)",
    )

    def question(self) -> str:
        if self.model not in MODELS:
            raise ServiceError(
                404,
                "model_not_found",
                f"the model {self.model!r} does not exist; use one of {', '.join(MODELS)}",
                param="model",
            )
        if self.n not in (None, 1):
            raise ServiceError(
                400, "unsupported_parameter", f"n must be 1, not {self.n}: one answer per question", param="n"
            )
        if self.tools or self.functions:
            raise ServiceError(
                400,
                "unsupported_parameter",
                "tools and functions are not supported: quorum answers from its evidence only",
                param="tools" if self.tools else "functions",
            )
        if not self.messages:
            raise ServiceError(
                400, "invalid_messages", "messages is empty: send at least one user message", param="messages"
            )
        question = next((m.text() for m in reversed(self.messages) if m.role == "user"), None)
        if question is None:
            raise ServiceError(
                400,
                "invalid_messages",
                "messages holds no user message: the last user message is the question",
                param="messages",
            )
        return question

    def history(self) -> list[HistoryTurn]:
        """The user and assistant messages before the last user message, oldest first."""
        last = max((n for n, m in enumerate(self.messages) if m.role == "user"), default=0)
        return [
            HistoryTurn.model_validate({"role": m.role, "content": m.text()})
            for m in self.messages[:last]
            if m.role in ("user", "assistant") and m.text().strip()
        ]


@openai.get("/models")
def models(principal: QueryCaller) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "qrag-qdrant", "description": about}
            for name, about in MODELS.items()
        ],
    }


@openai.post("/chat/completions", response_model=None)
async def chat_completions(
    body: ChatRequest, request: Request, state: State, principal: QueryCaller
) -> JSONResponse | EventSourceResponse:
    query = QueryRequest(
        question=body.question(), history=body.history(), generate=body.model == ANSWER_MODEL, filter=body.filter
    )
    namespace, completion = principal.namespace, f"chatcmpl-{uuid.uuid4().hex}"
    result, stamp = await evidence_for(state, request, principal, query)
    rag = state.spaces().rag(namespace)
    remember = state.noting_answer(
        request, principal, functools.partial(remember_answer, state, principal, stamp=stamp, documents=query.filter)
    )
    generate, result = answer_allowed(state, request, principal, query.generate, result)
    if body.stream:
        return event_stream(
            chunks(completion, body.model, rag, result, generate, remember, state.settings.service.openai_mark_in_text),
            state.settings.service.stream_ping_seconds,
        )
    if generate and not isinstance(result, Answer) and not result.abstained:
        result = await answer_unless_gone(request, rag, result)
        remember(result)
    answer = result if isinstance(result, Answer) else Answer.from_evidence(result)
    in_text = state.settings.service.openai_mark_in_text
    return JSONResponse(
        {
            "id": completion,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": with_notes(message(answer, generate), answer, in_text)},
                }
            ],
            "usage": usage(answer),
            "qrag": qrag_field(answer),
        }
    )


async def chunks(
    completion: str,
    model: str,
    rag: QuorumRAG,
    result: Evidence,
    generate: bool,
    on_done: Callable[[Answer], None],
    mark_in_text: bool = False,
) -> AsyncIterator[ServerSentEvent]:
    """``chat.completion.chunk`` events: the role, each piece of the answer, the last chunk with
    ``finish_reason``, usage and the ``qrag`` evidence, then ``[DONE]``."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> ServerSentEvent:
        data = {
            "id": completion,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return sse(None, data)

    yield chunk({"role": "assistant", "content": ""})
    if generate and not isinstance(result, Answer) and not result.abstained:
        async with aclosing(answer_events(rag, result, on_done)) as events:
            async for item in events:
                if isinstance(item, Answer):
                    answer = item
                    if answer.abstained or answer.error:  # the streamed text is not the answer: say why
                        yield chunk({"content": "\n\n" + message(answer, generate)})
                    elif (marked := with_notes("", answer, mark_in_text)) != "":  # how computed, the mark
                        yield chunk({"content": marked})
                elif isinstance(item, str):  # a queue position has no place in OpenAI's chunks
                    yield chunk({"content": item})
    else:
        answer = result if isinstance(result, Answer) else Answer.from_evidence(result)
        yield chunk({"content": with_notes(message(answer, generate), answer, mark_in_text)})
    yield chunk({}, "stop", usage=usage(answer), qrag=qrag_field(answer))
    yield sse(None, "[DONE]")


def message(answer: Answer, generate: bool) -> str:
    """What the assistant says: the answer, why there is none, or (quorum-evidence) the evidence."""
    if answer.error and not answer.answer:
        return f"No answer: the language model failed ({shown(answer).error})."
    if answer.clarification is not None:
        return answer.clarification.question
    if answer.abstain_reason == "part_missing":
        return f"No answer: a part of the question has no evidence: {answer.missing_part}."
    if any(claim.unsupported == "instruction" for claim in answer.claims):  # withheld as an attack's payload
        return f"No answer: {INSTRUCTION_WITHHELD}."
    if answer.abstained:
        return ABSTAINED.get(answer.abstain_reason or "", "No answer.")
    if not generate:
        return evidence_text(answer)
    return answer.answer or ""


def with_notes(text: str, answer: Answer, in_text: bool) -> str:
    """The message with what a client that shows only the text needs under it
    (``service.openai_mark_in_text``), a plain line each: how an answer computed from the
    documents was computed ("Computed from the values the passages state: [1] four weeks, [5] six
    weeks."), and its mark where it is not supported ("Not supported: ...", "Ambiguous: ..."). A
    supported answer reads as itself; an abstention's message already says why there is no answer."""
    if not in_text:
        return text
    if answer.computed and not answer.abstained:
        text = f"{text}\n\nComputed {answer.computed}."
    if answer.mark in (None, "supported", "no evidence", "clarifying question", "declined"):
        return text
    return f"{text}\n\n{answer.mark.capitalize()}: {answer.mark_reason}"


def evidence_text(evidence: Evidence) -> str:
    lines = [f"Evidence (confidence {evidence.confidence:.3f}):"]
    for cluster in evidence.clusters:
        for passage in cluster.passages:
            lines.append(
                f"\n[{passage.citation}] {passage.location} (support {cluster.support}/{evidence.retrievers}"
                f": {', '.join(cluster.retrievers)})\n{passage.text}"
            )
    return "\n".join(lines)


def usage(answer: Answer) -> dict[str, int]:
    used = answer.usage
    prompt, completion = (used.prompt_tokens, used.completion_tokens) if used else (0, 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def qrag_field(answer: Answer) -> dict[str, Any]:
    """The evidence and checks beside the message, as ``POST /v1/query`` returns them."""
    return shown(answer).model_dump(mode="json")
