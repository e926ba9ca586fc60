"""Answer generation backends behind one small interface, found by name in a registry.

A backend is a factory ``(Settings) -> GenerationBackend``. The built-ins (``embedded``,
``ollama``) register exactly as a plug-in does: an entry point in the group
``qrag_qdrant.generation`` (see pyproject.toml). In-process code may also call
``register_backend``. ``generation.backend`` (``QRAG_GENERATION_BACKEND``) picks one;
``auto`` takes the embedded model when one is installed or ``llm.gguf`` is set, else Ollama.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from typing import Protocol, runtime_checkable

from ..config import Settings
from ..errors import ConfigError
from ..evidence import Passage
from .prompt import NOT_IN_DOCUMENTS, SYSTEM_PROMPT, build_messages

__all__ = ["NOT_IN_DOCUMENTS", "SYSTEM_PROMPT", "GenerationBackend", "Judge", "build_messages", "open_backend",
           "register_backend"]
ENTRY_POINT_GROUP = "qrag_qdrant.generation"


class GenerationBackend(Protocol):
    def stream(self, question: str, passages: Sequence[Passage]) -> Iterator[str]:
        """The answer's text as it arrives; a failure is one GenerationError naming the fix."""


@runtime_checkable
class Judge(Protocol):
    """A backend that can also say how likely a yes/no prompt's answer is "yes" (the verifier)."""

    def yes_probability(self, system: str, prompt: str) -> float: ...


BackendFactory = Callable[[Settings], GenerationBackend]
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    _REGISTRY[name] = factory


def backends() -> dict[str, BackendFactory]:
    """Every registered backend: the entry points' (built-ins included), then in-process ones."""
    found = {point.name: point.load() for point in entry_points(group=ENTRY_POINT_GROUP)}
    return {**found, **_REGISTRY}


def embedded_available(settings: Settings) -> bool:
    """A local model is at hand: llm.gguf is set, or llama.cpp and the packaged llm.model are installed."""
    from .embedded import PACKAGED_MODELS

    if settings.llm.gguf is not None:
        return True
    model = PACKAGED_MODELS.get(settings.llm.model)
    return model is not None and importlib.util.find_spec("xllamacpp") is not None and model.part_path(1) is not None


def open_backend(settings: Settings) -> GenerationBackend:
    name = settings.generation.backend
    if name == "auto":
        name = "embedded" if embedded_available(settings) else "ollama"
    registry = backends()
    if not registry:
        raise ConfigError("no generation backend is registered: reinstall qrag-qdrant (pip install -e .) so that "
                          f"its entry points ({ENTRY_POINT_GROUP}) are written")
    if name not in registry:
        raise ConfigError(f"generation.backend {name!r} is not registered; known: {', '.join(sorted(registry))}")
    return registry[name](settings)
