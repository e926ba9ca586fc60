"""A conformance kit for stores: what the pipeline needs of a store, as tests a store plug-in runs
against its own store (haystack's ``testing/document_store.py`` pattern). The built-in stores run
it in CI (``tests/test_store_conformance.py``). It needs pytest.

    import pytest
    from qrag_qdrant.store.conformance import NAMESPACE, StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path, NAMESPACE) as store:  # empty, for the namespace NAMESPACE
                yield store

Every check goes through the ``Store`` interface alone, with the project's own ``Where`` (each
store compiles it to its engine's filter), so a store passes by behaving as the built-ins do."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from ..config.names import collection_name
from ..config.settings import DENSE_VECTOR, SPARSE_VECTOR, CollectionSpec, RetrieverSpec, named_vector
from ..embedding import SparseVec
from .base import CALIBRATED_GATE, Store
from .filters import DocumentFilter
from .manifest import CollectionManifest, NamedVector
from .points import ChunkPayload, ChunkPoint, VectorQuery, Where, point_id

NAMESPACE = "kit"
ALIAS = collection_name(NAMESPACE, 50, 25)
#: the kit's second dense model: a vector of its own, as ``[embeddings]`` makes one
OTHER = named_vector("other")
SPEC = CollectionSpec(
    name=ALIAS,
    size=50,
    overlap=25,
    retrievers=(
        RetrieverSpec(kind="dense", size=50, overlap=25),
        RetrieverSpec(kind="dense", embedding="other", size=50, overlap=25),
        RetrieverSpec(kind="bm25", size=50, overlap=25),
    ),
)
MANIFEST = CollectionManifest.expected(
    NAMESPACE, SPEC, "kit-model", 4, vectors={OTHER: NamedVector(model="kit-other", dim=3)}
)
#: source -> (its dense vector, its other vector, its BM25 terms, readers, publisher, published)
DOCUMENTS = {
    "a.md": ((1.0, 0.0, 0.0, 0.0), (1.0, 0.0, 0.0), {1: 1.0}, (), "Daily Planet", "2024-01-10T00:00:00Z"),
    "b.md": ((0.0, 1.0, 0.0, 0.0), (0.0, 1.0, 0.0), {2: 1.0}, ("hr",), "Daily Bugle", "2024-03-05T00:00:00Z"),
    "c.md": ((0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 1.0), {1: 0.5, 3: 1.0}, ("legal",), "Daily Planet", None),
}


def chunk_point(collection: str, source: str, index: int = 0, doc_hash: str = "h1", version: int = 1) -> ChunkPoint:
    """Chunk ``index`` of one of ``DOCUMENTS``, as an ingest writes it."""
    dense, other, terms, readers, publisher, published = DOCUMENTS[source]
    text = f"{source} chunk {index}"
    return ChunkPoint(
        id=point_id(collection, source, index, doc_hash),
        dense=dense,
        sparse=SparseVec(list(terms), list(terms.values())),
        payload=ChunkPayload(
            source=source,
            doc_hash=doc_hash,
            chunk_index=index,
            word_start=0,
            word_end=3,
            start=0,
            end=len(text),
            text=text,
            version=version,
            readers=readers,
            publisher=publisher,
            published=published,
        ),
        named={OTHER: other},
    )


class StoreConformance:
    """The checks; a subclass gives the ``store`` fixture."""

    @pytest.fixture
    def store(self, *fixtures: Any, **named: Any) -> Iterator[Store]:
        """A subclass's own, with the fixtures it needs (``tmp_path``, a server's URL): an empty
        store of the namespace ``NAMESPACE``."""
        raise NotImplementedError("a subclass gives the store to check: an empty one of namespace NAMESPACE")

    @pytest.fixture
    def filled(self, store: Store) -> Store:
        """``DOCUMENTS``, one chunk each, in a versioned collection behind ``ALIAS``."""
        assert store.open_collection(ALIAS, MANIFEST, create=True) == MANIFEST
        store.upsert(ALIAS, [chunk_point(ALIAS, source) for source in DOCUMENTS])
        store.finish_bulk(ALIAS)
        return store

    def test_a_collection_keeps_its_manifest_behind_its_alias(self, filled: Store) -> None:
        assert filled.manifest(ALIAS) == MANIFEST
        assert filled.list_collections(NAMESPACE) == {ALIAS: f"{ALIAS}-v1"}
        assert filled.count(ALIAS) == len(DOCUMENTS)

    def test_points_come_back_with_every_vector_and_their_payload(self, filled: Store) -> None:
        back = {point.payload.source: point for point in filled.scroll_points(ALIAS)}
        for source in DOCUMENTS:
            written = chunk_point(ALIAS, source)
            point = back[source]
            assert (point.id, point.payload) == (written.id, written.payload)
            assert np.allclose(point.dense, written.dense) and np.allclose(point.named[OTHER], written.named[OTHER])
            assert isinstance(point.sparse, SparseVec)
            assert dict(zip(point.sparse.indices, point.sparse.values, strict=True)) == DOCUMENTS[source][2]

    def test_each_vector_is_searched_by_its_name_nearest_first(self, filled: Store) -> None:
        dense, other, bm25 = filled.query(
            ALIAS,
            [
                VectorQuery(DENSE_VECTOR, [0.9, 0.1, 0.0, 0.0], 3),
                VectorQuery(OTHER, [0.0, 0.2, 0.9], 2),
                VectorQuery(SPARSE_VECTOR, SparseVec([1], [1.0]), 3),
            ],
        )
        assert [hit.payload.source for hit in dense] == ["a.md", "b.md", "c.md"]
        assert [hit.payload.source for hit in other] == ["c.md", "b.md"]
        assert [hit.payload.source for hit in bm25] == ["a.md", "c.md"]  # only the chunks holding term 1
        assert np.allclose(dense[0].dense, DOCUMENTS["a.md"][0])  # the stored dense vector, for clustering
        assert dense[0].score > dense[1].score
        # BM25 weighs a term by its rarity among the collection's points (IDF): term 2 is in one, term 1 in two
        rare_first = filled.query(ALIAS, [VectorQuery(SPARSE_VECTOR, SparseVec([1, 2], [1.2, 1.0]), 3)])[0]
        assert [hit.payload.source for hit in rare_first] == ["b.md", "a.md", "c.md"]
        floor = filled.query(ALIAS, [VectorQuery(DENSE_VECTOR, [1.0, 0.0, 0.0, 0.0], 3, min_score=0.5)])[0]
        assert [hit.payload.source for hit in floor] == ["a.md"]

    @pytest.mark.parametrize(
        ("where", "sources"),
        [
            (Where(sources=("a.md", "b.md")), {"a.md", "b.md"}),
            (Where(not_sources=("a.md",)), {"b.md", "c.md"}),
            (Where(readers=frozenset({"hr"})), {"a.md", "b.md"}),  # no readers: everyone's
            (Where(readers=frozenset()), {"a.md"}),
            (Where(unreadable_by=frozenset({"hr"})), {"c.md"}),
            (Where(documents=DocumentFilter(publisher=("Daily Planet",))), {"a.md", "c.md"}),
            (Where(documents=DocumentFilter(after="2024-02-01", before="2024-04-01")), {"b.md"}),
            (Where(sources=("a.md", "c.md"), readers=frozenset({"legal"})), {"a.md", "c.md"}),
        ],
    )
    def test_where_selects_the_same_points_for_a_count_a_scroll_and_a_search(
        self, filled: Store, where: Where, sources: set[str]
    ) -> None:
        assert filled.count(ALIAS, where) == len(sources)
        assert {p["source"] for p in filled.scroll_payloads(ALIAS, ["source"], where)} == sources
        hits = filled.query(ALIAS, [VectorQuery(DENSE_VECTOR, [0.5, 0.5, 0.5, 0.5], 10, where=where)])[0]
        assert {hit.payload.source for hit in hits} == sources

    def test_a_version_counts_once_its_chunk_0_is_written_and_delete_removes_what_where_selects(
        self, filled: Store
    ) -> None:
        newer = [chunk_point(ALIAS, "a.md", 1, "h2", 2)]
        filled.upsert(ALIAS, newer)  # a new version's other chunks come first
        assert filled.current_versions(ALIAS, ["a.md"]) == {"a.md": "h1"}
        filled.upsert(ALIAS, [chunk_point(ALIAS, "a.md", 0, "h2", 2)])
        assert filled.current_versions(ALIAS, ["a.md"]) == {"a.md": "h2"}
        filled.delete_stale(ALIAS, {"a.md": "h2"})
        assert filled.document_hashes(ALIAS)["a.md"] == {"h2"} and filled.count(ALIAS) == len(DOCUMENTS) + 1
        filled.delete(ALIAS, Where.of_sources(["a.md"]))
        assert filled.sources(ALIAS) == {"b.md", "c.md"}

    def test_aliases_move_at_once_and_a_dropped_collection_is_gone(self, filled: Store) -> None:
        rebuilt = filled.next_version(ALIAS)
        filled.create_collection(rebuilt, MANIFEST)
        filled.upsert(rebuilt, [chunk_point(rebuilt, "b.md")])
        assert filled.count(ALIAS) == len(DOCUMENTS)  # readers see the old version until the switch
        filled.switch_aliases({ALIAS: rebuilt})
        filled.drop_collection(f"{ALIAS}-v1")
        assert filled.count(ALIAS) == 1 and f"{ALIAS}-v1" not in filled.collection_names()

    def test_a_payload_set_in_place_keeps_the_vectors(self, filled: Store) -> None:
        assert filled.set_readers(ALIAS, "a.md", ["finance"]) == 1
        [point] = [p for p in filled.scroll_points(ALIAS) if p.payload.source == "a.md"]
        assert point.payload.readers == ("finance",) and np.allclose(point.named[OTHER], DOCUMENTS["a.md"][1])

    def test_attachments_are_kept_when_the_store_says_it_keeps_them(self, filled: Store) -> None:
        filled.attach(ALIAS, CALIBRATED_GATE, b"{}")
        assert filled.attachment(ALIAS, CALIBRATED_GATE) == (b"{}" if filled.keeps_attachments else None)
        filled.attach(ALIAS, CALIBRATED_GATE, None)
        assert filled.attachment(ALIAS, CALIBRATED_GATE) is None
