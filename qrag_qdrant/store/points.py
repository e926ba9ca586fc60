"""What a collection holds and a search returns: a chunk's payload and point, one retriever's
search, and the hits it finds, each with its stored dense vector for clustering.

A point's id is derived from its collection, document, chunk and content hash, so writing the
same chunk twice overwrites it, and a document's new version is written beside the old one.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from ..config.settings import DENSE_VECTOR, SPARSE_VECTOR
from ..embedding import Bm25Document, SparseVec
from .filters import DocumentFilter

#: A BM25 vector, or the text the server turns into one.
Sparse = SparseVec | Bm25Document


@dataclass(frozen=True, slots=True)
class ChunkPayload:
    """What every point stores beside its vectors: which document version and chunk it is, where
    the chunk sits in the document (words and characters), its text, and the pages and headings
    inside it. ``source``, ``doc_hash`` and ``chunk_index`` are also filtered on by the store."""

    source: str
    #: the document's content hash: a new version of a file is written beside the old one
    doc_hash: str
    chunk_index: int
    word_start: int
    word_end: int
    #: character offsets in the document's text
    start: int
    end: int
    text: str
    #: the ingest run that wrote it (ns); a document's newest complete version wins; 0 in points
    #: written before versions were stamped
    version: int = 0
    #: ``locations.Mark`` rows (offset, page, heading) inside the chunk; absent in a plain-text corpus
    marks: tuple[Sequence[Any], ...] = ()
    #: who ingested this version: the service key's id, or "cli"; absent in points written before it was kept
    ingested_by: str | None = None
    #: the groups that may read the document (``access.py``); none: everyone in the namespace
    readers: tuple[str, ...] = ()
    #: what is known of the document beyond its text (``ingest/metadata.py``); absent: not known
    title: str | None = None
    publisher: str | None = None
    author: str | None = None
    #: ISO 8601 in UTC
    published: str | None = None
    url: str | None = None
    #: the version its source holds it at: a git commit, a web page's ETag or Last-Modified
    revision: str | None = None

    @classmethod
    def of(cls, payload: dict[str, Any]) -> ChunkPayload:
        fields = {name: payload[name] for name in PAYLOAD_FIELDS if name in payload}
        if "readers" in fields:
            fields["readers"] = tuple(fields["readers"] or ())
        return cls(**fields)

    def as_dict(self) -> dict[str, Any]:
        """The stored payload: an optional field only when it has a value."""
        stored = {name: getattr(self, name) for name in PAYLOAD_FIELDS if name not in OPTIONAL_FIELDS}
        known = {name: value for name in OPTIONAL_FIELDS if (value := getattr(self, name))}
        if self.readers:
            known[READERS] = list(self.readers)
        if self.marks:
            known["marks"] = [list(mark) for mark in self.marks]
        return stored | known


PAYLOAD_FIELDS = tuple(field.name for field in dataclasses.fields(ChunkPayload))
#: the payload field of a document's readers, indexed as a keyword in every collection
READERS = "readers"
#: the document's metadata fields (``ingest/metadata.py``), stored when known
METADATA_FIELDS = ("title", "publisher", "author", "published", "url", "revision")
#: the payload fields every collection indexes, and how: what searches and scrolls filter on
PAYLOAD_INDEXES = {
    "source": "keyword",
    "chunk_index": "integer",
    READERS: "keyword",
    "publisher": "keyword",
    "author": "keyword",
    "published": "datetime",
}
#: the fields a payload holds only when they have a value
OPTIONAL_FIELDS = ("marks", "ingested_by", READERS, *METADATA_FIELDS)


@dataclass(frozen=True)
class ChunkPoint:
    id: str
    dense: Sequence[float]
    sparse: Sparse
    payload: ChunkPayload
    #: the vectors of ``[embeddings]``'s models, by vector name (``dense-<name>``)
    named: Mapping[str, Sequence[float]] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, record: Any) -> ChunkPoint:
        """From a record of either engine, read with its vectors and payload."""
        vectors = record.vector
        sparse = vectors[SPARSE_VECTOR]
        return cls(
            str(record.id),
            vectors[DENSE_VECTOR],
            SparseVec(list(sparse.indices), list(sparse.values)),
            ChunkPayload.of(record.payload),
            {name: vector for name, vector in vectors.items() if name not in (DENSE_VECTOR, SPARSE_VECTOR)},
        )

    @property
    def vectors(self) -> dict[str, list[float]]:
        """Its dense vectors by name, as Python floats; the sparse one is each engine's own type."""
        return {DENSE_VECTOR: list(map(float, self.dense)), **{k: list(map(float, v)) for k, v in self.named.items()}}


