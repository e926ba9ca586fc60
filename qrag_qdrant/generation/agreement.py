"""Agreement between readings: the answer read again from the same prompt, and what most say.

A small model is often confidently wrong, so one greedy answer's token probability is a weak
judge of it. With ``generation.samples = k``, the answer step reads the same prompt k more times at
``generation.sample_temperature`` (each backend's prompt cache makes a reading cost only its few
answer tokens). The readings are grouped by their short answers after SQuAD's normalisation, one
containing the other counting as the same; declines ("not in the documents") are a group of their
own. The largest group is the answer: its greedy member when the greedy answer is in it, else its
most probable one; a decline majority declines. ``agreement`` is that group's share of the
readings, which ``generation.min_agreement`` asks of a supported answer.
"""

from __future__ import annotations

import re
import string
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..config import GenerationSettings
from ..evidence import Answer, AnswerAgreement, Passage, TokenUsage
from .base import GenerationResult
from .verify import answer_probability, declined, short_answer_of

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = str.maketrans("", "", string.punctuation)
#: the group key of every decline, and how ``AnswerAgreement.answers`` shows one
DECLINE, DECLINED = "\x00decline", "(declined)"


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


@dataclass(frozen=True)
class Agreed:
    #: the reading shown: 0, the greedy one, unless most readings said something else
    chosen: int
    agreeing: int
    #: each reading's group key (its normalised short answer, or DECLINE)
    keys: tuple[str, ...]


def group_key(text: str) -> str:
    return DECLINE if declined(text) else normalize_answer(short_answer_of(text) or "")


def same_answer(one: str, other: str) -> bool:
    """Equal after normalisation, or one holds the other as whole words; a decline is only a decline."""
    if DECLINE in (one, other) or not (one and other):
        return one == other
    return f" {one} " in f" {other} " or f" {other} " in f" {one} "


def agree(readings: Sequence[Reading]) -> Agreed:
    """The largest group of readings (ties: the greedy reading's) and the one of it shown."""
    keys = tuple(group_key(reading.text) for reading in readings)
    groups: list[list[int]] = []
    for index, key in enumerate(keys):
        group = next((g for g in groups if same_answer(keys[g[0]], key)), None)
        if group is None:
            groups.append([index])
        else:
            group.append(index)
    largest = max(groups, key=lambda group: (len(group), 0 in group))
    chosen = 0 if 0 in largest else max(largest, key=lambda i: readings[i].probability or 0.0)
    return Agreed(chosen, len(largest), keys)


def read_again(
    result: Answer,
    backend: object,
    passages: Sequence[Passage],
    options: GenerationSettings,
    cancelled: threading.Event,
) -> None:
    """``options.samples`` more readings of the prompt ``result`` was answered from; ``result``
    takes the answer most of them give, and their agreement. Stops reading once ``cancelled``."""
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
    agreed = agree(readings)
    result.agreement = AnswerAgreement(
        readings=len(readings),
        agreeing=agreed.agreeing,
        share=round(agreed.agreeing / len(readings), 4),
        chosen=agreed.chosen,
        answers=[
            DECLINED if key == DECLINE else short_answer_of(r.text) or "" for r, key in zip(readings, agreed.keys)
        ],
        probabilities=[reading.probability for reading in readings],
    )
    if agreed.chosen:
        chosen = readings[agreed.chosen]
        result.answer, result.answer_probability = chosen.text, chosen.probability
        result.warnings.append(
            f"most readings gave another answer than the first: reading {agreed.chosen + 1} is shown"
        )
    if result.usage is not None:
        result.usage = TokenUsage(
            prompt_tokens=result.usage.prompt_tokens,
            cached_tokens=result.usage.cached_tokens,
            completion_tokens=result.usage.completion_tokens + completion_tokens,
            completion_seconds=round(result.usage.completion_seconds + seconds, 3),
        )
