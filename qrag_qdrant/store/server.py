"""Collections on a Qdrant server through qdrant-client (also runs on its local mode in tests).

The manifest lives in the collection's own ``metadata`` (Qdrant >= 1.16), so it travels
with the collection in snapshots. Aliases are Qdrant's own; Qdrant moves a set of them
atomically. New collections get the configured shards and replicas; reads ask the
configured number of replicas (``read_consistency``).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Iterable, Sequence
from functools import wraps
from typing import Any, TypeVar

import tenacity
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ..config.sections import QdrantSettings
from ..config.settings import DENSE_VECTOR, SPARSE_VECTOR, Settings
from ..embedding import Bm25Document, SparseVec
from ..errors import ConfigError, StoreError
from .base import QDRANT_RRF_K, CollectionManifest, Store
from .points import PAYLOAD_INDEXES, READERS, ChunkPoint, Hit, Sparse, VectorQuery, Where

SCROLL_PAGE = 1000
#: collection metadata keys of attachments (``Store.attach``) begin so, beside the manifest's
ATTACHMENT_PREFIX = "attached:"
#: The first server whose ``qdrant/bm25`` takes k, b, avg_len and language.
SERVER_BM25_SINCE = (1, 15, 3)
#: The first server with TurboQuant quantization.
SERVER_TURBO_SINCE = (1, 18, 0)
#: Server-side failures worth another try: in a cluster, a write that too few replicas
#: acknowledged, or a replica moving; the writes are idempotent (same ids, same filters).
RETRIED_STATUS = {500, 502, 503, 504}
#: What a collection-scoped token may not do (Qdrant wants global access for it).
ADMIN_ONLY = {"create_collection", "drop_collection", "switch_aliases"}
#: the longest wait between two tries, in seconds, however many retries are configured
MAX_BACKOFF = 30.0
#: how a retry waits (a test watches the waits through it)
pause = time.sleep
T = TypeVar("T")
#: ``qdrant.quantization``'s TurboQuant settings by the client's name for their bits a dimension
#: (looked up when used: qdrant-client has TurboQuant from 1.18, and older ones serve the rest)
TURBO_BITS = {"turbo4": "BITS4"}
CLIENT_TURBO_SINCE = "1.18"


class _Outage(Exception):
    """A call that did not reach the server, or that it failed on its side: worth another try."""

    def __init__(self, cause: str, reached: bool):
        self.cause, self.reached = cause, reached


def _answer_error(store: ServerStore, name: str, exc: UnexpectedResponse) -> Exception:
    """What an HTTP error from the server means: an outage to retry (5xx), else a StoreError that
    names the cause and the server, never the key."""
    detail = exc.content.decode(errors="replace")[:300]
    if exc.status_code == 401:
        return StoreError(
            f"Qdrant at {store.location} refused the API key or token (HTTP 401): check QRAG_QDRANT_API_KEY"
        )
    if exc.status_code == 403:
        hint = "; a namespace's first ingest and --rebuild need the server's API key" if name in ADMIN_ONLY else ""
        return StoreError(
            f"Qdrant at {store.location} refused this {name.replace('_', ' ')}"
            f" (HTTP 403): the key or token does not allow it ({detail}){hint}"
        )
    if exc.status_code not in RETRIED_STATUS:
        return StoreError(f"Qdrant at {store.location} answered HTTP {exc.status_code}: {detail}")
    return _Outage(f"HTTP {exc.status_code}: {detail}", reached=True)


def _server_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Retry calls that did not reach the server, or that it failed on its side (5xx), backing
    off exponentially with jitter (tenacity), so clients that failed together do not retry
    together; then raise one StoreError that names the cause and the server, never the key.
    Other HTTP errors (a wrong key, a bad request) are answers, not outages, and are not retried."""
    name = method.__name__

    @wraps(method)
    def wrapper(self: ServerStore, *args: Any, **kwargs: Any) -> T:
        def attempt() -> T:
            try:
                return method(self, *args, **kwargs)
            except UnexpectedResponse as exc:
                raise _answer_error(self, name, exc) from None
            except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
                raise _Outage(str(exc), reached=False) from None

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retries + 1),
            wait=tenacity.wait_exponential_jitter(initial=self.backoff, jitter=self.backoff, max=MAX_BACKOFF),
            retry=tenacity.retry_if_exception_type(_Outage),
            sleep=lambda seconds: pause(seconds),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except _Outage as outage:
            attempts = f"after {self.retries + 1} attempts: {outage.cause}"
            if not outage.reached:
                raise StoreError(f"cannot reach Qdrant at {self.location} {attempts}") from None
            raise StoreError(f"Qdrant at {self.location} failed the {name.replace('_', ' ')} {attempts}") from None

    return wrapper


