"""What embeds a namespace's texts, behind one small interface and one registry: fastembed in
process (the default, ``dense.py``), an OpenAI-compatible embedding server or Ollama
(``served.py``), or a plug-in registered the same way (the ``qrag_qdrant.embedders`` entry
points). ``embedding.embedder`` picks one; every collection records the model it was embedded
with (``EmbeddingSettings.fingerprint``), so vectors of two models are never mixed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from ..config.sections import EmbeddingSettings
from ..errors import EmbeddingError
from ..plugins import Registry
from .files import OFFLINE_MODEL, OFFLINE_MODEL_DIM


@runtime_checkable
class Embedder(Protocol):
    """Unit-length float32 vectors for documents (``embed``, many at once) and for a question
    (``query_embed``), as fastembed separates them: some models write a question differently."""

    model_name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def query_embed(self, text: str) -> np.ndarray: ...

    @property
    def mean_pools(self) -> bool:
        """Whether its vector of a text is the mean of the text's token vectors, so late and
        anchored pooling (``embed_spans``) give chunks what its questions are compared in; a
        served model's token vectors are out of reach: False."""
        ...

    def embed_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        stride: int = 192,
        windows: Sequence[tuple[int, int]] | None = None,
    ) -> np.ndarray: ...


EMBEDDERS: Registry[Callable[..., Embedder]] = Registry(
    "qrag_qdrant.embedders", "embedder", setting="embedding.embedder", section="embedders"
)


def open_embedder(settings: EmbeddingSettings, sections: Mapping[str, Mapping[str, Any]] | None = None) -> Embedder:
    """The configured embedder (``embedding.embedder``), models loaded on first use. One that
    declares ``Options`` is made with its own settings too: ``[embedders.<name>]`` of ``sections``."""
    embedder: Embedder = EMBEDDERS.make(settings.embedder, sections or {}, settings)
    return embedder


def embedding_dim(settings: EmbeddingSettings) -> int:
    """The vectors' size without loading or asking the model: ``embedding.dim``, else the one
    fastembed's registry gives its model (the packaged model's is known, so a query need not
    import fastembed)."""
    if settings.dim is not None:
        return settings.dim
    if settings.embedder != "fastembed":
        raise EmbeddingError(
            f"embedding.dim: set the vectors' size of {settings.model!r}, which {settings.embedder} serves"
        )
    if settings.model.lower() == OFFLINE_MODEL.lower():
        return OFFLINE_MODEL_DIM
    from fastembed import TextEmbedding

    for description in TextEmbedding.list_supported_models():
        if description["model"].lower() == settings.model.lower():
            return int(description["dim"])
    raise EmbeddingError(
        f"unknown embedding model {settings.model!r}: fastembed does not support it "
        "(see fastembed's TextEmbedding.list_supported_models())"
    )
