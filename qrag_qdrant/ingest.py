"""Ingest: chunk every document once per collection, embed what changed, write it.

The store itself is the embedding cache: a document whose stored hash equals its
current hash is not chunked or embedded again.

Write order per document keeps a crash harmless: its chunks 1..n are upserted, then the
points of its older versions are deleted, and chunk 0 — the completeness marker that
``Store.document_hashes`` reads — comes last. A document cut off half-way has no
current chunk 0, so the next run writes it again, over the same deterministic ids.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from .chunking import Chunk, chunk_words
from .config import CollectionSpec, Settings
from .corpus import Document, SkippedFile, open_corpus
from .embedding import DenseEmbedder, SparseEmbedder, SparseVec, model_dim
from .store import ChunkPoint, CollectionManifest, Store

POINT_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/qrag-qdrant/point-id")
#: Chunks gathered per collection before they are embedded together and handed to the writer.
FLUSH_CHUNKS = 256
#: Write jobs that may wait for the store while the embedder goes on.
WRITES_IN_FLIGHT = 2


def point_id(collection: str, source: str, chunk_index: int) -> str:
    """uuid5 of (collection, source, chunk index); the collection name holds the namespace."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{collection}\x1f{source}\x1f{chunk_index}"))


class IngestProgress(Protocol):
    def files_found(self, total: int) -> None: ...
    def file_done(self) -> None: ...
    def chunks_queued(self, count: int) -> None: ...
    def chunks_embedded(self, count: int) -> None: ...


class NoProgress:
    def files_found(self, total: int) -> None: ...
    def file_done(self) -> None: ...
    def chunks_queued(self, count: int) -> None: ...
    def chunks_embedded(self, count: int) -> None: ...


@dataclass
class IngestReport:
    root: str
    documents: int = 0
    unchanged: int = 0
    embedded_chunks: int = 0
    chunks: dict[str, int] = field(default_factory=dict)
    pruned_sources: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    seconds: float = 0.0


@dataclass
class PendingDocument:
    document: Document
    chunks: list[Chunk]
    sparse: list[SparseVec]


@dataclass
class CollectionWriter:
    """One collection's buffer of chunked documents waiting for dense embeddings."""

    spec: CollectionSpec
    sparse: SparseEmbedder
    stored_hashes: dict[str, str]
    pending: list[PendingDocument] = field(default_factory=list)
    written: bool = False

    @property
    def pending_chunks(self) -> int:
        return sum(len(p.chunks) for p in self.pending)

    def is_current(self, document: Document) -> bool:
        return self.stored_hashes.get(document.source) == document.content_hash

    def add(self, document: Document) -> int:
        chunks = chunk_words(document.text, self.spec.size, self.spec.overlap)
        self.pending.append(PendingDocument(document, chunks, self.sparse.embed([c.text for c in chunks])))
        return len(chunks)


class Ingestor:
    def __init__(self, settings: Settings, store: Store, embedder: Callable[[], DenseEmbedder]):
        self.settings = settings
        self.store = store
        self._embedder_factory = embedder
        self._embedder: DenseEmbedder | None = None

    @property
    def embedder(self) -> DenseEmbedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def run(self, path: Path, prune: bool = False, progress: IngestProgress | None = None) -> IngestReport:
        progress = progress or NoProgress()
        started = time.perf_counter()
        corpus = open_corpus(path)
        report = IngestReport(root=str(path))
        progress.files_found(len(corpus.files))
        writers = [self._open(spec) for spec in self.settings.collections]
        sources: set[str] = set()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="qrag-writer") as pool:
            in_flight: list[Future[None]] = []
            for document in corpus.documents():
                sources.add(document.source)
                report.documents += 1
                stale = [w for w in writers if not w.is_current(document)]
                if not stale:
                    report.unchanged += 1
                for writer in stale:
                    progress.chunks_queued(writer.add(document))
                    if writer.pending_chunks >= FLUSH_CHUNKS:
                        report.embedded_chunks += self._flush(writer, pool, in_flight, progress)
                progress.file_done()
            for writer in writers:
                report.embedded_chunks += self._flush(writer, pool, in_flight, progress)
            for future in in_flight:
                future.result()
        report.skipped = corpus.skipped
        for writer in writers:
            name = writer.spec.name
            if prune:
                gone = self.store.sources(name) - sources
                self.store.delete_sources(name, gone)
                report.pruned_sources = max(report.pruned_sources, len(gone))
                writer.written |= bool(gone)
            if writer.written:
                self.store.finish_bulk(name)
            report.chunks[name] = self.store.count(name)
        report.seconds = time.perf_counter() - started
        return report

    def _open(self, spec: CollectionSpec) -> CollectionWriter:
        model = self.settings.embedding.model
        manifest = CollectionManifest.expected(self.settings.namespace, spec, model, model_dim(model))
        self.store.open_collection(spec.name, manifest, create=True)
        return CollectionWriter(spec, SparseEmbedder(manifest.bm25_settings), self.store.document_hashes(spec.name))

    def _flush(self, writer: CollectionWriter, pool: ThreadPoolExecutor, in_flight: list[Future[None]],
               progress: IngestProgress) -> int:
        """Embed the buffered documents and hand them to the writer thread."""
        if not writer.pending:
            return 0
        pending, writer.pending, writer.written = writer.pending, [], True
        dense = self.embedder.embed([chunk.text for p in pending for chunk in p.chunks])
        progress.chunks_embedded(len(dense))
        name, rows = writer.spec.name, iter(dense)
        documents = [(p.document, [self._point(name, p.document, chunk, next(rows), sparse)
                                   for chunk, sparse in zip(p.chunks, p.sparse)]) for p in pending]
        while len(in_flight) >= WRITES_IN_FLIGHT:
            in_flight.pop(0).result()
        in_flight.append(pool.submit(self._write, name, documents))
        return len(dense)

    def _write(self, name: str, documents: list[tuple[Document, list[ChunkPoint]]]) -> None:
        self.store.upsert(name, [point for _, points in documents for point in points[1:]])
        self.store.delete_stale(name, {doc.source: doc.content_hash for doc, _ in documents})
        self.store.upsert(name, [points[0] for _, points in documents])

    @staticmethod
    def _point(collection: str, document: Document, chunk: Chunk, dense: object, sparse: SparseVec) -> ChunkPoint:
        return ChunkPoint(
            id=point_id(collection, document.source, chunk.index),
            dense=dense,  # type: ignore[arg-type]
            sparse=sparse,
            payload={
                "source": document.source,
                "doc_hash": document.content_hash,
                "chunk_index": chunk.index,
                "word_start": chunk.word_start,
                "word_end": chunk.word_end,
                "start": chunk.start,
                "end": chunk.end,
                "text": chunk.text,
            },
        )
