"""A store of another engine: a brute-force, in-memory store that implements only ``Store``'s
abstract methods and reads ``Where`` its own way. It shows the interface is enough for the
pipeline (``test_store_conformance.py`` runs the kit and a whole ingest and query on it) and is
what a plug-in for another vector database starts from."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from qrag_qdrant.config.names import collection_pattern
from qrag_qdrant.config.settings import SPARSE_VECTOR
from qrag_qdrant.embedding import SparseVec
from qrag_qdrant.errors import StoreError
from qrag_qdrant.store import ChunkPoint, CollectionManifest, Hit, Store, VectorQuery, Where
from qrag_qdrant.store.filters import utc_time


class MemoryStore(Store):
    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.collections: dict[str, tuple[CollectionManifest, dict[str, ChunkPoint]]] = {}
        self.alias_targets: dict[str, str] = {}

    def _points(self, name: str) -> dict[str, ChunkPoint]:
        return self.collections[self.alias_targets.get(name, name)][1]

    def collection_names(self) -> list[str]:
        return list(self.collections)

    def create_collection(self, name: str, manifest: CollectionManifest) -> None:
        if not collection_pattern(self.namespace).match(name):
            raise StoreError(f"collection {name} is not in namespace {self.namespace!r}")
        if manifest.bm25_source == "server":
            raise StoreError("an in-memory store has no server to compute BM25")
        self.collections[name] = (manifest, {})

    def drop_collection(self, name: str) -> None:
        if name in self.alias_targets.values():
            raise StoreError(f"collection {name} is still served by an alias")
        self.collections.pop(name, None)

    def aliases(self) -> dict[str, str]:
        return dict(self.alias_targets)

    def switch_aliases(self, targets: dict[str, str]) -> None:
        if missing := set(targets.values()) - self.collections.keys():
            raise StoreError(f"no such collection: {', '.join(sorted(missing))}")
        self.alias_targets |= targets

    def manifest(self, name: str) -> CollectionManifest | None:
        found = self.collections.get(self.alias_targets.get(name, name))
        return None if found is None else found[0]

    def stamp_indexed(self, name: str, version: int) -> None:
        resolved = self.alias_targets.get(name, name)
        if resolved in self.collections:
            manifest, points = self.collections[resolved]
            self.collections[resolved] = (manifest.model_copy(update={"indexed": version}), points)

    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        self._points(name).update((point.id, point) for point in points)

    def delete(self, name: str, where: Where) -> None:
        points = self._points(name)
        for point in list(self.scroll_points(name, where)):
            del points[point.id]

    def scroll_points(self, name: str, where: Where | None = None) -> Iterable[ChunkPoint]:
        return [point for point in self._points(name).values() if where is None or selects(where, point)]

    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        return [self._search(name, query) for query in queries]

    def _search(self, name: str, query: VectorQuery) -> list[Hit]:
        points = list(self.scroll_points(name, query.where))
        if query.vector_name == SPARSE_VECTOR:
            assert isinstance(query.vector, SparseVec), "BM25 texts are turned into vectors by a server only"
            idf = _idf(self._points(name).values(), query.vector.indices)
            scores = [_sparse_score(query.vector, point.sparse, idf) for point in points]
            found = [(score, point) for score, point in zip(scores, points, strict=True) if score > 0]
        else:
            wanted = _unit(query.vector)
            vectors = [point.vectors[query.vector_name] for point in points]
            found = [(float(_unit(vector) @ wanted), point) for vector, point in zip(vectors, points, strict=True)]
        if query.min_score is not None:
            found = [(score, point) for score, point in found if score >= query.min_score]
        found.sort(key=lambda pair: (-pair[0], pair[1].id))
        return [
            Hit(point.id, score, _unit(point.dense).astype(np.float32), point.payload)
            for score, point in found[: query.limit]
        ]


def selects(where: Where, point: ChunkPoint) -> bool:
    """``where`` read as ``Store`` documents each field (the built-ins compile it to Qdrant's filter)."""
    payload = point.payload
    readable = lambda groups: not payload.readers or bool(groups & set(payload.readers))  # noqa: E731
    documents = where.documents
    published = payload.published and utc_time(payload.published)
    return all(
        (
            not where.first_chunks or payload.chunk_index == 0,
            where.sources is None or payload.source in where.sources,
            payload.source not in where.not_sources,
            not where.stale or any(s == payload.source and h != payload.doc_hash for s, h in where.stale),
            where.readers is None or readable(where.readers),
            where.unreadable_by is None or not readable(where.unreadable_by),
            documents is None or not documents.publisher or payload.publisher in documents.publisher,
            documents is None or not documents.author or payload.author in documents.author,
            documents is None or not documents.after or bool(published and published >= documents.after),
            documents is None or not documents.before or bool(published and published < documents.before),
        )
    )


def _unit(vector: Any) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    norm = np.linalg.norm(array)
    return array / norm if norm else array


def _idf(points: Iterable[ChunkPoint], terms: Sequence[int]) -> dict[int, float]:
    """Qdrant's IDF modifier: ln((N - n + 0.5) / (n + 0.5) + 1) over the collection's points."""
    sparse = [set(point.sparse.indices) for point in points if isinstance(point.sparse, SparseVec)]
    frequency = {term: sum(term in held for held in sparse) for term in terms}
    return {term: math.log((len(sparse) - n + 0.5) / (n + 0.5) + 1) for term, n in frequency.items()}


def _sparse_score(query: SparseVec, stored: Any, idf: dict[int, float]) -> float:
    weights = dict(zip(stored.indices, stored.values, strict=True))
    asked = zip(query.indices, query.values, strict=True)
    return sum(value * weights.get(term, 0.0) * idf[term] for term, value in asked)
