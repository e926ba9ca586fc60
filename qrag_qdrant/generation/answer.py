"""One answer from passages: fit them to the model's window, stream, then check the result.

The query path and ``eval --generate`` both answer through here, so what is measured is
what a user gets.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from ..config.settings import Settings
from ..errors import GenerationError
from ..results import Answer, Evidence, Passage, QuestionPartEvidence, TokenUsage, timed
from .base import GenerationBackend, GenerationResult, Judge, TokenCounter
from .checks.agreement import read_again
from .checks.answer_check import check_answer
from .checks.claims import answer_probability
from .compared_values import ComparedValues, MissingSide, compared_values
from .prompt import estimated_tokens, fit_passages, unescaped
from .scheduler import LeftQueue
from .time_order import DatedAnswer, dated_answer

log = logging.getLogger(__name__)

#: an answer whose client left: stopped, left incomplete
CLIENT_GONE = "stopped: the client went away"


#: holds the model for one answer, given the answer's cancel event (a scheduler's turn); None: no queue
Turn = Callable[[threading.Event], AbstractContextManager[float]]


def answer_from(
    evidence: Evidence,
    backend: Callable[[], GenerationBackend],
    settings: Settings,
    on_token: Callable[[str], None] | None = None,
    cancelled: threading.Event | None = None,
    turn: Turn | None = None,
) -> Answer:
    """The checked answer to ``evidence``; the model is not called when retrieval abstained, nor
    for an answer the documents' dates or values give (``computed_answer``). The CLI, the service
    and ``eval --generate`` all answer through here. ``turn``: waits for the
    model's turn first (the service's fair queue); a full queue raises ``QueueFull``."""
    result = Answer.from_evidence(evidence)
    options = settings.generation
    computed = computed_answer(evidence, settings)
    if isinstance(computed, MissingSide):
        result.abstained, result.abstain_reason = True, "part_missing"
        missing = result.parts[computed.part].model_copy(update={"missing": computed.why})
        result.parts = [missing if n == computed.part else part for n, part in enumerate(result.parts)]
    elif computed is not None:
        result.answer, result.computed = computed.text, computed.how
        result.parts = with_passages_read(result.parts, computed.read)
        if on_token is not None:
            on_token(computed.text)
        with timed(result.timings_ms, "checks"):
            check_answer(result, evidence.passages, None, options)
    elif not evidence.abstained:
        cancelled = cancelled or threading.Event()
        try:
            with turn(cancelled) if turn else nullcontext(0.0) as waited:
                result.timings_ms["queue_wait"] = round(waited * 1000, 3)
                generate_answer(result, evidence.passages, backend, settings, on_token, cancelled)
        except LeftQueue as left:  # the client went away before the model took the question
            result.error, result.complete, result.client_left = str(left), False, True
    return result


def computed_answer(evidence: Evidence, settings: Settings) -> DatedAnswer | ComparedValues | MissingSide | None:
    """The answer the documents give ``evidence`` without the model: a time order from their dates
    (``time_order``, where ``generation.time_order_from_dates`` lets them), two values compared
    from the amounts the passages state, or the side of them no passage is of
    (``compared_values``, where ``generation.compare_values`` does)."""
    options = settings.generation
    if options.time_order_from_dates and (dated := dated_answer(evidence, options.min_relevance)) is not None:
        return dated
    return compared_values(evidence, options.min_relevance) if options.compare_values else None


def with_passages_read(
    parts: Sequence[QuestionPartEvidence], read: tuple[Passage, Passage]
) -> list[QuestionPartEvidence]:
    """The parts of a computed answer, each with the passage its side was read from among its
    evidence: a part's search may have ranked that passage under the other part, and the verdict
    check reads each part's cited passages."""
    return [
        part.model_copy(update={"citations": sorted({*part.citations, passage.citation})})
        for part, passage in zip(parts, read, strict=True)
    ]


def generate_answer(
    result: Answer,
    passages: Sequence[Passage],
    backend: Callable[[], GenerationBackend],
    settings: Settings,
    on_token: Callable[[str], None] | None = None,
    cancelled: threading.Event | None = None,
) -> None:
    """Fill ``result`` with the answer, its claims and warnings, or the error.

    ``backend`` is called once, inside the error handling, so a backend that cannot open
    becomes ``result.error`` like a failure mid-stream (then ``complete`` is false). Once
    ``cancelled`` is set (the client left), the stream is closed at the next token, which
    stops the model, and the answer is left incomplete.
    """
    parts: list[str] = []
    sent: list[Passage] = list(passages)
    opened: GenerationBackend | None = None
    # this call's own: usage and probabilities never cross answers, and the backend sees a client leave
    reported = GenerationResult(cancelled=cancelled or threading.Event())
    with timed(result.timings_ms, "generation"):  # the backend opened, the prompt read, the answer written
        try:
            opened = backend()
            sent, dropped = fit_passages(
                result.searched,
                passages,
                opened.context_tokens,
                settings.llm.max_tokens,
                settings.generation.answer_format,
                opened.count_tokens if isinstance(opened, TokenCounter) else estimated_tokens,
            )
            if dropped:
                result.warnings.append(
                    f"the context was trimmed to fit the model's window: passages "
                    f"{', '.join(f'[{p.citation}]' for p in dropped)} were not sent"
                )
            log.debug("prompt: %d passages to %s at %s", len(sent), opened.model_name, opened.server)
            tokens = opened.stream(result.searched, sent, reported)
            started = time.perf_counter()
            for text in unescaped(tokens):
                if text and not parts:  # the prompt is read: the time to the first token
                    result.timings_ms["first_token"] = round((time.perf_counter() - started) * 1000, 3)
                parts.append(text)
                if on_token and text:
                    on_token(text)
                if reported.cancelled.is_set():
                    tokens.close()  # stops the model
                    raise GenerationError(CLIENT_GONE)
        except GenerationError as exc:
            log.warning(
                "generation failed: %s", exc, exc_info=not isinstance(exc, LeftQueue) and str(exc) != CLIENT_GONE
            )
            result.error, result.complete = str(exc), False
    log.info("generation: %.0f ms, %s", result.timings_ms["generation"], result.error or "answered")
    if opened is not None:
        result.model, result.model_server = opened.model_name, opened.server
    result.decline_probability = reported.decline_probability
    if (usage := reported.usage) is not None and result.error is None:
        result.usage = TokenUsage(**dataclasses.asdict(usage))
    result.answer = "".join(parts) or None
    if result.error is None and reported.cancelled.is_set():  # left before the model wrote a word
        result.error, result.complete = CLIENT_GONE, False
    result.client_left = result.error == CLIENT_GONE
    if result.error is None and not (result.answer or "").strip():
        result.error, result.answer = "the model returned an empty answer", None
    if result.error is None:
        judge = opened if settings.generation.judge and isinstance(opened, Judge) else None
        result.answer_probability = answer_probability(result.answer or "", reported.answer_logprobs)
        if settings.generation.samples and opened is not None:
            with timed(result.timings_ms, "readings"):
                read_again(result, opened, sent, settings.generation, reported.cancelled)
        with timed(result.timings_ms, "checks"):
            check_answer(result, sent, judge, settings.generation)
