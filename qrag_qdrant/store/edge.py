"""The embedded default: Qdrant Edge in-process, one shard directory per collection.

Layout: ``<store>/<collection>/shard/`` (Qdrant's files) and ``<store>/<collection>/manifest.json``.
Edge lets one process open a shard, so each namespace is locked by one process at a time
(``<store>/.lock-<namespace>``): two teams can ingest into one store folder at once, while a
second process on the same namespace fails fast instead of waiting or corrupting anything.

Aliases: ``<store>/.aliases-<namespace>.json`` maps each alias to its collection folder.
Moving aliases writes a new file and renames it over the old one, so a rebuild's folders
replace the old ones in one atomic step (the embedded form of Qdrant's alias switch).
"""

from __future__ import annotations

import errno
import json
import shutil
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import filelock
import qdrant_edge as edge

from ..config.names import collection_pattern, namespace_of
from ..config.sections import QdrantSettings
from ..config.settings import DENSE_VECTOR, SPARSE_VECTOR, Settings
from ..embedding import Bm25Document, SparseVec
from ..errors import StoreError, StoreInUseError
from .base import ATTACHMENTS, CollectionManifest
from .files import held_by, read_ahead, write_atomically
from .points import PAYLOAD_INDEXES, READERS, ChunkPoint, Hit, Sparse, VectorQuery, Where
from .qdrant import QDRANT_RRF_K, QdrantStore

MANIFEST = "manifest.json"
SHARD = "shard"
LOCK = ".lock"
ALIASES = ".aliases"
WAL = "wal"
SCROLL_PAGE = 1000
#: below this many KB of vectors in a segment Qdrant scans it instead of searching its graph (its default)
FULL_SCAN_KB = 10_000
#: ``qdrant.quantization``'s TurboQuant settings by the engine's name for their bits a dimension
TURBO_BITS = {"turbo4": "Bits4"}


