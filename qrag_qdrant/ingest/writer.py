"""One collection's side of an ingest: the chunks waiting for their dense vectors, and the
documents they finish (``ingestor.py`` writes them)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..config.settings import CollectionSpec
from ..embedding import Bm25Embedder
from ..store import ChunkPoint
from ..text.term_stats import TermLedger
from .chunking import Chunk, iter_chunks
from .corpus import Document

#: a chunk for one writer, with its dense vector when pooling gave one already
Chunked = tuple["CollectionWriter", Chunk, "np.ndarray | None"]


@dataclass
class CollectionWriter:
    """One collection's chunks waiting for dense embeddings, and the documents they finish.

    A document's chunk 0 is held back until the document has ended and all its other chunks
    have gone to the writer, so a large file can be flushed in pieces and still be marked
    complete only when it is.
    """

    spec: CollectionSpec
    #: where the points go: the alias, or during a rebuild the fresh collection
    target: str
    sparse: Bm25Embedder
    stored_hashes: dict[str, set[str]]
    #: chunks waiting to be written, with their dense vector when late or anchored pooling gave one already
    pending: list[tuple[Document, Chunk, np.ndarray | None]] = field(default_factory=list)
    first_chunks: dict[str, ChunkPoint] = field(default_factory=dict)
    finished: list[Document] = field(default_factory=list)
    written: bool = False
    #: this run's changes to the collection's term counts (the evidence gate's rare-term features)
    terms: TermLedger = field(default_factory=lambda: TermLedger(None))

    def is_current(self, document: Document) -> bool:
        return self.stored_hashes.get(document.source) == {document.content_hash}

    def chunks(self, document: Document) -> Iterator[Chunk]:
        return iter_chunks(document.blocks(), self.spec.size, self.spec.overlap)
