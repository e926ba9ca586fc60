"""Answer generation backends behind one small interface, found by name in a registry.

A backend is a factory ``(Settings) -> GenerationBackend``. The built-ins (``embedded``,
``ollama``) register exactly as a plug-in does: an entry point in the group
``qrag_qdrant.generation`` (see pyproject.toml). In-process code may also call
``register_backend``. ``generation.backend`` (``QRAG_GENERATION_BACKEND``) picks one;
``auto`` takes Ollama when the user pointed ``ollama.host`` somewhere, else the embedded model
when one is installed or ``llm.gguf`` is set, else Ollama on its default host.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from importlib.metadata import entry_points

from ..config import OllamaSettings, Settings
from ..errors import ConfigError
from .base import GenerationBackend, Judge, Usage
from .prompt import NOT_IN_DOCUMENTS, SYSTEM_PROMPTS, build_messages

__all__ = ["NOT_IN_DOCUMENTS", "SYSTEM_PROMPTS", "GenerationBackend", "Judge", "build_messages", "open_backend",
           "register_backend", "Usage"]
ENTRY_POINT_GROUP = "qrag_qdrant.generation"


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
    from .embedded import PACKAGED_MODELS, packaged_model_name

    if settings.llm.gguf is not None:
        return True
    model = PACKAGED_MODELS.get(packaged_model_name(settings.llm))
    return model is not None and importlib.util.find_spec("xllamacpp") is not None and model.part_path(1) is not None


def pointed_at_ollama(settings: Settings) -> bool:
    return settings.ollama.host != OllamaSettings.model_fields["host"].default


def open_backend(settings: Settings) -> GenerationBackend:
    name = settings.generation.backend
    if name == "auto":
        name = "embedded" if embedded_available(settings) and not pointed_at_ollama(settings) else "ollama"
    registry = backends()
    if not registry:
        raise ConfigError("no generation backend is registered: reinstall qrag-qdrant (pip install -e .) so that "
                          f"its entry points ({ENTRY_POINT_GROUP}) are written")
    if name not in registry:
        raise ConfigError(f"generation.backend {name!r} is not registered; known: {', '.join(sorted(registry))}")
    return registry[name](settings)
