"""The small store interface both backends implement with the same semantics.

A collection holds one chunking of a namespace's corpus: a ``dense`` vector and a
``bm25`` sparse vector (IDF modifier) per chunk, and the chunk's payload. Its manifest
records the embedding model and BM25 setup, so vectors are never silently mixed.

Completeness marker: a document's chunk 0 is written after its other chunks (see
``ingest``), so a version of a document counts as stored only when its chunk 0 exists.
"""

from __future__ import annotations

import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from pydantic import BaseModel

from ..config import DENSE_VECTOR, SPARSE_VECTOR, CollectionSpec
from ..embedding import Bm25Settings, SparseVec
from ..errors import ModelMismatchError

#: Qdrant's default k for its RRF fusion; the qdrant-hybrid baseline uses Qdrant as a peer would.
QDRANT_RRF_K = 2

__all__ = ["DENSE_VECTOR", "SPARSE_VECTOR", "ChunkPoint", "CollectionManifest", "Hit", "Store", "VectorQuery"]


class CollectionManifest(BaseModel):
    """What a collection was built with; a query or ingest with anything else is refused."""

    format: int = 1
    namespace: str
    size: int
    overlap: int
    model: str
    dim: int
    bm25: dict[str, Any]

    @classmethod
    def expected(cls, namespace: str, spec: CollectionSpec, model: str, dim: int) -> CollectionManifest:
        """What a collection for ``spec`` must hold; BM25's avg_len is the chunk length."""
        bm25 = Bm25Settings(avg_len=float(spec.size))
        return cls(namespace=namespace, size=spec.size, overlap=spec.overlap, model=model, dim=dim,
                   bm25=bm25.as_dict())

    @property
    def bm25_settings(self) -> Bm25Settings:
        return Bm25Settings(**self.bm25)

    def mismatch(self, other: CollectionManifest) -> str | None:
        for field in ("model", "dim", "bm25", "size", "overlap"):
            if getattr(self, field) != getattr(other, field):
                return f"{field} {getattr(self, field)!r} (asked for {getattr(other, field)!r})"
        return None


@dataclass(frozen=True)
class ChunkPoint:
    id: str
    dense: Sequence[float]
    sparse: SparseVec
    payload: dict[str, Any]


@dataclass(frozen=True)
class VectorQuery:
    """One retriever's search: ``vector_name`` is ``dense`` or ``bm25``; hits scoring
    below ``min_score`` are not returned."""

    vector_name: str
    vector: Sequence[float] | SparseVec
    limit: int
    min_score: float | None = None


@dataclass(frozen=True)
class Hit:
    """A found chunk with its STORED dense vector (unit length), used for clustering."""

    id: str
    score: float
    dense: np.ndarray
    payload: dict[str, Any]

    @classmethod
    def of(cls, point: Any) -> Hit:
        """From a scored point of either engine, queried with the dense vector and payload."""
        return cls(str(point.id), point.score, np.asarray(point.vector[DENSE_VECTOR], dtype=np.float32),
                   point.payload or {})


POINT_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/qrag-qdrant/point-id")


