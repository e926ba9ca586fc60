"""What a collection was built with, kept beside it: a query or ingest with anything else is
refused, so vectors are never silently mixed."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ..config.settings import CollectionSpec
from ..embedding import BM25_SOURCES, Bm25Embedder, Bm25Settings


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
    #: stamped by every ingest that writes, when it starts and when it ends, so a result cache
    #: can tell that the index changed (not part of what must match)
    indexed: int = 0

    @classmethod
    def expected(
        cls, namespace: str, spec: CollectionSpec, model: str, dim: int, bm25_source: str = "client"
    ) -> CollectionManifest:
        """What a collection for ``spec`` must hold; BM25's avg_len is the chunk length."""
        bm25 = Bm25Settings(avg_len=float(spec.size))
        return cls(
            namespace=namespace,
            size=spec.size,
            overlap=spec.overlap,
            model=model,
            dim=dim,
            bm25=bm25.as_dict(),
            bm25_source=bm25_source,
        )

    @property
    def bm25_settings(self) -> Bm25Settings:
        return Bm25Settings(**self.bm25)

    def bm25_embedder(self) -> Bm25Embedder:
        """The BM25 this collection was built with, for its ingest and its queries alike."""
        return BM25_SOURCES.get(self.bm25_source)(self.bm25_settings)

    def mismatch(self, other: CollectionManifest) -> str | None:
        for field in ("model", "dim", "bm25", "size", "overlap"):
            if getattr(self, field) != getattr(other, field):
                return f"{field} {getattr(self, field)!r} (asked for {getattr(other, field)!r})"
        return None
