"""The store conformance kit (``qrag_qdrant.store.conformance``) on every built-in store: Qdrant
Edge, qdrant-client's local mode (the server's code path) and, when one can be had, a real server;
and on a store of another engine that implements ``Store``'s abstract methods alone."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient

from qrag_qdrant.store.conformance import NAMESPACE, StoreConformance
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.server import ServerStore

from .backends import server_api_key
from .memory_store import MemoryStore


class TestEdgeStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        with EdgeStore(tmp_path / "edge", NAMESPACE) as store:
            yield store


class TestClientLocalStore(StoreConformance):
    @pytest.fixture
    def store(self, tmp_path):
        with ServerStore(QdrantClient(path=str(tmp_path / "local")), location="local") as store:
            yield store


@pytest.mark.server
class TestServerStore(StoreConformance):
    @pytest.fixture
    def store(self, server_url):
        with ServerStore(QdrantClient(url=server_url, api_key=server_api_key()), location=server_url) as store:
            for name in store.collection_names():  # a server's collections outlive a test
                if name.startswith(f"{NAMESPACE}-"):
                    store.drop_collection(name)
            yield store


class TestMemoryStore(StoreConformance):
    @pytest.fixture
    def store(self):
        with MemoryStore(NAMESPACE) as store:
            yield store


def test_the_store_interface_is_the_operations_the_pipeline_needs():
    from qrag_qdrant.store import Store

    assert sorted(Store.__abstractmethods__) == sorted(
        [
            *("collection_names", "create_collection", "drop_collection", "aliases", "switch_aliases"),
            *("manifest", "stamp_indexed", "upsert", "delete", "scroll_points", "query"),
        ]
    )


def test_a_namespace_on_a_store_of_another_engine_gives_the_evidence_it_gives_on_qdrant(
    tmp_path, corpus, embedder, monkeypatch
):
    from qrag_qdrant import QuorumRAG
    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.store import STORES

    monkeypatch.setattr(STORES, "local", {"memory": lambda settings: MemoryStore(settings.namespace)})
    questions = [
        "How do honeybees tell each other where flowers are?",
        "What does the waggle dance encode?",
        "Who wrote about the telescope?",
    ]
    evidence, restricted = {}, "honeybees.txt"
    for store in ("memory", "edge"):
        settings = load_settings(store=tmp_path / store, qdrant={"store": store})
        with QuorumRAG(settings, embedder=embedder) as rag:
            rag.ingest(corpus)
            found = [rag.retrieve(question) for question in questions]
            evidence[store] = [
                [(cluster.support, [(p.source, p.start, p.end) for p in cluster.passages]) for cluster in e.clusters]
                for e in found
            ]
            documents = rag.documents()
            documents.set_readers(restricted, ["hr"])
            evidence[store].append(rag.documents(readers=[]).page().total)
            evidence[store].append([c.passages[0].source for c in rag.retrieve(questions[0], readers=[]).clusters])
    assert evidence["memory"] == evidence["edge"]
    assert all(evidence["memory"][:3]) and restricted not in evidence["memory"][-1]


def test_a_store_of_another_engine_implements_no_part_of_qdrant_and_is_refused_its_hybrid_query_in_one_line():
    from qrag_qdrant.errors import ConfigError
    from qrag_qdrant.store import Store, qdrant_binding

    assert not {"hybrid", "filter_of", "models"} & (set(Store.__abstractmethods__) | set(vars(Store)))
    other = type("OtherEngine", (Store,), {name: lambda self, *args: None for name in Store.__abstractmethods__})()
    with pytest.raises(ConfigError, match="^OtherEngine is not a Qdrant store: Qdrant's own hybrid query needs one$"):
        qdrant_binding(other)
    assert qdrant_binding(EdgeStore.__new__(EdgeStore)).models.__name__ == "qdrant_edge"
