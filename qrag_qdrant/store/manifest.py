"""What a collection was built with, kept beside it: a query or ingest with anything else is
refused, so vectors are never silently mixed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..config.settings import DENSE_VECTOR, CollectionSpec
from ..embedding import BM25_SOURCES, Bm25Embedder, Bm25Settings


class NamedVector(BaseModel):
    """A model of ``[embeddings]`` as a collection records its vectors."""

    model: str
    dim: int


class CollectionManifest(BaseModel):
    """What a collection was built with; a query or ingest with anything else is refused."""

    format: int = 1
    namespace: str
    size: int
    overlap: int
    model: str
    dim: int
    bm25: dict[str, Any]
    #: who computes the BM25 vectors, a name in ``embedding.BM25_SOURCES``; fixed at creation
    bm25_source: str = "client"
    #: how the dense vectors were pooled (``EmbeddingSettings.pooled_as``); fixed at creation, checked by
    #: ingest only: a question is embedded the same way for all
    pooling: str = "chunk"
    #: the vectors of ``[embeddings]``'s models its dense retrievers search, by vector name
    #: (``dense-<name>``); fixed at creation: another model's vectors are never searched
    vectors: dict[str, NamedVector] = {}
    #: stamped by every ingest that writes, when it starts and when it ends, so a result cache
    #: can tell that the index changed (not part of what must match)
    indexed: int = 0

    @classmethod
    def expected(
        cls,
        namespace: str,
        spec: CollectionSpec,
        model: str,
        dim: int,
        bm25_source: str = "client",
        vectors: Mapping[str, NamedVector] | None = None,
    ) -> CollectionManifest:
        """What a collection for ``spec`` must hold; BM25's avg_len is the chunk length. ``vectors``:
        its named vectors (``store.expected_manifest``)."""
        bm25 = Bm25Settings(avg_len=float(spec.size))
        return cls(
            namespace=namespace,
            size=spec.size,
            overlap=spec.overlap,
            model=model,
            dim=dim,
            bm25=bm25.as_dict(),
            bm25_source=bm25_source,
            vectors=dict(vectors or {}),
        )

    @property
    def dense_dims(self) -> dict[str, int]:
        """Each dense vector's size by name: ``dense``, then the named vectors."""
        return {DENSE_VECTOR: self.dim, **{name: vector.dim for name, vector in self.vectors.items()}}

    @property
    def bm25_settings(self) -> Bm25Settings:
        return Bm25Settings(**self.bm25)

    def bm25_embedder(self) -> Bm25Embedder:
        """The BM25 this collection was built with, for its ingest and its queries alike."""
        return BM25_SOURCES.get(self.bm25_source)(self.bm25_settings)

    def mismatch(self, other: CollectionManifest, reading: bool = False) -> str | None:
        """How this (stored) manifest differs from ``other`` (asked for), or None. ``reading``: a
        search, which may read a collection holding more named vectors than it asks for (an ingest
        would leave them out of its points: it must ask for all)."""
        for field in ("model", "dim", "bm25", "size", "overlap"):
            if getattr(self, field) != getattr(other, field):
                return f"{field} {getattr(self, field)!r} (asked for {getattr(other, field)!r})"
        held = {name: vector for name, vector in self.vectors.items() if name in other.vectors or not reading}
        if held != other.vectors:
            return f"the vectors {_listed(self.vectors)} (asked for {_listed(other.vectors)})"
        return None


def _listed(vectors: Mapping[str, NamedVector]) -> str:
    """``dense-e5 of intfloat/multilingual-e5-small (384)``, or ``dense alone``."""
    return ", ".join(f"{name} of {vector.model} ({vector.dim})" for name, vector in vectors.items()) or "dense alone"