class EdgeStore(QdrantStore):
    models = edge
    keeps_attachments = True

    @classmethod
    def from_settings(cls, settings: Settings) -> EdgeStore:
        return cls(settings.store, settings.namespace, settings.qdrant)

    def __init__(self, root: Path, namespace: str = "default", layout: QdrantSettings | None = None):
        self.root = Path(root)
        self.namespace = namespace
        #: how new collections hold their vectors and payloads, and how quantized ones are searched
        self.layout = layout or QdrantSettings()
        self._shards: dict[str, edge.EdgeShard] = {}
        # one process holds a namespace: a lock file per namespace (flock on POSIX, msvcrt on Windows)
        self._lock = filelock.FileLock(self.root / f"{LOCK}-{namespace}", timeout=0, thread_local=False)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except filelock.Timeout:
            raise StoreInUseError(held_by(self.root, namespace)) from None
        except OSError as exc:
            hint = (
                " (Qdrant Edge writes its log even to answer queries: copy the store to a writable folder)"
                if exc.errno in (errno.EROFS, errno.EACCES)
                else ""
            )
            raise StoreError(f"cannot open store {self.root}: {exc.strerror or exc}{hint}") from None
        self._written: set[str] = set()  # collections this process wrote: only they need a flush
        self._versions: dict[str, dict[str, str | None]] = {}
        self._complete: set[str] = set()  # collections whose version cache holds every source
        self._versions_generation = 0
        self._versions_lock = threading.Lock()
        self._aliases_file = self.root / f"{ALIASES}-{namespace}.json"
        saved = self._aliases_file.read_text() if self._aliases_file.is_file() else "{}"
        self._aliases: dict[str, str] = json.loads(saved)

    def collection_names(self) -> list[str]:
        return [p.name for p in self.root.iterdir() if (p / MANIFEST).is_file()]

    def aliases(self) -> dict[str, str]:
        """This namespace's aliases, and every other namespace's as last written."""
        aliases: dict[str, str] = {}
        for path in sorted(self.root.glob(f"{ALIASES}-*.json")):
            aliases |= self._aliases if path == self._aliases_file else json.loads(path.read_text())
        return aliases

    def switch_aliases(self, targets: dict[str, str]) -> None:
        for alias, collection in targets.items():
            self._own(alias)
            if not (self.root / collection / MANIFEST).is_file():
                raise StoreError(f"cannot point alias {alias} at {collection}: no such collection")
        aliases = {**self._aliases, **targets}
        write_atomically(self._aliases_file, json.dumps(aliases, indent=2, sort_keys=True))
        self._aliases = aliases
        self._forget_versions()

    def drop_collection(self, name: str) -> None:
        self._own(name)
        if name in self._aliases.values():
            raise StoreError(f"collection {name} is still served by an alias")
        shard = self._shards.pop(name, None)
        self._written.discard(name)
        if shard is not None:
            shard.close()
        # the manifest goes first: a crash mid-delete leaves a folder that is no collection
        (self.root / name / MANIFEST).unlink(missing_ok=True)
        shutil.rmtree(self.root / name, ignore_errors=True)

    def create_collection(self, name: str, manifest: CollectionManifest) -> None:
        self._own(name)
        if manifest.bm25_source == "server":
            raise StoreError(
                "the embedded store has no server to compute BM25: qdrant.bm25_source must not be "
                "'server' without qdrant.url"
            )
        folder = self.root / name
        shutil.rmtree(folder, ignore_errors=True)  # a folder without manifest is a crashed create
        layout = self.layout
        config = edge.EdgeConfig(
            vectors={
                vector: edge.EdgeVectorParams(
                    size=dim,
                    distance=edge.Distance.Cosine,
                    on_disk=layout.vectors_on_disk,
                    quantization_config=_quantization(layout.quantization),
                )
                for vector, dim in manifest.dense_dims.items()
            },
            sparse_vectors={
                SPARSE_VECTOR: edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf, on_disk=layout.vectors_on_disk)
            },
            # A query reads the payload of every candidate (about 63): on disk that cost +5 ms p50 at
            # 200k points per collection, in RAM about 1.4 KB per chunk (docs/scaling.md)
            on_disk_payload=layout.payloads_on_disk,
            hnsw_config=edge.HnswIndexConfig(
                m=layout.hnsw_m, ef_construct=layout.hnsw_ef_construct, full_scan_threshold=FULL_SCAN_KB
            ),
        )
        shard = edge.EdgeShard.create(str(folder / SHARD), config)
        self._written.add(name)
        for key, kind in PAYLOAD_INDEXES.items():
            shard.update(edge.UpdateOperation.create_field_index(key, getattr(edge.PayloadSchemaType, kind.title())))
        self._shards[name] = shard
        write_atomically(folder / MANIFEST, manifest.model_dump_json(indent=2))

    def manifest(self, name: str) -> CollectionManifest | None:
        path = self.root / self._aliases.get(name, name) / MANIFEST
        if not path.is_file():
            return None
        return CollectionManifest.model_validate(json.loads(path.read_text()))

    def stamp_indexed(self, name: str, version: int) -> None:
        manifest = self.manifest(name)
        if manifest is not None:
            write_atomically(
                self.root / self._aliases.get(name, name) / MANIFEST,
                manifest.model_copy(update={"indexed": version}).model_dump_json(indent=2),
            )

    def attachment(self, name: str, key: str) -> bytes | None:
        path = self._attachment_path(name, key)
        return path.read_bytes() if path.is_file() else None

    def attach(self, name: str, key: str, data: bytes | None) -> None:
        self._own(name)
        path = self._attachment_path(name, key)
        if data is None:
            path.unlink(missing_ok=True)
        else:
            write_atomically(path, data)

    def _attachment_path(self, name: str, key: str) -> Path:
        if key not in ATTACHMENTS:
            raise StoreError(f"unknown collection attachment {key!r}")
        return self.root / self._aliases.get(name, name) / key

    def _own(self, name: str) -> None:
        if not collection_pattern(self.namespace).match(name):
            raise StoreError(f"collection {name} is not in namespace {self.namespace!r}")

    def _shard(self, name: str) -> edge.EdgeShard:
        """The shard behind an alias or collection name, opened once."""
        self._own(name)
        name = self._aliases.get(name, name)
        if name not in self._shards:
            try:
                self._shards[name] = edge.EdgeShard.load(str(self.root / name / SHARD))
            except Exception as exc:  # the binding raises a bare Exception with the engine's text
                raise StoreError(f"cannot open collection {name} in {self.root}: {exc}") from None
        return self._shards[name]

    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None:
        if points:
            self._update(
                name,
                edge.UpdateOperation.upsert_points(
                    [
                        edge.Point(
                            p.id,
                            {**p.vectors, SPARSE_VECTOR: _edge_vector(p.sparse)},
                            p.payload.as_dict(),
                        )
                        for p in points
                    ]
                ),
            )

    def delete(self, name: str, where: Where) -> None:
        self._update(name, edge.UpdateOperation.delete_points_by_filter(self.filter_of(where)))

    def set_payload(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        if READERS in payload:  # a collection created before documents had readers has no index of them
            self._update(name, edge.UpdateOperation.create_field_index(READERS, edge.PayloadSchemaType.Keyword))
        self._update(name, edge.UpdateOperation.set_payload_by_filter(self.filter_of(where), payload))

    def _update(self, name: str, operation: Any) -> None:
        try:
            self._written.add(self._aliases.get(name, name))
            self._shard(name).update(operation)
        finally:
            self._forget_versions()

    def current_versions(
        self, name: str, sources: Iterable[str] | None, readers: frozenset[str] | None = None
    ) -> dict[str, str]:
        """Cached (a caller of groups, ``readers``, asks the store, which filters): this process is the
        namespace's only writer (the lock) and each write clears the cache, so a cached answer is the
        store's; a lookup that overlapped a write is used, not kept. After ``warm`` the cache holds every
        source: a query looks nothing up (SciFact's questions found new documents each: a lookup each)."""
        if readers is not None:
            return super().current_versions(name, sources, readers)
        resolved = self._aliases.get(name, name)
        with self._versions_lock:
            generation = self._versions_generation
            cache = self._versions.setdefault(resolved, {})
            complete = resolved in self._complete
            if sources is None:
                answer = dict(cache)
            else:
                sources = set(sources)
                answer = {source: cache.get(source) for source in sources if complete or source in cache}
        missing = None if sources is None else sources - answer.keys()
        if not complete and (missing is None or missing):
            found = super().current_versions(name, missing)
            looked_up = found if missing is None else {source: found.get(source) for source in missing}
            answer |= looked_up
            with self._versions_lock:
                if generation == self._versions_generation:
                    cache.update(looked_up)
                    if sources is None:
                        self._complete.add(resolved)
        return {source: digest for source, digest in answer.items() if digest is not None}

    def _forget_versions(self) -> None:
        with self._versions_lock:
            self._versions_generation += 1
            self._versions.clear()
            self._complete.clear()

    def warm(self, names: Iterable[str]) -> None:
        """Reads the collections' files into the kernel's page cache, and every document's current
        version into this process. Opening a shard leaves its files out of the page cache (fincore
        shows none resident), so a new process's searches read their on-disk vectors and payloads
        from the disk, question after question: on SciFact's store the searches took 6.7 ms p50
        cold against 3.7 warm (docs/benchmarks.md). The page cache is the kernel's to reclaim under
        memory pressure; the process's RSS does not grow by it."""
        for name in names:
            if self.manifest(name) is None:  # not ingested yet
                continue
            self._shard(name)  # opened first: opening is what empties the cache
            shard = self.root / self._aliases.get(name, name) / SHARD
            for path in shard.rglob("*"):
                if path.is_file() and WAL not in path.relative_to(shard).parts:
                    read_ahead(path)
            self.current_versions(name, None)

    def scroll_payloads(self, name: str, fields: list[str], where: Where | None = None) -> Iterable[dict[str, Any]]:
        return (record.payload or {} for record in self._scroll(name, where, edge.PayloadSelector.Include(fields)))

    def scroll_points(self, name: str, where: Where | None = None) -> Iterable[ChunkPoint]:
        return (ChunkPoint.of(record) for record in self._scroll(name, where, True, vectors=True))

    def _scroll(self, name: str, where: Where | None, payload: Any, vectors: bool = False) -> Iterator[Any]:
        shard, selected, offset = self._shard(name), self.filter_of(where), None
        while True:
            records, offset = shard.scroll(
                edge.ScrollRequest(
                    offset=offset,
                    limit=SCROLL_PAGE,
                    filter=selected,
                    with_payload=payload,
                    with_vector=vectors,
                )
            )
            yield from records
            if offset is None:
                return

    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        quantized = (
            edge.QuantizationSearchParams(rescore=True, oversampling=self.layout.oversampling)
            if self.layout.quantization != "none"
            else None
        )
        requests = [
            edge.QueryRequest(
                limit=q.limit,
                query=edge.Query.Nearest(_edge_vector(q.vector), using=q.vector_name),
                score_threshold=q.min_score,
                filter=self.filter_of(q.where),
                with_vector=[DENSE_VECTOR],
                with_payload=True,
                params=edge.SearchParams(
                    hnsw_ef=q.hnsw_ef,
                    exact=q.exact,
                    # an exact scan is the float32 truth: the int8 copy is not used
                    quantization=edge.QuantizationSearchParams(ignore=True) if q.exact else quantized,
                )
                if q.hnsw_ef or q.exact or quantized
                else None,
            )
            for q in queries
        ]
        return Hit.all_of(self._shard(name).query_batch(edge.QueryBatchRequest(requests)))

    def hybrid(self, name: str, dense: Sequence[float], sparse: Sparse, limit: int, prefetch_limit: int) -> list[Hit]:
        request = edge.QueryRequest(
            limit=limit,
            prefetches=[
                edge.Prefetch(limit=prefetch_limit, query=edge.Query.Nearest(_edge_vector(dense), using=DENSE_VECTOR)),
                edge.Prefetch(
                    limit=prefetch_limit, query=edge.Query.Nearest(_edge_vector(sparse), using=SPARSE_VECTOR)
                ),
            ],
            query=edge.Fusion.Rrf(k=QDRANT_RRF_K),  # type: ignore[arg-type]
            with_vector=False,
            with_payload=True,
        )
        return [Hit.of(p) for p in self._shard(name).query(request)]

    def count(self, name: str, where: Where | None = None) -> int:
        return self._shard(name).count(edge.CountRequest(exact=True, filter=self.filter_of(where)))

    def count_in_any_namespace(self, name: str) -> int:
        """For an admin's listing of every namespace: another namespace is locked briefly."""
        other = namespace_of(name)
        if other is None or other == self.namespace:
            return self.count(name)
        with EdgeStore(self.root, other) as store:
            return store.count(name)

    def finish_bulk(self, name: str) -> None:
        shard = self._shard(name)
        shard.flush()
        shard.optimize()

    def close(self) -> None:
        """Flushes what this process wrote; a query's shards are only closed (flushing three
        unwritten shards took 10-25 ms of a CLI query)."""
        for name, shard in self._shards.items():
            if name in self._written:
                shard.flush()
            shard.close()
        self._shards.clear()
        self._written.clear()
        if self._lock.is_locked:
            self._lock.release()


def _quantization(kind: str) -> Any:
    """The quantized copy of the dense vectors that stays in RAM and is searched first."""
    if kind == "int8":
        return edge.ScalarQuantizationConfig(edge.ScalarType.Int8, quantile=0.99, always_ram=True)
    if kind in TURBO_BITS:
        return edge.TurboQuantQuantizationConfig(
            bits=getattr(edge.TurboQuantBitSize, TURBO_BITS[kind]), always_ram=True
        )
    return None


def _edge_vector(vector: Sequence[float] | Sparse) -> Any:
    if isinstance(vector, SparseVec):
        return edge.SparseVector(vector.indices, vector.values)
    if isinstance(vector, Bm25Document):
        raise StoreError("this collection's BM25 is computed by a Qdrant server; the embedded store cannot")
    return list(map(float, vector))
