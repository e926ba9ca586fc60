"""Agreement between readings: the answer read again from the same prompt, and how many agree.

A small model is often confidently wrong, so one greedy answer's token probability is a weak
judge of it. With ``generation.samples = k``, the answer step reads the same prompt k more times at
``generation.sample_temperature`` (each backend's prompt cache makes a reading cost only its few
answer tokens). A reading agrees with the greedy answer when their short answers are the same
after SQuAD's normalisation, or one holds the other as whole words; a decline ("not in the
documents") agrees only with a decline. ``agreement`` is the share of the readings (the greedy
one included) that agree with it, which ``generation.min_agreement`` asks of a supported answer.

The greedy answer is always the one shown: showing the answer most readings gave instead was
measured, and did no better (docs/benchmarks.md, "The supported mark").
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ...config.sections import GenerationSettings
from ...results import Answer, AnswerAgreement, Passage, TokenUsage
from ..base import GenerationResult
from .claims import answer_probability, declined, short_answer_of

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = str.maketrans("", "", string.punctuation)
#: a decline's key, and how ``AnswerAgreement.answers`` shows it: no normalised answer has brackets
DECLINED = "(declined)"


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(ARTICLES.sub(" ", text.lower().translate(PUNCTUATION)).split())


@dataclass(frozen=True)
class Reading:
    """One answer read from the prompt, and how sure the model was of its short answer."""

    text: str
    probability: float | None = None


@runtime_checkable
class Sampler(Protocol):
    """A backend that can read the prompt again at a temperature (every built-in can)."""

    def sample(
        self, question: str, passages: Sequence[Passage], temperature: float, seed: int, result: GenerationResult
    ) -> str:
        """One answer drawn at ``temperature`` with ``seed``, filling ``result`` (its own) as
        ``stream`` does."""


def group_key(text: str) -> str:
    return DECLINED if declined(text) else normalize_answer(short_answer_of(text) or "")


def same_answer(one: str, other: str) -> bool:
    """Equal after normalisation, or one holds the other as whole words; a decline is only a decline."""
    if DECLINED in (one, other) or not (one and other):
        return one == other
    return f" {one} " in f" {other} " or f" {other} " in f" {one} "


def agreeing(readings: Sequence[Reading]) -> int:
    """How many of ``readings`` give the first one's answer (the first one included)."""
    first = group_key(readings[0].text)
    return sum(same_answer(first, group_key(reading.text)) for reading in readings)


def read_again(
    result: Answer,
    backend: object,
    passages: Sequence[Passage],
    options: GenerationSettings,
    cancelled: threading.Event,
) -> None:
    """``options.samples`` more readings of the prompt ``result`` was answered from, and their
    agreement with its answer. Stops reading once ``cancelled`` is set."""
    if not isinstance(backend, Sampler):
        result.warnings.append("generation.samples: this backend cannot read the prompt again; agreement not checked")
        return
    readings = [Reading(result.answer or "", result.answer_probability)]
    completion_tokens, seconds = 0, 0.0
    for seed in range(1, options.samples + 1):
        if cancelled.is_set():
            return
        reported = GenerationResult(cancelled=cancelled)
        text = backend.sample(result.searched, passages, options.sample_temperature, seed, reported)
        readings.append(Reading(text, answer_probability(text, reported.answer_logprobs)))
        if reported.usage is not None:
            completion_tokens += reported.usage.completion_tokens
            seconds += reported.usage.completion_seconds
    agreed = agreeing(readings)
    result.agreement = AnswerAgreement(
        readings=len(readings),
        agreeing=agreed,
        share=round(agreed / len(readings), 4),
        answers=[DECLINED if declined(r.text) else short_answer_of(r.text) or "" for r in readings],
        probabilities=[reading.probability for reading in readings],
    )
    if result.usage is not None:
        result.usage = TokenUsage(
            prompt_tokens=result.usage.prompt_tokens,
            cached_tokens=result.usage.cached_tokens,
            completion_tokens=result.usage.completion_tokens + completion_tokens,
            completion_seconds=round(result.usage.completion_seconds + seconds, 3),
        )
