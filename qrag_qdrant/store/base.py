"""The small store interface both backends implement with the same semantics.

A collection holds one chunking of a namespace's corpus: a ``dense`` vector and a
``bm25`` sparse vector (IDF modifier) per chunk, and the chunk's payload. Its manifest
records the embedding model and BM25 setup, so vectors are never silently mixed.

Names: readers and incremental writers use the stable alias ``<namespace>-c<size>-o<overlap>``;
it points at a versioned collection ``<alias>-v<N>``. A rebuild fills ``<alias>-v<N+1>`` and
then moves every alias of the namespace at once, so a reader sees the old complete index or
the new one. Versioned collections no alias points at are a crashed rebuild's leftovers.

Completeness marker: a document's chunk 0 is written after its other chunks (see
``ingest``), so a version of a document counts as stored only when its chunk 0 exists.
"""

from __future__ import annotations

import dataclasses
import warnings
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..config.names import VERSIONED, collection_pattern, namespace_of, versioned_name
from ..errors import ModelMismatchError
from ..text.term_stats import TermStats, count_terms
from .manifest import CollectionManifest
from .points import METADATA_FIELDS, READERS, ChunkPayload, ChunkPoint, Hit, VectorQuery, Where

__all__ = ["CollectionManifest", "Store"]


#: What a collection keeps beside its points: its term counts (``term_stats.py``) and its
#: namespace's calibrated gate (``qrag-qdrant gate calibrate``).
TERM_STATS = "terms.npz"
CALIBRATED_GATE = "gate.json"
ATTACHMENTS = (TERM_STATS, CALIBRATED_GATE)
#: Reads the texts of points about to be deleted, before they are.
TextsSeen = Callable[[Iterable[str]], None]


