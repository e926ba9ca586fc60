"""Answer generation backends behind one small interface, found by name in a registry.

A backend is a factory ``(Settings) -> GenerationBackend``. The built-ins (``embedded``,
``ollama``, ``openai``) register exactly as a plug-in does: an entry point in the group
``qrag_qdrant.generation`` (see pyproject.toml), through ``plugins.Registry``. In-process code
may also call ``register_backend``. ``generation.backend`` (``QRAG_GENERATION_BACKEND``) picks one;
``auto`` takes the OpenAI-compatible server when ``openai.base_url`` is set, Ollama when the user
pointed ``ollama.host`` somewhere, else the embedded model when one is installed or ``llm.gguf``
is set, else Ollama on its default host.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

from ..config.sections import OllamaSettings
from ..config.settings import Settings
from ..plugins import Registry
from .base import BackendDefaults, GenerationBackend, GenerationResult, Judge, Usage
from .prompt import NOT_IN_DOCUMENTS, SYSTEM_PROMPTS, build_messages

__all__ = [
    "BACKENDS",
    "NOT_IN_DOCUMENTS",
    "SYSTEM_PROMPTS",
    "BackendDefaults",
    "GenerationBackend",
    "GenerationResult",
    "Judge",
    "Usage",
    "build_messages",
    "open_backend",
    "register_backend",
]

#: called with the settings, and with its own (``[backends.<name>]``) where it declares ``Options``
BackendFactory = Callable[..., GenerationBackend]
BACKENDS: Registry[BackendFactory] = Registry(
    "qrag_qdrant.generation", "generation backend", setting="generation.backend", section="backends"
)
register_backend = BACKENDS.register


def embedded_available(settings: Settings) -> bool:
    """A local model is at hand: llm.gguf is set, or llama.cpp and the packaged llm.model are installed."""
    from .backends.embedded import PACKAGED_MODELS, packaged_model_name

    if settings.llm.gguf is not None:
        return True
    model = PACKAGED_MODELS.get(packaged_model_name(settings.llm))
    installed = importlib.util.find_spec("xllamacpp") is not None
    return model is not None and installed and model.part_path(1) is not None


def pointed_at_ollama(settings: Settings) -> bool:
    default: str = OllamaSettings.model_fields["host"].default
    return settings.ollama.host != default


def backend_name(settings: Settings) -> str:
    """The backend ``generation.backend`` names, ``auto`` resolved."""
    name = settings.generation.backend
    if name == "auto" and settings.openai.base_url:
        return "openai"
    if name == "auto":
        return "embedded" if embedded_available(settings) and not pointed_at_ollama(settings) else "ollama"
    return name


def open_backend(settings: Settings) -> GenerationBackend:
    backend: GenerationBackend = BACKENDS.make(backend_name(settings), settings.backends, settings)
    return backend


def loading_note(settings: Settings) -> str | None:
    """What the next answer waits for before its first token, to tell the user: the embedded model
    assembled and loaded once per process ("loading the model (1.1 GB, once)"); None when it is
    loaded, or the backend is a server (whose own readiness is its own)."""
    if backend_name(settings) != "embedded":
        return None
    from .backends.embedded import loading_note as embedded_loading

    return embedded_loading(settings.llm)