def point_id(collection: str, source: str, chunk_index: int, doc_hash: str) -> str:
    """uuid5 of (collection, source, chunk index, content hash). The collection name holds the
    namespace; the hash keeps a file's new version from overwriting the old one while it is
    written, so a reader sees one version or the other."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{collection}\x1f{source}\x1f{chunk_index}\x1f{doc_hash}"))


def collection_pattern(namespace: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(namespace)}-c\d+-o\d+$")


class Store(ABC):
    """A place for collections: Qdrant Edge in-process, or a Qdrant server."""

    #: ``qdrant_edge`` or ``qdrant_client.models``: both spell filters the same way.
    models: ModuleType

    @abstractmethod
    def collection_names(self) -> list[str]: ...

    @abstractmethod
    def create_collection(self, name: str, manifest: CollectionManifest) -> None: ...

    @abstractmethod
    def manifest(self, name: str) -> CollectionManifest | None:
        """None when the collection does not exist."""

    @abstractmethod
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None: ...

    @abstractmethod
    def delete(self, name: str, selector: Any) -> None:
        """Delete the points a filter of ``self.models`` selects."""

    @abstractmethod
    def scroll_payloads(self, name: str, fields: list[str], selector: Any | None = None) -> Iterable[dict[str, Any]]: ...

    @abstractmethod
    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        """All of a collection's searches in one round trip, results in request order."""

    @abstractmethod
    def hybrid(self, name: str, dense: Sequence[float], sparse: SparseVec, limit: int,
               prefetch_limit: int) -> list[Hit]:
        """Qdrant's own hybrid query: dense and bm25 prefetches fused by Qdrant's RRF (k=2)."""

    @abstractmethod
    def count(self, name: str) -> int: ...

    def finish_bulk(self, name: str) -> None:
        """Called after a bulk write, e.g. to build indexes."""

    def close(self) -> None:
        """Release the store."""

    # Shared semantics built on the primitives above.

    def list_collections(self, namespace: str) -> list[str]:
        pattern = collection_pattern(namespace)
        return sorted(name for name in self.collection_names() if pattern.match(name))

    def open_collection(self, name: str, manifest: CollectionManifest, create: bool) -> bool:
        """Check a collection was built like ``manifest``; create it if asked. True if it exists."""
        stored = self.manifest(name)
        if stored is None:
            if create:
                self.create_collection(name, manifest)
            return create
        problem = stored.mismatch(manifest)
        if problem:
            raise ModelMismatchError(
                f"collection {name} was built with {problem}; re-ingest into a new namespace or "
                "store, or use the config it was built with"
            )
        return True

    def document_hashes(self, name: str) -> dict[str, set[str]]:
        """source -> content hashes of its completely stored versions (two only after a crash
        between a new version's marker and the old version's deletion)."""
        hashes: dict[str, set[str]] = {}
        for p in self.scroll_payloads(name, ["source", "doc_hash"], self._first_chunks()):
            hashes.setdefault(p["source"], set()).add(p["doc_hash"])
        return hashes

    def current_versions(self, name: str, sources: Iterable[str]) -> dict[str, str]:
        """source -> hash of its newest complete version: what a reader may see of it."""
        sources = sorted(set(sources))
        newest: dict[str, tuple[int, str]] = {}
        if sources:
            m = self.models
            selector = self._first_chunks(m.FieldCondition(key="source", match=m.MatchAny(any=sources)))
            for p in self.scroll_payloads(name, ["source", "doc_hash", "version"], selector):
                version = p.get("version", 0)  # points written before versions were stamped
                if (version, p["doc_hash"]) > newest.get(p["source"], (-1, "")):
                    newest[p["source"]] = (version, p["doc_hash"])
        return {source: digest for source, (_, digest) in newest.items()}

    def _first_chunks(self, *conditions: Any) -> Any:
        return self.models.Filter(must=[self._match("chunk_index", 0), *conditions])

    def sources(self, name: str) -> set[str]:
        """Every source with any point, complete or not."""
        return {p["source"] for p in self.scroll_payloads(name, ["source"])}

    def delete_stale(self, name: str, current: dict[str, str]) -> None:
        """Delete the points of these sources whose hash is not the current one."""
        if current:
            m = self.models
            self.delete(name, m.Filter(should=[
                m.Filter(must=[self._match("source", source)], must_not=[self._match("doc_hash", digest)])
                for source, digest in current.items()
            ]))

    def delete_sources(self, name: str, sources: Iterable[str]) -> None:
        sources = sorted(sources)
        if sources:
            m = self.models
            self.delete(name, m.Filter(must=[m.FieldCondition(key="source", match=m.MatchAny(any=sources))]))

    def _match(self, key: str, value: Any) -> Any:
        m = self.models
        return m.FieldCondition(key=key, match=m.MatchValue(value=value))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
