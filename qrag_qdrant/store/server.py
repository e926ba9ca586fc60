"""Collections on a Qdrant server through qdrant-client (also runs on its local mode in tests).

The manifest lives in the collection's own ``metadata`` (Qdrant >= 1.16), so it travels
with the collection in snapshots. Aliases are Qdrant's own; Qdrant moves a set of them
atomically. New collections get the configured shards and replicas; reads ask the
configured number of replicas (``read_consistency``).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from ..config.sections import QdrantSettings
from ..config.settings import DENSE_VECTOR, SPARSE_VECTOR, Settings
from ..embedding import Bm25Document, SparseVec
from ..errors import ConfigError, StoreError
from .base import CollectionManifest
from .points import PAYLOAD_INDEXES, READERS, ChunkPoint, Hit, Sparse, VectorQuery, Where
from .qdrant import QDRANT_RRF_K, QdrantStore
from .retries import server_errors

SCROLL_PAGE = 1000
#: collection metadata keys of attachments (``Store.attach``) begin so, beside the manifest's
ATTACHMENT_PREFIX = "attached:"
#: The first server whose ``qdrant/bm25`` takes k, b, avg_len and language.
SERVER_BM25_SINCE = (1, 15, 3)
#: The first server with TurboQuant quantization.
SERVER_TURBO_SINCE = (1, 18, 0)
#: ``qdrant.quantization``'s TurboQuant settings by the client's name for their bits a dimension
#: (looked up when used: qdrant-client has TurboQuant from 1.18, and older ones serve the rest)
TURBO_BITS = {"turbo4": "BITS4"}
CLIENT_TURBO_SINCE = "1.18"


class ServerStore(QdrantStore):
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

    @server_errors
    def collection_names(self) -> list[str]:
        return [c.name for c in self.client.get_collections().collections]

    @server_errors
    def create_collection(self, name: str, manifest: CollectionManifest) -> None:
        layout = self.settings
        if manifest.bm25_source == "server":
            self._require(SERVER_BM25_SINCE, "cannot compute BM25", "qdrant.bm25_source = 'client'")
        if layout.quantization in TURBO_BITS:
            self._require(SERVER_TURBO_SINCE, "has no TurboQuant", "qdrant.quantization = 'int8'")
        self.client.create_collection(
            name,
            vectors_config={
                vector: models.VectorParams(
                    size=dim,
                    distance=models.Distance.COSINE,
                    on_disk=layout.vectors_on_disk,
                    quantization_config=_quantization(layout.quantization),
                    hnsw_config=models.HnswConfigDiff(m=layout.hnsw_m, ef_construct=layout.hnsw_ef_construct),
                )
                for vector, dim in manifest.dense_dims.items()
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

    @server_errors
    def drop_collection(self, name: str) -> None:
        self.client.delete_collection(name)

    @server_errors
    def aliases(self) -> dict[str, str] | None:
        try:
            return {a.alias_name: a.collection_name for a in self.client.get_aliases().aliases}
        except UnexpectedResponse as exc:
            if exc.status_code == 403:  # a collection-scoped token
                return None
            raise

    @server_errors
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

    @server_errors
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

    @server_errors
    def stamp_indexed(self, name: str, version: int) -> None:
        manifest = self.manifest(name)
        if manifest is not None:
            target = (self.aliases() or {}).get(name, name)
            self.client.update_collection(
                target, metadata=manifest.model_copy(update={"indexed": version}).model_dump()
            )

    @server_errors
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

    @server_errors
    def attach(self, name: str, key: str, data: bytes | None) -> None:
        """Kept in the collection's metadata beside the manifest (None clears it, whether the
        server merges metadata or replaces it)."""
        target = (self.aliases() or {}).get(name, name)
        metadata = dict(self.client.get_collection(target).config.metadata or {})
        metadata[ATTACHMENT_PREFIX + key] = base64.b64encode(data).decode() if data is not None else None
        self.client.update_collection(target, metadata=metadata)

    @server_errors
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        if points:
            self.client.upsert(
                name,
                wait=True,
                points=[
                    models.PointStruct(
                        id=p.id,
                        payload=p.payload.as_dict(),
                        vector={**p.vectors, SPARSE_VECTOR: _client_vector(p.sparse)},
                    )
                    for p in points
                ],
            )

    @server_errors
    def delete(self, name: str, where: Where) -> None:
        self.client.delete(name, points_selector=models.FilterSelector(filter=self.filter_of(where)), wait=True)

    @server_errors
    def set_payload(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        if READERS in payload:  # a collection created before documents had readers has no index of them
            self.client.create_payload_index(name, READERS, models.PayloadSchemaType.KEYWORD, wait=True)
        selector = models.FilterSelector(filter=self.filter_of(where))
        self.client.set_payload(name, payload=payload, points=selector, wait=True)

    def scroll_payloads(self, name: str, fields: list[str], where: Where | None = None) -> Iterable[dict[str, Any]]:
        return [record.payload or {} for record in self._scroll(name, where, fields)]

    def scroll_points(self, name: str, where: Where | None = None) -> Iterable[ChunkPoint]:
        return [ChunkPoint.of(record) for record in self._scroll(name, where, True, vectors=True)]

    @server_errors
    def _scroll(self, name: str, where: Where | None, payload: Any, vectors: bool = False) -> list[Any]:
        """Read whole, page by page, so a server's error is raised here (``server_errors``)."""
        selected, offset, records = self.filter_of(where), None, list[Any]()
        while True:
            page, offset = self.client.scroll(
                name,
                scroll_filter=selected,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=payload,
                with_vectors=vectors,
                consistency=self._consistency,
            )
            records.extend(page)
            if offset is None:
                return records

    @server_errors
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

    @server_errors
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

    @server_errors
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
