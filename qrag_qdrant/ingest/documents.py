"""The documents of a namespace: list them, show one's chunks, remove one.

A document is a source (its path as ingested) with its newest complete version in each
collection: what a query can see of it. Its facts come from the points themselves: the content
hash, when its version was ingested and by which key (``ingested_by``), its size (where its last
chunk ends) and its chunks per collection.

Removing a document deletes its points from every collection of the namespace, one collection
after another, each as an ingest changes it: the collection's term counts go first, so a crash
leaves none rather than wrong ones, and come back with the change. Running the removal again
after a crash finishes it; the namespace then holds what a clean ingest without the document
would.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from ..config.settings import Settings
from ..errors import DocumentNotFound, RequestError
from ..store import Store, Where
from ..store.access import ALL, Access, checked_groups
from ..store.base import TERM_STATS
from ..store.points import METADATA_FIELDS, READERS
from ..text.term_stats import TermLedger, TermStats

#: the most documents one page lists
MAX_PAGE = 1000


class ChunkLocation(BaseModel):
    chunk: int = Field(description="the chunk's number in the document, from 0")
    start: int = Field(description="character offset where the chunk starts in the document's text")
    end: int


class DocumentInfo(BaseModel):
    source: str = Field(description="the document's path as ingested")
    content_hash: str = Field(description="the sha256 of the version a query sees")
    size: int = Field(description="characters of the document's text")
    chunks: dict[str, int] = Field(description="chunks per collection (alias)")
    ingested_at: datetime | None = Field(None, description="when this version was ingested")
    ingested_by: str | None = Field(None, description="the key id (or 'cli') that ingested it; None: not recorded")
    readers: list[str] = Field(
        default_factory=list, description="the groups that may read it; none: everyone in the namespace"
    )
    title: str | None = Field(None, description="its title, from the metadata sidecar (ingest --metadata)")
    publisher: str | None = Field(None, description="who published it (the sidecar's source or publisher)")
    author: str | None = None
    published: str | None = Field(None, description="when it was published, ISO 8601 in UTC")
    url: str | None = None
    revision: str | None = Field(
        None, description="the version its source holds it at: a git commit, a web page's ETag or Last-Modified"
    )


class DocumentPage(BaseModel):
    total: int = Field(description="documents in the namespace")
    offset: int
    limit: int
    documents: list[DocumentInfo] = Field(description="sorted by source")


class DocumentDetail(DocumentInfo):
    locations: dict[str, list[ChunkLocation]] = Field(description="each collection's chunks, in order")


class ReadersReport(BaseModel):
    source: str
    readers: list[str] = Field(description="the groups that may read it now; none: everyone in the namespace")
    changed: dict[str, int] = Field(description="points given the readers per collection (alias)")


class RemovalReport(BaseModel):
    source: str
    removed: dict[str, int] = Field(description="points deleted per collection (alias)")
    seconds: float


class Documents:
    """One namespace's documents, on its store."""

    def __init__(
        self, settings: Settings, store: Store, on_change: Callable[[], None] | None = None, access: Access = ALL
    ):
        """``on_change``: told after a removal changed the index (a pipeline's cached counts);
        ``access``: the documents the caller may read; the others are not there for it (not found)."""
        self.settings, self.store, self._on_change, self.access = settings, store, on_change, access

    def _collections(self) -> list[str]:
        return [spec.name for spec in self.settings.collections if self.store.manifest(spec.name) is not None]

    def _current(self, sources: Iterable[str] | None) -> dict[str, dict[str, str]]:
        """collection -> source -> hash of its newest complete version, of the sources the caller
        may read: the store filters by the caller's groups, so a name it may not read costs what a
        name no document has (no timing tells them apart)."""
        asked = None if sources is None else sorted(set(sources))
        return {name: self.store.current_versions(name, asked, self.access.groups) for name in self._collections()}

    def exists(self, source: str) -> bool:
        """Whether any collection holds a complete version of ``source``, whoever may read it: the
        same lookups for a hidden name as for a missing one."""
        found = [self.store.current_versions(name, [source]) for name in self._collections()]  # each one asked
        return any(found)

    def page(self, offset: int = 0, limit: int = 100) -> DocumentPage:
        """Documents ``offset`` to ``offset + limit``, sorted by source (``limit`` at most 1,000)."""
        if offset < 0 or not 1 <= limit <= MAX_PAGE:
            raise RequestError(f"offset must be 0 or more and limit 1 to {MAX_PAGE}")
        current = self._current(None)
        sources = sorted(set().union(*current.values())) if current else []
        shown = sources[offset : offset + limit]
        documents = list(self._details(shown, current, locations=False))
        return DocumentPage(total=len(sources), offset=offset, limit=limit, documents=documents)

    def get(self, source: str) -> DocumentDetail:
        """One document, with where each of its chunks sits, in every collection."""
        found = self._details([source], self._current([source]), locations=True)
        if not found:
            raise DocumentNotFound(f"no document {source[:200]!r} in namespace {self.settings.namespace!r}")
        return found[0]

    def _details(self, sources: list[str], current: dict[str, dict[str, str]], locations: bool) -> list[DocumentDetail]:
        """The facts of ``sources`` (those present), read from the points of their current versions
        (``current``: collection -> source -> hash, as ``_current`` reads them)."""
        if not sources:
            return []
        found: dict[str, DocumentDetail] = {}
        fields = ["source", "doc_hash", "chunk_index", "start", "end", "version", "ingested_by", READERS]
        fields += METADATA_FIELDS
        for name, versions in current.items():
            present = [source for source in sources if source in versions]
            if not present:  # nothing read: a hidden document costs what a missing one does
                continue
            for p in self.store.scroll_payloads(name, fields, Where.of_sources(present)):
                if versions.get(p["source"]) != p["doc_hash"]:
                    continue  # an older or unfinished version
                doc = found.get(p["source"]) or found.setdefault(
                    p["source"],
                    DocumentDetail(
                        source=p["source"],
                        content_hash=p["doc_hash"],
                        size=0,
                        chunks={},
                        ingested_at=datetime.fromtimestamp(p["version"] / 1e9, UTC) if p.get("version") else None,
                        ingested_by=p.get("ingested_by"),
                        readers=sorted(p.get(READERS) or ()),
                        locations={},
                        **{name: p.get(name) for name in METADATA_FIELDS},
                    ),
                )
                doc.size = max(doc.size, p["end"])
                doc.chunks[name] = doc.chunks.get(name, 0) + 1
                if locations:
                    doc.locations.setdefault(name, []).append(
                        ChunkLocation(chunk=p["chunk_index"], start=p["start"], end=p["end"])
                    )
        for doc in found.values():
            for chunks in doc.locations.values():
                chunks.sort(key=lambda c: c.chunk)
        return [found[s] for s in sources if s in found]

    def set_readers(self, source: str, readers: Sequence[str]) -> ReadersReport:
        """``source`` may be read by ``readers`` from now on (none: everyone in the namespace), in
        every collection, without embedding anything again. Result caches start over."""
        readers = checked_groups(readers)
        self._require(source)
        changed: dict[str, int] = {}
        try:
            for name in self._collections():
                if points := self.store.set_readers(name, source, readers):
                    changed[name] = points
                    self._restamp(name)
        finally:
            if changed and self._on_change is not None:
                self._on_change()
        return ReadersReport(source=source, readers=list(readers), changed=changed)

    def _restamp(self, name: str) -> None:
        """The collection changed without a word changing: result caches start over, and its term
        counts, still right, are kept under the new stamp."""
        manifest = self.store.manifest(name)
        counts = TermStats.current(self.store.attachment(name, TERM_STATS), manifest.indexed if manifest else 0)
        stamp = time.time_ns()
        self.store.stamp_indexed(name, stamp)
        if counts is not None:
            self.store.attach(name, TERM_STATS, counts.updated(Counter(), Counter(), counts.chunks, stamp).to_bytes())

    def _require(self, source: str) -> None:
        """Not found unless ``source`` has a complete version the caller may read."""
        if not any(source in versions for versions in self._current([source]).values()):
            raise DocumentNotFound(f"no document {source[:200]!r} in namespace {self.settings.namespace!r}")

    def remove(self, source: str) -> RemovalReport:
        """Every point of ``source``, every version, leaves every collection of the namespace."""
        started = time.perf_counter()
        if not self.access.reads_all:
            self._require(source)
        removed: dict[str, int] = {}
        try:
            for name in self._collections():
                if points := self._remove_from(name, source):
                    removed[name] = points
        finally:
            if removed and self._on_change is not None:
                self._on_change()
        if not removed:
            raise DocumentNotFound(f"no document {source[:200]!r} in namespace {self.settings.namespace!r}")
        return RemovalReport(source=source, removed=removed, seconds=round(time.perf_counter() - started, 3))

    def remove_under(self, prefix: str) -> int:
        """Every document whose source starts with ``prefix`` (a synced source's), every version,
        complete or not, removed from every collection. How many documents went."""
        names = self._collections()
        gone = sorted({source for name in names for source in self.store.sources(name) if source.startswith(prefix)})
        for source in gone:
            self.remove(source)
        return len(gone)

    def _remove_from(self, name: str, source: str) -> int:
        """One collection's points of ``source`` deleted, as an ingest deletes: its term counts
        dropped first and saved again with the change. How many points went."""
        store = self.store
        points = sum(1 for _ in store.scroll_payloads(name, ["source"], Where.of_sources([source])))
        if points:
            manifest = store.manifest(name)
            ledger = TermLedger(
                TermStats.current(store.attachment(name, TERM_STATS), manifest.indexed if manifest else 0)
            )
            store.attach(name, TERM_STATS, None)  # a crash from here leaves no counts rather than wrong ones
            store.delete_sources(name, [source], ledger.removing)
            stamp = time.time_ns()
            store.stamp_indexed(name, stamp)  # result caches start over
            counts = ledger.result(store.count(name), stamp, lambda: store.texts(name))
            store.attach(name, TERM_STATS, counts.to_bytes())
        return points
