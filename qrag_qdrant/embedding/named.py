"""The models of ``[embeddings]``: dense models beside ``[embedding]``, each a named vector of the
collections whose retrievers name it, so a team's own model (a language the packaged one does not
read, a domain model, an embedding server) votes beside the others."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from ..config.settings import Settings, named_vector
from ..errors import EmbeddingError
from .base import Embedder, embedding_dim, open_embedder


class NamedEmbedders:
    """Each model of ``[embeddings]``, opened on first use and kept: ``embed`` for chunks (each on its
    own), ``query_embed`` for a question, both by vector name (``dense-<name>``)."""

    def __init__(self, settings: Settings):
        self._settings = settings
        self._opened: dict[str, Embedder] = {}
        #: the size the collections record for each model opened
        self._dims: dict[str, int] = {}
        self._lock = threading.Lock()  # a question's searches and an ingest may open one at once

    def __getitem__(self, name: str) -> Embedder:
        with self._lock:
            if name not in self._opened:
                model = self._settings.embeddings[name]
                self._dims[name] = embedding_dim(model)
                self._opened[name] = open_embedder(model, self._settings.embedders)
            return self._opened[name]

    def embed(self, names: Sequence[str], texts: list[str]) -> dict[str, np.ndarray]:
        """Every text's vector of each model ``names``: a matrix per vector name."""
        return {named_vector(name): self._sized(name, self[name].embed(texts)) for name in names} if texts else {}

    def query_embed(self, names: Sequence[str], text: str) -> dict[str, list[float]]:
        """The question's vector of each model ``names``, by vector name."""
        return {named_vector(name): self._sized(name, self[name].query_embed(text)).tolist() for name in names}

    def _sized(self, name: str, vectors: np.ndarray) -> np.ndarray:
        """``vectors`` of the opened model ``name``, of the size the collections record for it, or
        one line saying so."""
        expected = self._dims[name]
        if vectors.shape[-1] != expected:
            raise EmbeddingError(
                f"embeddings.{name}: the model gave vectors of {vectors.shape[-1]} values, not {expected} (set dim)"
            )
        return vectors
