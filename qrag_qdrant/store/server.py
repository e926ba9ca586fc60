"""Collections on a Qdrant server through qdrant-client (also runs on its local mode in tests).

The manifest lives in the collection's own ``metadata`` (Qdrant >= 1.16), so it travels
with the collection in snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from typing import Any, TypeVar

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ..config import DENSE_VECTOR, SPARSE_VECTOR, QdrantSettings
from ..embedding import SparseVec
from ..errors import StoreError
from .base import QDRANT_RRF_K, ChunkPoint, CollectionManifest, Hit, Store, VectorQuery

SCROLL_PAGE = 1000
T = TypeVar("T")


def _server_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Retry calls that did not reach the server, with exponential backoff; then raise one
    StoreError that names the cause and the server, never the key. HTTP errors (a wrong
    key, a bad request) are answers, not outages, and are not retried."""

    @wraps(method)
    def wrapper(self: ServerStore, *args: Any, **kwargs: Any) -> T:
        attempt = 0
        while True:
            try:
                return method(self, *args, **kwargs)
            except UnexpectedResponse as exc:
                if exc.status_code in (401, 403):
                    raise StoreError(f"Qdrant at {self.location} refused the API key or token "
                                     f"(HTTP {exc.status_code}): check QRAG_QDRANT_API_KEY") from None
                raise StoreError(f"Qdrant at {self.location} answered HTTP {exc.status_code}: "
                                 f"{exc.content.decode(errors='replace')[:300]}") from None
            except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
                if attempt == self.retries:
                    raise StoreError(f"cannot reach Qdrant at {self.location} after {attempt + 1} attempts: "
                                     f"{exc}") from None
                time.sleep(self.backoff * 2**attempt)
                attempt += 1

    return wrapper


class ServerStore(Store):
    models = models

    def __init__(self, client: QdrantClient, location: str, retries: int = 0, backoff: float = 0.5):
        self.client = client
        self.location = location
        self.retries, self.backoff = retries, backoff

    @classmethod
    def connect(cls, settings: QdrantSettings) -> ServerStore:
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        # no version probe: against a hung server it is one more timeout before the real call
        client = QdrantClient(url=settings.url, api_key=api_key, timeout=max(1, round(settings.timeout)),
                              check_compatibility=False)
        return cls(client, location=str(settings.url), retries=settings.retries, backoff=settings.backoff)

    @_server_errors
    def collection_names(self) -> list[str]:
        return [c.name for c in self.client.get_collections().collections]

    @_server_errors
    def create_collection(self, name: str, manifest: CollectionManifest) -> None:
        self.client.create_collection(
            name,
            vectors_config={DENSE_VECTOR: models.VectorParams(size=manifest.dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE_VECTOR: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata=manifest.model_dump(),
        )
        self.client.create_payload_index(name, "source", models.PayloadSchemaType.KEYWORD)
        self.client.create_payload_index(name, "chunk_index", models.PayloadSchemaType.INTEGER)

    @_server_errors
    def manifest(self, name: str) -> CollectionManifest | None:
        if not self.client.collection_exists(name):
            return None
        metadata = self.client.get_collection(name).config.metadata
        if not metadata:
            raise StoreError(f"collection {name} exists but was not made by qrag-qdrant (no manifest)")
        return CollectionManifest.model_validate(metadata)

    @_server_errors
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        if points:
            self.client.upsert(name, wait=True, points=[
                models.PointStruct(id=p.id, payload=p.payload, vector={
                    DENSE_VECTOR: list(map(float, p.dense)),
                    SPARSE_VECTOR: models.SparseVector(indices=p.sparse.indices, values=p.sparse.values),
                })
                for p in points
            ])

    @_server_errors
    def delete(self, name: str, selector: Any) -> None:
        self.client.delete(name, points_selector=models.FilterSelector(filter=selector), wait=True)

    @_server_errors
    def scroll_payloads(self, name: str, fields: list[str], selector: Any | None = None) -> Iterable[dict[str, Any]]:
        offset = None
        payloads: list[dict[str, Any]] = []
        while True:
            records, offset = self.client.scroll(name, scroll_filter=selector, limit=SCROLL_PAGE, offset=offset,
                                                 with_payload=fields, with_vectors=False)
            payloads.extend(record.payload or {} for record in records)
            if offset is None:
                return payloads

    @_server_errors
    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        responses = self.client.query_batch_points(name, requests=[
            models.QueryRequest(query=_client_vector(q.vector), using=q.vector_name, limit=q.limit,
                                score_threshold=q.min_score, with_vector=[DENSE_VECTOR], with_payload=True)
            for q in queries
        ])
        return [[Hit.of(p) for p in response.points] for response in responses]

    @_server_errors
    def hybrid(self, name: str, dense: Sequence[float], sparse: SparseVec, limit: int,
               prefetch_limit: int) -> list[Hit]:
        response = self.client.query_points(
            name, limit=limit, with_payload=True, with_vectors=[DENSE_VECTOR],
            prefetch=[models.Prefetch(query=_client_vector(dense), using=DENSE_VECTOR, limit=prefetch_limit),
                      models.Prefetch(query=_client_vector(sparse), using=SPARSE_VECTOR, limit=prefetch_limit)],
            query=models.RrfQuery(rrf=models.Rrf(k=QDRANT_RRF_K)))
        return [Hit.of(p) for p in response.points]

    @_server_errors
    def count(self, name: str) -> int:
        return self.client.count(name, exact=True).count

    def close(self) -> None:
        self.client.close()


def _client_vector(vector: Sequence[float] | SparseVec) -> Any:
    if isinstance(vector, SparseVec):
        return models.SparseVector(indices=vector.indices, values=vector.values)
    return list(map(float, vector))
