"""The store conformance kit (``qrag_qdrant.store.conformance``) on every built-in store: Qdrant
Edge, qdrant-client's local mode (the server's code path) and, when one can be had, a real server."""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient

from qrag_qdrant.store.conformance import NAMESPACE, StoreConformance
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.server import ServerStore

from .backends import server_api_key


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


def test_a_store_of_another_engine_implements_no_part_of_qdrant_and_is_refused_its_hybrid_query_in_one_line():
    from qrag_qdrant.errors import ConfigError
    from qrag_qdrant.store import Store, qdrant_binding

    assert not {"hybrid", "filter_of", "models"} & (set(Store.__abstractmethods__) | set(vars(Store)))
    other = type("OtherEngine", (Store,), {name: lambda self, *args: None for name in Store.__abstractmethods__})()
    with pytest.raises(ConfigError, match="^OtherEngine is not a Qdrant store: Qdrant's own hybrid query needs one$"):
        qdrant_binding(other)
    assert qdrant_binding(EdgeStore.__new__(EdgeStore)).models.__name__ == "qdrant_edge"
