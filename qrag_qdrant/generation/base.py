"""What every generation backend is: the interface the registry, the answer step and the judge
rely on, below the backends so that none of them imports the registry."""

from __future__ import annotations

import threading
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..results import Passage


@dataclass(frozen=True)
class Usage:
    """What the last answer cost, as the backend reports it."""

    prompt_tokens: int
    #: prompt tokens reused from the backend's prompt cache (a shared prefix), not evaluated again
    cached_tokens: int
    completion_tokens: int
    completion_seconds: float


@dataclass
class GenerationResult:
    """What one call's generation reported beside its text, filled by the backend as its stream
    runs. Each call has its own: two answers on one backend never read each other's."""

    #: what the answer cost; None: the backend cannot tell
    usage: Usage | None = None
    #: its probability of replying "not in the documents", set before the first token; None: unknown
    decline_probability: float | None = None
    #: the answer's tokens as generated, each with its log-probability, complete when the stream ends;
    #: None: the backend cannot tell (the answer's confidence is then unknown, and not checked)
    answer_logprobs: list[tuple[str, float]] | None = None
    #: set when the answer's client has gone: a backend that can stop before its next token (the
    #: embedded model, mid-prompt) does; every backend stops at its next token when the stream closes
    cancelled: threading.Event = field(default_factory=threading.Event)


class GenerationBackend(Protocol):
    """Answers from passages: everything the answer step reads of a backend.

    A plug-in may subclass ``BackendDefaults`` for the attributes it cannot tell. Two more
    abilities are separate protocols, checked with isinstance: ``complete(system, prompt,
    max_tokens, cancelled)`` writes query expansions and rewrites (``Completer``), and
    ``yes_probability`` makes it a ``Judge``; every built-in completes, and ``embedded`` and
    ``openai`` judge. ``count_tokens`` (``TokenCounter``) trims the passages by the model's own
    tokenizer; ``embedded`` counts."""

    #: the model's context window in tokens, to trim passages to; None: unknown, nothing is trimmed
    context_tokens: int | None
    #: the model's name and where it runs (a URL without credentials, or "local process"), shown with
    #: every answer; None: the backend cannot tell
    model_name: str | None
    server: str | None

    def stream(
        self, question: str, passages: Sequence[Passage], result: GenerationResult
    ) -> Generator[str, None, None]:
        """The answer's text as it arrives, filling ``result`` (this call's own) as it goes; a
        failure is one GenerationError naming the fix. Closing the generator stops the model (a
        client that left)."""


class BackendDefaults:
    """The attributes of ``GenerationBackend`` for a backend that cannot tell them."""

    context_tokens: int | None = None
    model_name: str | None = None
    server: str | None = None


def text_until(pieces: Iterator[str], cancelled: threading.Event) -> str:
    """A completion's pieces joined, read no further once ``cancelled`` is set (a query expansion
    the pipeline stopped waiting for)."""
    text = []
    for piece in pieces:
        if cancelled.is_set():
            break
        text.append(piece)
    return "".join(text)


@runtime_checkable
class Completer(Protocol):
    """A backend that completes one prompt (a query expansion, a follow-up's rewrite, a question's
    split); it stops early once ``cancelled`` is set."""

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str: ...


@runtime_checkable
class TokenCounter(Protocol):
    """A backend that counts a prompt's tokens with its model's own tokenizer and chat template, so
    the passages are trimmed to what fits its window exactly (else by ``prompt.estimated_tokens``)."""

    def count_tokens(self, messages: Sequence[dict[str, str]]) -> int: ...


@runtime_checkable
class Judge(Protocol):
    """A backend that can also say how likely a yes/no prompt's answer is "yes" (the verifier)."""

    def yes_probability(self, system: str, prompt: str) -> float: ...