class Store(ABC):
    """A place for collections: the operations the pipeline needs, each given the project's own
    ``Where`` to compile into the engine's filter. The eleven abstract methods are what a store
    implements (``store.conformance`` holds them to their semantics); the rest are built on them.
    ``count``, ``scroll_payloads`` and ``set_payload`` work through ``scroll_points`` and ``upsert``
    as given; an engine that can count, read fields or write a payload in place overrides them to
    be faster, as the built-in stores do."""

    #: whether searches of several collections gain from running at once (network round trips)
    concurrent_queries = False
    keeps_attachments = False  # whether ``attach`` keeps data (see ``attach``)

    @abstractmethod
    def collection_names(self) -> list[str]: ...

    @abstractmethod
    def create_collection(self, name: str, manifest: CollectionManifest) -> None: ...

    @abstractmethod
    def drop_collection(self, name: str) -> None: ...

    @abstractmethod
    def aliases(self) -> dict[str, str] | None:
        """alias -> collection; None when this key may not list aliases."""

    @abstractmethod
    def switch_aliases(self, targets: dict[str, str]) -> None:
        """Point every alias of ``targets`` at its collection in one atomic step."""

    @abstractmethod
    def manifest(self, name: str) -> CollectionManifest | None:
        """``name`` is an alias or a collection; None when neither exists."""

    @abstractmethod
    def stamp_indexed(self, name: str, version: int) -> None:
        """Record in the collection's manifest that an ingest is changing it (``indexed``)."""

    @abstractmethod
    def upsert(self, name: str, points: Sequence[ChunkPoint]) -> None: ...

    @abstractmethod
    def delete(self, name: str, where: Where) -> None:
        """Delete the points ``where`` selects."""

    @abstractmethod
    def scroll_points(self, name: str, where: Where | None = None) -> Iterable[ChunkPoint]:
        """Every point ``where`` selects (all, without it) with its vectors and payload."""

    @abstractmethod
    def query(self, name: str, queries: Sequence[VectorQuery]) -> list[list[Hit]]:
        """All of a collection's searches in one round trip, results in request order."""

    def scroll_payloads(self, name: str, fields: list[str], where: Where | None = None) -> Iterable[dict[str, Any]]:
        """The ``fields`` of the payload of every point ``where`` selects (all, without it)."""
        for point in self.scroll_points(name, where):
            payload = point.payload.as_dict()
            yield {field: payload[field] for field in fields if field in payload}

    def count(self, name: str, where: Where | None = None) -> int:
        """The points ``where`` selects (all, without it)."""
        return sum(1 for _ in self.scroll_payloads(name, [], where))

    def set_payload(self, name: str, where: Where, payload: dict[str, Any]) -> None:
        """Write ``payload``'s fields into every point ``where`` selects (the others kept)."""
        points = [
            dataclasses.replace(point, payload=ChunkPayload.of(point.payload.as_dict() | payload))
            for point in self.scroll_points(name, where)
        ]
        self.upsert(name, points)

    def count_in_any_namespace(self, name: str) -> int:
        """``count`` for a listing of every namespace (the server checks the key)."""
        return self.count(name)

    def attachment(self, name: str, key: str) -> bytes | None:
        """Data kept with the collection under ``key`` (``ATTACHMENTS``), if any."""
        return None

    def attach(self, name: str, key: str, data: bytes | None) -> None:
        """Keep ``data`` with the collection under ``key``, or drop it (None). A store that keeps
        nothing (``keeps_attachments`` false) has term counts counted once per process, and no calibrated gate."""

    def warm(self, names: Iterable[str]) -> None:
        """Readies the collections for many queries (``QuorumRAG.warm``): a server keeps its own caches warm."""

    def finish_bulk(self, name: str) -> None:
        """Called after a bulk write, e.g. to build indexes."""

    def close(self) -> None:
        """Release the store."""

    # Shared semantics built on the primitives above.

    def term_stats(
        self, name: str, points: int, excluded: Sequence[str], groups: frozenset[str] | None = None
    ) -> TermStats:
        """The document frequencies ``name`` keeps, less ``excluded`` sources' and, for a caller
        reading as ``groups`` (None: every document), less the documents it may not read. A
        collection written before they were kept, or by a store that keeps none, has them
        counted from its texts."""
        manifest = self.manifest(name)
        indexed = manifest.indexed if manifest is not None else 0
        stats = TermStats.current(self.attachment(name, TERM_STATS), indexed)
        if stats is None:
            stats = TermStats.of(count_terms(self.texts(name)), points, indexed)
            if self.keeps_attachments:
                warnings.warn(
                    f"{name} has no current term counts stored (written by an older version, or an ingest "
                    f"has not finished): they were counted from its {stats.chunks} chunks, as every new "
                    "process will until an ingest of its documents finishes and stores them; run "
                    "qrag-qdrant ingest on them once if none is running",
                    stacklevel=3,
                )
        hidden = [Where.of_sources(excluded)] if excluded else []
        if groups is not None:
            hidden.append(Where(not_sources=tuple(excluded), unreadable_by=groups))
        for where in hidden:
            texts = list(self.texts(name, where))
            stats = stats.updated(Counter(), count_terms(texts), stats.chunks - len(texts), indexed)
        return stats

    def list_collections(self, namespace: str | None = None) -> dict[str, str]:
        """What a reader sees: alias (or an unversioned collection) -> the collection it
        reads, for one namespace or, with ``None``, for all of them."""
        aliases = self.aliases() or {}
        served = {name: name for name in self.collection_names() if not VERSIONED.match(name)} | aliases
        return {
            name: served[name]
            for name in sorted(served)
            if namespace_of(name) is not None and (namespace is None or collection_pattern(namespace).match(name))
        }

    def open_collection(
        self, name: str, manifest: CollectionManifest, create: bool, reading: bool = False
    ) -> CollectionManifest | None:
        """Check the collection behind alias ``name`` was built like ``manifest`` (the BM25 source
        aside: the stored one wins; ``reading``: a search's check, ``CollectionManifest.mismatch``)
        and return its stored manifest. When it does not exist and ``create`` is set, create
        ``<name>-v<N>`` and point the alias at it."""
        stored = self.manifest(name)
        if stored is None:
            if not create:
                return None
            collection = self.next_version(name)
            self.create_collection(collection, manifest)
            self.switch_aliases({name: collection})
            return manifest
        problem = stored.mismatch(manifest, reading)
        if problem:
            fix = "rebuild it with these settings (ingest PATH --rebuild)"
            if problem.startswith(("model ", "dim ")):  # [embedding]'s model: its chunks' text is enough
                fix = "re-embed it with these settings (retrievers reembed, or ingest PATH --rebuild)"
            raise ModelMismatchError(
                f"collection {name} was built with {problem}; {fix}, re-ingest into a new namespace or "
                "store, or use the config it was built with"
            )
        return stored

    def next_version(self, alias: str) -> str:
        """``<alias>-v<N>``, N one more than any collection of that alias has."""
        versions = [
            int(m["version"])
            for name in self.collection_names()
            if (m := VERSIONED.match(name)) and m["alias"] == alias
        ]
        return versioned_name(alias, max(versions, default=0) + 1)

    def drop_unserved(self, namespace: str) -> list[str]:
        """Drop the namespace's versioned collections no alias points at: a crashed rebuild's
        half-built ones. Skipped when this key may not list aliases."""
        aliases = self.aliases()
        if aliases is None:
            return []
        pattern, served = collection_pattern(namespace), set(aliases.values())
        dropped = [
            name
            for name in self.collection_names()
            if pattern.match(name) and VERSIONED.match(name) and name not in served
        ]
        for name in dropped:
            self.drop_collection(name)
        return dropped

    def document_hashes(self, name: str) -> dict[str, set[str]]:
        """source -> content hashes of its completely stored versions (two only after a crash
        between a new version's marker and the old version's deletion)."""
        hashes: dict[str, set[str]] = {}
        for p in self.scroll_payloads(name, ["source", "doc_hash"], Where(first_chunks=True)):
            hashes.setdefault(p["source"], set()).add(p["doc_hash"])
        return hashes

    def document_labels(
        self, name: str, sources: Iterable[str] | None = None, fields: Sequence[str] = (READERS, *METADATA_FIELDS)
    ) -> dict[str, dict[str, Any]]:
        """source -> the readers and metadata (of ``fields``) its stored versions' first chunks
        carry (of the sources in ``sources``; None: of all), for the sources that carry any."""
        where = Where(sources=None if sources is None else tuple(sorted(set(sources))), first_chunks=True)
        labels: dict[str, dict[str, Any]] = {}
        for p in self.scroll_payloads(name, ["source", *fields], where):
            if found := {field: value for field, value in p.items() if field != "source" and value}:
                labels[p["source"]] = found
        return labels

    def reader_groups(self, name: str) -> frozenset[str]:
        """Every group any point of ``name`` names among its readers."""
        restricted = Where(unreadable_by=frozenset())  # points whose readers name a group
        return frozenset(group for p in self.scroll_payloads(name, [READERS], restricted) for group in p[READERS])

    def current_versions(
        self, name: str, sources: Iterable[str] | None, readers: frozenset[str] | None = None
    ) -> dict[str, str]:
        """source -> hash of its newest complete version: what a reader may see of it
        (``sources`` None: of every source in the collection); with ``readers`` (``Access.groups``),
        of the documents those groups may read only, filtered by the store: a document they may
        not read costs the lookup a missing one does."""
        sources = None if sources is None else sorted(set(sources))
        newest: dict[str, tuple[int, str]] = {}
        if sources is None or sources:
            where = Where(sources=None if sources is None else tuple(sources), first_chunks=True, readers=readers)
            for p in self.scroll_payloads(name, ["source", "doc_hash", "version"], where):
                version = p.get("version", 0)  # points written before versions were stamped
                if (version, p["doc_hash"]) > newest.get(p["source"], (-1, "")):
                    newest[p["source"]] = (version, p["doc_hash"])
        return {source: digest for source, (_, digest) in newest.items()}

    def sources(self, name: str) -> set[str]:
        """Every source with any point, complete or not."""
        return {p["source"] for p in self.scroll_payloads(name, ["source"])}

    def delete_stale(self, name: str, current: dict[str, str], removing: TextsSeen | None = None) -> None:
        """Delete the points of these sources whose hash is not the current one."""
        if current:
            self._delete(name, Where(stale=tuple(sorted(current.items()))), removing)

    def delete_sources(self, name: str, sources: Iterable[str], removing: TextsSeen | None = None) -> None:
        where = Where.of_sources(sources)
        if where.sources:
            self._delete(name, where, removing)

    def _delete(self, name: str, where: Where, removing: TextsSeen | None) -> None:
        """``removing`` first reads the texts of the points about to go (ingest's term counts)."""
        if removing is not None:
            removing(self.texts(name, where))
        self.delete(name, where)

    def texts(self, name: str, where: Where | None = None) -> Iterable[str]:
        """The chunk texts of the points ``where`` selects (all, without it)."""
        return (p.get("text", "") for p in self.scroll_payloads(name, ["text"], where))

    def sources_under(self, name: str, prefix: str) -> tuple[str, ...]:
        """The sources of the documents whose path starts with ``prefix``."""
        return tuple(sorted(source for source in self.current_versions(name, None) if source.startswith(prefix)))

    def set_readers(self, name: str, source: str, readers: Sequence[str]) -> int:
        """Every point of ``source`` (every version) in ``name`` now names ``readers`` (none:
        everyone); no vector is written again. How many points changed."""
        return self.set_document_payload(name, source, {READERS: list(readers)})

    def set_document_payload(self, name: str, source: str, payload: dict[str, Any]) -> int:
        """``payload``'s fields written into every point of ``source`` (every version) in ``name``,
        no vector again. How many points changed."""
        where = Where.of_sources([source])
        points = sum(1 for _ in self.scroll_payloads(name, ["source"], where))
        if points:
            self.set_payload(name, where, payload)
        return points

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