class ServerStore(Store):
    models = models
    concurrent_queries = True
    keeps_attachments = True

    def __init__(self, client: QdrantClient, location: str, settings: QdrantSettings | None = None):
        self.client = client
        self.location = location
        self.settings = settings or QdrantSettings()
        self.retries, self.backoff = self.settings.retries, self.settings.backoff
        consistency = self.settings.read_consistency
        self._consistency = consistency if isinstance(consistency, int) else models.ReadConsistencyType(consistency)

    @classmethod
    def from_settings(cls, settings: Settings) -> ServerStore:
        if not settings.qdrant.url:
            raise ConfigError("qdrant.store 'server' needs the server's address: set qdrant.url (QRAG_QDRANT_URL)")
        return cls.connect(settings.qdrant)

    @classmethod
    def connect(cls, settings: QdrantSettings) -> ServerStore:
        api_key = settings.api_key.get_secret_value() if settings.api_key else None
        # no version probe: against a hung server it is one more timeout before the real call
        client = QdrantClient(
            url=settings.url, api_key=api_key, timeout=max(1, round(settings.timeout)), check_compatibility=False
        )
        return cls(client, location=str(settings.url), settings=settings)

    @_server_errors
    def collection_names(self) -> list[str]:
        return [c.name for c in self.client.get_collections().collections]

    @_server_errors
    def create_collection(self, name: str, manifest: CollectionManifest) -> None:
        layout = self.settings
        if manifest.bm25_source == "server":
            self._require(SERVER_BM25_SINCE, "cannot compute BM25", "qdrant.bm25_source = 'client'")
        if layout.quantization in TURBO_BITS:
            self._require(SERVER_TURBO_SINCE, "has no TurboQuant", "qdrant.quantization = 'int8'")
        self.client.create_collection(
            name,
            vectors_config={
                DENSE_VECTOR: models.VectorParams(
                    size=manifest.dim,
                    distance=models.Distance.COSINE,
                    on_disk=layout.vectors_on_disk,
                    quantization_config=_quantization(layout.quantization),
                    hnsw_config=models.HnswConfigDiff(m=layout.hnsw_m, ef_construct=layout.hnsw_ef_construct),
                )
            },
            sparse_vectors_config={
                SPARSE_VECTOR: models.SparseVectorParams(
                    modifier=models.Modifier.IDF, index=models.SparseIndexParams(on_disk=layout.vectors_on_disk)
                )
            },
            on_disk_payload=layout.payloads_on_disk,
            shard_number=layout.shard_number,
            replication_factor=layout.replication_factor,
            write_consistency_factor=layout.write_consistency_factor,
            metadata=manifest.model_dump(),
        )
        for key, kind in PAYLOAD_INDEXES.items():
            self.client.create_payload_index(name, key, getattr(models.PayloadSchemaType, kind.upper()), wait=True)

    def _require(self, since: tuple[int, int, int], lacking: str, instead: str) -> None:
        """A feature a new collection needs, checked against the server's version before creating it."""
        version = self.client.info().version
        if tuple(int(part) for part in version.split("-")[0].split(".")[:3]) < since:
            raise ConfigError(
                f"Qdrant {version} at {self.location} {lacking} (needs >= {'.'.join(map(str, since))}); set {instead}"
            )

    @_server_errors
    def drop_collection(self, name: str) -> None:
        self.client.delete_collection(name)

    @_server_errors
    def aliases(self) -> dict[str, str] | None:
        try:
            return {a.alias_name: a.collection_name for a in self.client.get_aliases().aliases}
        except UnexpectedResponse as exc:
            if exc.status_code == 403:  # a collection-scoped token
                return None
            raise

    @_server_errors
    def switch_aliases(self, targets: dict[str, str]) -> None:
        current = self.aliases() or {}
        self.client.update_collection_aliases(
            change_aliases_operations=[
                *(
                    models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=alias))
                    for alias in targets
                    if alias in current
                ),
                *(
                    models.CreateAliasOperation(create_alias=models.CreateAlias(alias_name=alias, collection_name=name))
                    for alias, name in targets.items()
                ),
            ]
        )

    @_server_errors
    def manifest(self, name: str) -> CollectionManifest | None:
        try:
            info = self.client.get_collection(name)  # an alias resolves to its collection
        except UnexpectedResponse as exc:
            if exc.status_code == 404:
                return None
            raise
        except ValueError:  # qdrant-client's local mode
            return None
        metadata = info.config.metadata
        if not metadata:
            raise StoreError(f"collection {name} exists but was not made by qrag-qdrant (no manifest)")
        return CollectionManifest.model_validate(metadata)

    @_server_errors
    def stamp_indexed(self, name: str, version: int) -> None:
        manifest = self.manifest(name)
        if manifest is not None:
            target = (self.aliases() or {}).get(name, name)
            self.client.update_collection(
                target, metadata=manifest.model_copy(update={"indexed": version}).model_dump()
            )

    @_server_errors
    def attachment(self, name: str, key: str) -> bytes | None:
        try:
            metadata = self.client.get_collection(name).config.metadata or {}
        except UnexpectedResponse as exc:
            if exc.status_code == 404:
                return None
            raise
        except ValueError:  # qdrant-client's local mode: no such collection
            return None
        data = metadata.get(ATTACHMENT_PREFIX + key)
        return base64.b64decode(data) if data else None

    @_server_errors
    def attach(self, name: str, key: str, data: bytes | None) -> None:
        """Kept in the collection's metadata beside the manifest (None clears it, whether the
        server merges metadata or replaces it)."""
        target = (self.aliases() or {}).get(name, name)
        metadata = dict(self.client.get_collection(target).config.metadata or {})
        metadata[ATTACHMENT_PREFIX + key] = base64.b64encode(data).decode() if data is not None else None
        self.client.update_collection(target, metadata=metadata)

    @_server_errors
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        if points:
            self.client.upsert(
                name,
                wait=True,
                points=[
                    models.PointStruct(
                        id=p.id,
                        payload=p.payload.as_dict(),
                        vector={DENSE_VECTOR: list(map(float, p.dense)), SPARSE_VECTOR: _client_vector(p.sparse)},
                    )
                    for p in points
                ],
            )

    @_server_errors
    def delete(self, name: str, where: Where) -> None:
        self.client.delete(name, points_selector=models.FilterSelector(filter=self.filter_of(where)), wait=True)

    @_server_errors
    def set_payload(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        if READERS in payload:  # a collection created before documents had readers has no index of them
            self.client.create_payload_index(name, READERS, models.PayloadSchemaType.KEYWORD, wait=True)
        selector = models.FilterSelector(filter=self.filter_of(where))
        self.client.set_payload(name, payload=payload, points=selector, wait=True)

    @_server_errors
    def scroll_payloads(self, name: str, fields: list[str], where: Where | None = None) -> Iterable[dict[str, Any]]:
        offset = None
        payloads: list[dict[str, Any]] = []
        while True:
            records, offset = self.client.scroll(
                name,
                scroll_filter=self.filter_of(where),
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=fields,
                with_vectors=False,
                consistency=self._consistency,
            )
            payloads.extend(record.payload or {} for record in records)
            if offset is None:
                return payloads

    @_server_errors
    def scroll_points(self, name: str) -> Iterable[ChunkPoint]:
        offset, points = None, list[ChunkPoint]()
        while True:
            records, offset = self.client.scroll(
                name,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=True,
                with_vectors=True,
                consistency=self._consistency,
            )
            points.extend(ChunkPoint.of(record) for record in records)
            if offset is None:
                return points

    @_server_errors
    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        quantized = (
            models.QuantizationSearchParams(rescore=True, oversampling=self.settings.oversampling)
            if self.settings.quantization != "none"
            else None
        )
        responses = self.client.query_batch_points(
            name,
            requests=[
                models.QueryRequest(
                    query=_client_vector(q.vector),
                    using=q.vector_name,
                    limit=q.limit,
                    score_threshold=q.min_score,
                    filter=self.filter_of(q.where),
                    with_vector=[DENSE_VECTOR],
                    with_payload=True,
                    params=models.SearchParams(
                        hnsw_ef=q.hnsw_ef,
                        exact=q.exact,
                        quantization=models.QuantizationSearchParams(ignore=True) if q.exact else quantized,
                    )
                    if q.hnsw_ef or q.exact or quantized
                    else None,
                )
                for q in queries
            ],
            consistency=self._consistency,
        )
        return Hit.all_of(response.points for response in responses)

    @_server_errors
    def hybrid(self, name: str, dense: Sequence[float], sparse: Sparse, limit: int, prefetch_limit: int) -> list[Hit]:
        response = self.client.query_points(
            name,
            limit=limit,
            with_payload=True,
            with_vectors=False,
            consistency=self._consistency,
            prefetch=[
                models.Prefetch(query=_client_vector(dense), using=DENSE_VECTOR, limit=prefetch_limit),
                models.Prefetch(query=_client_vector(sparse), using=SPARSE_VECTOR, limit=prefetch_limit),
            ],
            query=models.RrfQuery(rrf=models.Rrf(k=QDRANT_RRF_K)),
        )
        return [Hit.of(p) for p in response.points]

    @_server_errors
    def count(self, name: str, where: Where | None = None) -> int:
        return self.client.count(name, count_filter=self.filter_of(where), exact=True).count

    def is_empty(self, key: str) -> Any:
        return models.IsEmptyCondition(is_empty=models.PayloadField(key=key))

    def datetime_range(self, key: str, after: str | None, before: str | None) -> Any:
        return models.FieldCondition(key=key, range=models.DatetimeRange(gte=after, lt=before))

    def close(self) -> None:
        self.client.close()


def _client_vector(vector: Sequence[float] | Sparse) -> Any:
    if isinstance(vector, SparseVec):
        return models.SparseVector(indices=vector.indices, values=vector.values)
    if isinstance(vector, Bm25Document):
        return models.Document(text=vector.text, model=Bm25Document.MODEL, options=vector.settings.as_dict())
    return list(map(float, vector))


def _quantization(kind: str) -> models.QuantizationConfig | None:
    """The quantized copy of the dense vectors that stays in RAM and is searched first."""
    if kind == "int8":
        return models.ScalarQuantization(
            scalar=models.ScalarQuantizationConfig(type=models.ScalarType.INT8, quantile=0.99, always_ram=True)
        )
    if kind in TURBO_BITS:
        if not hasattr(models, "TurboQuantization"):
            raise ConfigError(
                f"qdrant.quantization = '{kind}' needs qdrant-client >= {CLIENT_TURBO_SINCE} "
                "(pip install -U qdrant-client); or set qdrant.quantization = 'int8'"
            )
        return models.TurboQuantization(
            turbo=models.TurboQuantQuantizationConfig(
                bits=getattr(models.TurboQuantBitSize, TURBO_BITS[kind]), always_ram=True
            )
        )
    return None
