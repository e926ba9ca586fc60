"""What every generation backend is: the interface the registry, the answer step and the judge
rely on, below the backends so that none of them imports the registry."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..evidence import Passage


@dataclass(frozen=True)
class Usage:
    """What the last answer cost, as the backend reports it."""

    prompt_tokens: int
    #: prompt tokens reused from the backend's prompt cache (a shared prefix), not evaluated again
    cached_tokens: int
    completion_tokens: int
    completion_seconds: float


class GenerationBackend(Protocol):
    """Answers from passages. A backend that also has ``complete(system, prompt, max_tokens,
    cancelled)`` can write query expansions (``coordinator.expansion.Completer``); both built-ins do."""

    def stream(self, question: str, passages: Sequence[Passage]) -> Generator[str, None, None]:
        """The answer's text as it arrives; a failure is one GenerationError naming the fix.
        Closing the generator stops the model (a client that left).
        A backend that can tell sets ``last_usage`` (a ``Usage``) when the stream ends, and
        ``last_decline_probability`` (its probability of replying "not in the documents")
        before the first token."""


@runtime_checkable
class Judge(Protocol):
    """A backend that can also say how likely a yes/no prompt's answer is "yes" (the verifier)."""

    def yes_probability(self, system: str, prompt: str) -> float: ...
