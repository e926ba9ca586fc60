"""Ingest: chunk every document once per collection, embed what changed, write it.

The store itself is the embedding cache: a document whose stored hash equals its
current hash is not chunked or embedded again.

Point ids include the content hash, so a new version of a file is written beside the old
one. Write order per document: chunks 1..n, then chunk 0 (the completeness marker that
``Store.document_hashes`` reads, stamped with this run's version), then the deletion of the
old version. A reader sees the newest version that has its marker (``Store.current_versions``),
so during a rewrite it sees the old file or the new one, never a mix. A crash leaves either
an unmarked new version, which the next run writes again over the same ids, or two marked
versions, whose older one the next run deletes.

A rebuild (``rebuild=True``) writes every document into fresh versioned collections, then
moves the namespace's aliases to them in one step and drops the old ones: readers see the
old complete index until the switch. A crashed rebuild leaves collections no alias points
at; every run starts by dropping those.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..config.settings import CollectionSpec, Settings
from ..embedding import Embedder, NamedEmbedders
from ..embedding.pooling import tiling
from ..errors import ConfigError, CorpusError, RequestError
from ..store import ChunkPayload, ChunkPoint, Store, Where, expected_manifest
from ..store.access import ALL, Access
from ..store.base import CALIBRATED_GATE, TERM_STATS
from ..store.points import Sparse, point_id
from ..text.locations import marks_covering
from ..text.term_stats import TermLedger, TermStats
from .chunking import Chunk, iter_chunks
from .corpus import Document, Reading, open_corpus
from .labels import NOT_PERMITTED, DocumentLabels
from .metadata import DocumentMetadata
from .progress import IngestProgress, IngestReport, NoProgress
from .writer import Chunked, CollectionWriter

#: Chunks gathered per collection before they are embedded together and handed to the writer.
FLUSH_CHUNKS = 256
#: anchored pooling: documents are pooled together until their text is this long (a few batches of windows)
POOLED_BATCH_CHARS = 50_000
#: between documents pooled together: no token, so no window holds it
DOCUMENT_JOINT = "\n\n"
#: Write jobs that may wait for the store while the embedder goes on.
WRITES_IN_FLIGHT = 2

log = logging.getLogger(__name__)


class Ingestor:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Callable[[], Embedder],
        ingested_by: str | None = None,
        readers: Sequence[str] | None = None,
        metadata: dict[str, DocumentMetadata] | None = None,
        access: Access = ALL,
    ):
        """``ingested_by``: who runs it (a service key's id, "cli"), kept with every point written.
        ``readers``: the groups that may read every document of the run, unchanged ones included
        (``store/access.py``); None: each document keeps the readers its stored version has, a new
        one has none (everyone in the namespace may read it). ``metadata``: source -> what the
        metadata sidecar says of it (``metadata.py``), readers included. ``access``: what the
        caller may read; a stored document it may not read is neither written over nor pruned,
        and the report's counts are of what it may read."""
        self.settings = settings
        given = None if readers is None else tuple(sorted(set(readers)))
        self.labels = DocumentLabels(given, metadata or {}, access)
        self.store = store
        self._embedder_factory = embedder
        self._embedder: Embedder | None = None
        self.named = NamedEmbedders(settings)
        self.version = 0
        self.ingested_by = ingested_by

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        return self._embedder

    def run(
        self,
        path: Path,
        prune: bool = False,
        rebuild: bool = False,
        progress: IngestProgress | None = None,
        reading: Reading = Reading(),
    ) -> IngestReport:
        """``reading``: which files of ``path`` are read and how their documents are named
        (``corpus.Reading``); a prune removes only documents named with its prefix."""
        progress = progress or NoProgress()
        started = time.perf_counter()
        self.version = time.time_ns()  # newer runs' versions of a file win over older ones
        if rebuild and not self.labels.access.reads_all:
            raise RequestError("a rebuild replaces every document: it needs a caller that reads every document")
        corpus = open_corpus(path, reading, self.settings.loaders)
        report = IngestReport(root=str(path), rebuilt=rebuild)
        report.unmatched_metadata = self.labels.unmatched(corpus.sources(), path if reading.strict else None)
        stored = {spec.name: self._stored_hashes(spec, rebuild) for spec in self.settings.collections}
        self.labels.read_stored(self.store, self.settings)
        corpus.refuse(self.labels.unreadable, NOT_PERMITTED)
        progress.files_found(len(corpus.files) + len(corpus.skipped))  # links and refusals are skipped files too
        documents = corpus.documents(
            needs_text=lambda source, digest: any(h.get(source) != {digest} for h in stored.values()),
            on_read=progress.file_read,
            on_skip=progress.file_skipped,
        )
        first = next(documents, None)
        if first is None:  # nothing readable: say why, and create nothing
            reasons = "; ".join(f"{s.source}: {s.reason}" for s in corpus.skipped[:3])
            more = f" (and {len(corpus.skipped) - 3} more)" if len(corpus.skipped) > 3 else ""
            raise CorpusError(f"no readable documents under {path}: {reasons}{more}")
        self.settings = self._with_pooling_resolved(rebuild)
        report.dropped = self.store.drop_unserved(self.settings.namespace)
        writers = [self._open(spec, rebuild, stored[spec.name]) for spec in self.settings.collections]
        sources: dict[str, str] = {}  # source -> its content hash in this run
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="qrag-writer") as pool:
            in_flight: list[Future[None]] = []
            for document, stale, chunks in self._chunked(itertools.chain([first], documents), writers):
                sources[document.source] = document.content_hash
                report.documents += 1
                if not stale:
                    report.unchanged += 1
                for writer, chunk, vector in chunks:
                    writer.pending.append((document, chunk, vector))
                    progress.chunks_queued(1)
                    if len(writer.pending) >= FLUSH_CHUNKS:
                        report.embedded_chunks += self._flush(writer, pool, in_flight, progress)
                for writer in stale:
                    writer.finished.append(document)
                document.close()
            for writer in writers:
                report.embedded_chunks += self._flush(writer, pool, in_flight, progress)
            for future in in_flight:
                future.result()
        report.skipped = corpus.skipped
        for writer in writers:
            self._finish(writer, sources, report, prune, reading, rebuild)
        if rebuild:
            report.dropped += self._switch({writer.spec.name: writer.target for writer in writers})
        report.collections = {
            alias: collection
            for alias, collection in self.store.list_collections(self.settings.namespace).items()
            if alias in report.chunks
        }
        report.seconds = time.perf_counter() - started
        log.info("ingest: %s", report)
        return report

    def _chunked(
        self,
        documents: Iterator[Document],
        writers: list[CollectionWriter],
    ) -> Iterator[tuple[Document, list[CollectionWriter], Iterator[Chunked]]]:
        """Each document, the writers whose collection lacks it, and their chunks of it. With
        late or anchored pooling the chunks come with their dense vectors, pooled for every
        chunking from one pass of the model; otherwise the vector is left to ``_flush``, which
        embeds each chunk's text in batches.

        Anchored pooling runs the model over several documents' windows at once (about
        ``POOLED_BATCH_CHARS`` of text): one short document fills a small part of a batch. Their
        texts are joined, which changes no vector, as no window crosses a chunk's edge nor a chunk
        a document's. Late pooling's windows would cross, so it pools one document at a time.
        """
        pooling = self.settings.embedding.pooling
        group: list[tuple[Document, list[CollectionWriter], str]] = []
        for document in documents:
            stale = [w for w in writers if not w.is_current(document)]
            log.debug("ingest: %s: %s", document.source, f"new to {len(stale)} collections" if stale else "unchanged")
            if pooling == "chunk" or not stale:
                yield from self._pooled(group)
                group = []
                yield document, stale, ((w, chunk, None) for w in stale for chunk in w.chunks(document))
                continue
            group.append((document, stale, "".join(document.blocks())))
            if pooling == "late" or sum(len(text) for _, _, text in group) >= POOLED_BATCH_CHARS:
                yield from self._pooled(group)
                group = []
        yield from self._pooled(group)

    def _pooled(
        self,
        group: list[tuple[Document, list[CollectionWriter], str]],
    ) -> Iterator[tuple[Document, list[CollectionWriter], Iterator[Chunked]]]:
        """The documents' chunks with vectors from one ``embed_spans`` over their joined text."""
        if not group:
            return
        anchor = self.settings.anchor if self.settings.embedding.anchored else None
        chunked, spans, windows, offset = [], [], [], 0
        for document, stale, text in group:
            chunked.append([(writer, chunk) for writer in stale for chunk in writer.chunks(document)])
            spans += [(offset + chunk.start, offset + chunk.end) for _, chunk in chunked[-1]]
            if anchor is not None:
                anchors = [(offset + c.start, offset + c.end) for c in iter_chunks([text], anchor.size, anchor.overlap)]
                windows += tiling(anchors) if self.settings.embedding.pooling == "tiled" else anchors
            offset += len(text) + len(DOCUMENT_JOINT)
        vectors = iter(
            self.embedder.embed_spans(
                DOCUMENT_JOINT.join(text for _, _, text in group),
                spans,
                self.settings.embedding.late_window_stride,
                windows if anchor is not None else None,
            )
        )
        for (document, stale, _), chunks in zip(group, chunked):
            yield document, stale, iter([(writer, chunk, next(vectors)) for writer, chunk in chunks])

    def _with_pooling_resolved(self, rebuild: bool) -> Settings:
        """The settings with the pooling to embed with. With ``embedding.pooling`` auto (the
        default), a built namespace keeps the pooling its collections recorded, so a new default
        never makes it rebuild; a new namespace, or a rebuild, gets anchored pooling when the
        model mean-pools and a chunking has ``anchor_size`` words (the three chunkings then cost
        about what one does), else chunk."""
        embedding = self.settings.embedding
        if embedding.pooling != "auto":
            return self.settings
        if not rebuild:
            recorded = {m.pooling for spec in self.settings.collections if (m := self.store.manifest(spec.name))}
            if len(recorded) == 1:
                return self.settings.model_copy(update={"embedding": embedding.pooling_recorded(recorded.pop())})
        pooling = "anchored" if self.settings.anchor is not None and self.embedder.mean_pools else "chunk"
        return self.settings.model_copy(update={"embedding": embedding.model_copy(update={"pooling": pooling})})

    def _finish(
        self,
        writer: CollectionWriter,
        sources: dict[str, str],
        report: IngestReport,
        prune: bool,
        reading: Reading,
        rebuild: bool,
    ) -> None:
        """After the run's documents are written: new labels of unchanged documents, the pruned and
        excluded sources' points gone, the bulk write finished and stamped, the term counts saved."""
        if self._relabel(writer, sources):
            self._writing(writer)
        exclude = set(reading.exclude)
        if (prune or exclude) and not rebuild:
            indexed = {source for source in self.store.sources(writer.target) if source.startswith(reading.prefix)}
            # an excluded source an earlier run indexed leaves too: an eval's held-out document
            # still in the namespace would answer the questions meant to be out of its corpus
            gone = (indexed - sources.keys() if prune else set()) | (indexed & exclude)
            # what the caller may not read is not its to remove, nor a file that fails for now its version
            gone -= self.labels.unreadable | {skipped.source for skipped in report.skipped if skipped.passing}
            if gone:
                self._writing(writer)
            self.store.delete_sources(writer.target, gone, writer.terms.removing)
            report.pruned_sources = max(report.pruned_sources, len(gone))
        stamp = None
        if writer.written or rebuild:
            self.store.finish_bulk(writer.target)
            stamp = time.time_ns()
            self.store.stamp_indexed(writer.target, stamp)  # result caches start over
        chunks = self.store.count(writer.target)
        self._save_term_stats(writer, chunks, stamp)
        access = self.labels.access  # the report counts what the caller may read
        report.chunks[writer.spec.name] = (
            chunks if access.reads_all else self.store.count(writer.target, Where(readers=access.groups))
        )

    def _relabel(self, writer: CollectionWriter, sources: dict[str, str]) -> bool:
        """Unchanged documents given other readers or metadata than they have get them in place
        (``sources``: source -> content hash in this run). Whether any point changed."""
        changed = self.labels.changed(writer.stored_hashes, sources)
        return sum(self.store.set_document_payload(writer.target, s, self.labels.payload(s)) for s in changed) > 0

    def _stored_hashes(self, spec: CollectionSpec, rebuild: bool) -> dict[str, set[str]]:
        """The documents the collection holds already, read before anything is created."""
        if rebuild or self.store.manifest(spec.name) is None:
            return {}
        return self.store.document_hashes(spec.name)

    def _open(self, spec: CollectionSpec, rebuild: bool, stored_hashes: dict[str, set[str]]) -> CollectionWriter:
        pooling = self.settings.embedding.pooled_as
        manifest = expected_manifest(self.settings, spec).model_copy(update={"pooling": pooling})
        if rebuild:
            target = self.store.next_version(spec.name)
            self.store.create_collection(target, manifest)
            # the namespace's calibrated gate outlives a rebuild (``gate calibrate`` refits it on demand)
            self.store.attach(target, CALIBRATED_GATE, self.store.attachment(spec.name, CALIBRATED_GATE))
            return CollectionWriter(
                spec, target, manifest.bm25_embedder(), {}, terms=TermLedger(TermStats.of(Counter(), 0))
            )
        stored = self.store.open_collection(spec.name, manifest, create=True)
        assert stored is not None
        if stored.pooling != pooling:  # its unchanged documents would keep the other kind of vector
            raise ConfigError(
                f"collection {spec.name} was embedded with pooling {stored.pooling!r}, "
                f"not {pooling!r}: ingest --rebuild to change it"
            )
        saved = TermStats.current(self.store.attachment(spec.name, TERM_STATS), stored.indexed)
        return CollectionWriter(spec, spec.name, stored.bm25_embedder(), stored_hashes, terms=TermLedger(saved))

    def _writing(self, writer: CollectionWriter) -> None:
        """Before a collection's first change: its saved term counts go, so a crash from here on
        leaves none rather than wrong ones (the next run counts them again)."""
        if not writer.written:
            self.store.attach(writer.target, TERM_STATS, None)
            writer.written = True

    def _save_term_stats(self, writer: CollectionWriter, chunks: int, stamp: int | None) -> None:
        """After the last write: the counts with this run's changes, stamped like the manifest.
        Counts that were missing or stale are counted again from the stored texts, even when
        nothing was written."""
        if stamp is None:
            if writer.terms.base is not None:
                return
            manifest = self.store.manifest(writer.target)
            stamp = manifest.indexed if manifest is not None else 0
        stats = writer.terms.result(chunks, stamp, lambda: self.store.texts(writer.target))
        self.store.attach(writer.target, TERM_STATS, stats.to_bytes())

    def _switch(self, targets: dict[str, str]) -> list[str]:
        """Move the aliases to the rebuilt collections at once, then drop what they served."""
        before = self.store.list_collections(self.settings.namespace)
        self.store.switch_aliases(targets)
        replaced = [before[alias] for alias in targets if alias in before and before[alias] != targets[alias]]
        for name in replaced:
            self.store.drop_collection(name)
        return replaced

    def _flush(
        self,
        writer: CollectionWriter,
        pool: ThreadPoolExecutor,
        in_flight: list[Future[None]],
        progress: IngestProgress,
    ) -> int:
        """Embed the buffered chunks and hand them, with the documents they finish, to the writer thread."""
        pending, finished = writer.pending, writer.finished
        writer.pending, writer.finished = [], []
        if not pending and not finished:
            return 0
        self._writing(writer)
        writer.terms.add(texts := [chunk.text for _, chunk, _ in pending])
        embedded = iter(self.embedder.embed([chunk.text for _, chunk, vector in pending if vector is None]))
        dense = [vector if vector is not None else next(embedded) for _, _, vector in pending]
        sparse = writer.sparse.embed(texts)
        named = self.named.embed(writer.spec.embeddings, texts)
        progress.chunks_embedded(len(pending))
        rest = []
        for row, ((document, chunk, _), vector, bm25) in enumerate(zip(pending, dense, sparse)):
            others = {name: vectors[row] for name, vectors in named.items()}
            point = self._point(writer.spec.name, document, chunk, vector, bm25, others)
            if chunk.index == 0:
                writer.first_chunks[document.source] = point
            else:
                rest.append(point)
        # a file emptied between its check and its chunking has no chunk 0: it stays unmarked
        firsts = [writer.first_chunks.pop(d.source) for d in finished if d.source in writer.first_chunks]
        hashes = {document.source: document.content_hash for document in finished}
        while len(in_flight) >= WRITES_IN_FLIGHT:
            in_flight.pop(0).result()
        in_flight.append(pool.submit(self._write, writer, rest, hashes, firsts))
        return len(pending)

    def _write(
        self, writer: CollectionWriter, rest: list[ChunkPoint], finished: dict[str, str], firsts: list[ChunkPoint]
    ) -> None:
        self.store.upsert(writer.target, rest)
        self.store.upsert(writer.target, firsts)
        self.store.delete_stale(writer.target, finished, writer.terms.removing)

    def _point(
        self, collection: str, document: Document, chunk: Chunk, dense: object, sparse: Sparse, named: Mapping[str, Any]
    ) -> ChunkPoint:
        return ChunkPoint(
            id=point_id(collection, document.source, chunk.index, document.content_hash),
            dense=dense,  # type: ignore[arg-type]
            sparse=sparse,
            named=named,
            payload=ChunkPayload(
                source=document.source,
                doc_hash=document.content_hash,
                chunk_index=chunk.index,
                word_start=chunk.word_start,
                word_end=chunk.word_end,
                start=chunk.start,
                end=chunk.end,
                text=chunk.text,
                version=self.version,
                marks=tuple(marks_covering(document.marks, chunk.start, chunk.end)) if document.marks else (),
                ingested_by=self.ingested_by,
                readers=self.labels.readers(document.source, document.metadata),
                **self.labels.metadata(document.source, document.metadata),
            ),
        )