@dataclass(frozen=True)
class Where:
    """Which points a search, a scroll or a deletion reads: a value each store turns into its own
    engine's filter (``Store.filter_of``), so no caller builds one. Each field narrows; the
    defaults select every point."""

    #: only points of these sources (None: of any source)
    sources: tuple[str, ...] | None = None
    #: no point of these sources
    not_sources: tuple[str, ...] = ()
    #: only each stored version's first chunk: one point per document version
    first_chunks: bool = False
    #: (source, content hash) pairs: only the points of these sources with another hash (a
    #: replaced version's leftovers)
    stale: tuple[tuple[str, str], ...] = ()
    #: only points of documents these groups may read (``Access.groups``): those with no readers
    #: or naming one of them (None: every point)
    readers: frozenset[str] | None = None
    #: only points of documents these groups may NOT read (what a caller's counts leave out)
    unreadable_by: frozenset[str] | None = None
    #: only points of documents that pass the caller's filter (its ``path`` given as ``sources``)
    documents: DocumentFilter | None = None

    @classmethod
    def of_sources(cls, sources: Iterable[str], readers: frozenset[str] | None = None) -> Where:
        return cls(sources=tuple(sorted(set(sources))), readers=readers)


@dataclass(frozen=True)
class VectorQuery:
    """One retriever's search: ``vector_name`` is ``dense`` or ``bm25``; hits scoring
    below ``min_score`` are not returned. ``hnsw_ef`` widens the HNSW search (None: the
    engine's default, ef_construct); ``exact`` scans every vector instead."""

    vector_name: str
    vector: Sequence[float] | Sparse
    limit: int
    min_score: float | None = None
    hnsw_ef: int | None = None
    exact: bool = False
    #: the points the hits must come from (``retrieval.exclude_sources``); None: any
    where: Where | None = None


@dataclass(frozen=True)
class Hit:
    """A found chunk with its STORED dense vector (unit length), used for clustering."""

    id: str
    score: float
    dense: np.ndarray
    payload: ChunkPayload

    @classmethod
    def of(cls, point: Any, point_id: Any = None) -> Hit:
        """From a scored point of either engine, queried with its payload and, for
        clustering, its dense vector (empty when not asked for). The binding builds ``vector``
        and ``id`` anew on each access: ``point_id`` is the id when the caller has it."""
        dense = vectors[DENSE_VECTOR] if (vectors := point.vector) else ()
        return cls(
            str(point.id if point_id is None else point_id),
            point.score,
            np.frombuffer(_float32s(len(dense)).pack(*dense), dtype=np.float32),
            ChunkPayload.of(point.payload),
        )

    @classmethod
    def all_of(cls, results: Iterable[Iterable[Any]]) -> list[list[Hit]]:
        """Hits of several searches; a point found by several of them is converted once.
        Equal scores are ordered by id: the engines order ties each their own way (BM25 ties
        are common), and ranks must not depend on the engine."""
        seen: dict[Any, Hit] = {}
        hits = []
        for points in results:
            batch = []
            for point in points:
                point_id, score = point.id, point.score
                hit = seen.get(point_id)
                if hit is None:
                    hit = seen[point_id] = cls.of(point, point_id)
                batch.append(hit if hit.score == score else dataclasses.replace(hit, score=score))
            hits.append(sorted(batch, key=lambda hit: (-hit.score, hit.id)))
        return hits


POINT_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://github.com/qrag-qdrant/point-id")


def point_id(collection: str, source: str, chunk_index: int, doc_hash: str) -> str:
    """uuid5 of (collection, source, chunk index, content hash). The collection name holds the namespace;
    the hash keeps a file's new version from overwriting the old one while it is written."""
    return str(uuid.uuid5(POINT_ID_NAMESPACE, f"{collection}\x1f{source}\x1f{chunk_index}\x1f{doc_hash}"))


@cache
def _float32s(count: int) -> struct.Struct:
    """Packs ``count`` Python floats as float32: a stored vector of 384 in 2.5 µs against 6-9 µs for
    ``np.asarray`` of the binding's list (the same bits; about 0.08 ms a question, benchmarks.md)."""
    return struct.Struct(f"{count}f")
