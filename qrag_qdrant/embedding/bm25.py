"""Qdrant's BM25 as sparse vectors, and the sources a collection's BM25 vectors may come from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..plugins import Registry


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class Bm25Settings:
    """Everything that must be equal at ingest and query time for one collection."""

    avg_len: float
    k: float = 1.2
    b: float = 0.75
    language: str = "english"

    def as_dict(self) -> dict[str, Any]:
        return {"avg_len": self.avg_len, "k": self.k, "b": self.b, "language": self.language}


@dataclass(frozen=True)
class Bm25Document:
    """Text whose BM25 vector the Qdrant server computes (``qdrant/bm25`` with these settings)."""

    text: str
    settings: Bm25Settings

    MODEL = "qdrant/bm25"


class SparseEmbedder:
    """Qdrant's own BM25 (``qdrant_edge.Bm25``), the same as the server's ``qdrant/bm25``."""

    def __init__(self, settings: Bm25Settings):
        from qdrant_edge import Bm25, Bm25Config

        self.settings = settings
        self._model = Bm25(Bm25Config(k=settings.k, b=settings.b, avg_len=settings.avg_len, language=settings.language))

    def embed(self, texts: list[str]) -> list[SparseVec]:
        return [_sparse(self._model.embed_document(text)) for text in texts]

    def query_embed(self, text: str) -> SparseVec:
        return _sparse(self._model.embed_query(text))


class ServerBm25:
    """BM25 left to the Qdrant server (>= 1.15.3): the text travels, the server embeds it."""

    def __init__(self, settings: Bm25Settings):
        self.settings = settings

    def embed(self, texts: list[str]) -> list[Bm25Document]:
        return [Bm25Document(text, self.settings) for text in texts]

    def query_embed(self, text: str) -> Bm25Document:
        return Bm25Document(text, self.settings)


class Bm25Embedder(Protocol):
    """What a BM25 source makes of a collection's texts and its questions: sparse vectors, or
    ``Bm25Document``s a server store embeds itself."""

    def embed(self, texts: list[str]) -> Sequence[SparseVec | Bm25Document]: ...

    def query_embed(self, text: str) -> SparseVec | Bm25Document: ...


#: Who computes a collection's BM25 vectors: ``(Bm25Settings) -> Bm25Embedder`` by name, recorded in
#: its manifest (``qdrant.bm25_source`` at creation) and used at ingest and query alike.
BM25_SOURCES: Registry[Callable[[Bm25Settings], Bm25Embedder]] = Registry(
    "qrag_qdrant.bm25", "BM25 source", setting="qdrant.bm25_source"
)


def _sparse(vector: Any) -> SparseVec:
    return SparseVec(list(vector.indices), list(vector.values))
