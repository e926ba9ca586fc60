"""The engines the integration suite runs on: Qdrant Edge, qdrant-client's local mode
(the server code path), and a real Qdrant server when one can be had."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from qdrant_client import QdrantClient

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.store import Store
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.server import ServerStore

BACKENDS = ["edge", "client-local", pytest.param("server", marks=pytest.mark.server)]


@contextmanager
def qdrant_server_url() -> Iterator[str]:
    """QRAG_TEST_QDRANT_URL, else a testcontainers Qdrant; skip with the reason when neither works."""
    url = os.environ.get("QRAG_TEST_QDRANT_URL")
    if url:
        yield url
        return
    try:
        from docker.errors import DockerException
        from testcontainers.community.qdrant import QdrantContainer
    except ImportError as exc:
        pytest.skip(f"no real Qdrant server: testcontainers is not installed ({exc})")
    try:
        container = QdrantContainer("qdrant/qdrant:v1.16.0").start()
    except DockerException as exc:
        pytest.skip(f"no real Qdrant server: no Docker engine ({type(exc).__name__}) and QRAG_TEST_QDRANT_URL unset")
    try:
        yield f"http://{container.get_container_host_ip()}:{container.get_exposed_port(6333)}"
    finally:
        container.stop()


StoreFactory = Callable[..., Store]


def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreFactory:
    """A function that opens the test's store (for a namespace, on Edge); calling it again
    reopens the same data."""
    if backend == "edge":
        return lambda namespace="default": EdgeStore(tmp_path / "edge-store", namespace)
    if backend == "client-local":
        return lambda namespace=None: ServerStore(QdrantClient(path=str(tmp_path / "local-store")), location="local")
    url = request.getfixturevalue("server_url")
    return lambda namespace=None: ServerStore(QdrantClient(url=url, api_key=server_api_key()), location=url)


def server_api_key() -> str | None:
    """The test server's admin key, for a server that requires one (deploy/ turns auth on)."""
    return os.environ.get("QRAG_TEST_QDRANT_API_KEY")


def unique_namespace() -> str:
    """Server collections outlive a test; a fresh namespace keeps tests apart."""
    return f"t{uuid.uuid4().hex[:10]}"


class RagOpener:
    """Opens QuorumRAG on a test's store, by namespace name; closes everything at the end.

    Edge locks each namespace for one store object, so every namespace gets its own; the
    client paths share one store (local mode lets one client open a folder). On a real
    server, names get a per-test prefix, since its collections outlive the test.
    """

    def __init__(self, backend: str, tmp_path: Path, request: pytest.FixtureRequest, embedder: DenseEmbedder):
        self.backend, self.embedder = backend, embedder
        self.factory = store_factory(backend, tmp_path, request)
        self.prefix = unique_namespace() + "-" if backend == "server" else ""
        self.opened: list[QuorumRAG] = []
        self.stores: dict[str, Store] = {}

    def __call__(self, namespace: str = "default", generator: Any = None, **overrides: Any) -> QuorumRAG:
        namespace = self.prefix + namespace
        key = namespace if self.backend == "edge" else "shared"
        if key not in self.stores:
            self.stores[key] = self.factory(namespace)
        rag = QuorumRAG(
            load_settings(namespace=namespace, **overrides),
            store=self.stores[key],
            embedder=self.embedder,
            generator=generator,
        )
        self.opened.append(rag)
        return rag

    def reopen_store(self, namespace: str = "default") -> Store:
        """The test's data through a new store object (closing the old one first)."""
        key = self.prefix + namespace if self.backend == "edge" else "shared"
        self.stores.pop(key).close()
        self.stores[key] = self.factory(self.prefix + namespace)
        return self.stores[key]

    def close(self) -> None:
        for rag in self.opened:
            if rag._coordinator is not None:
                rag._coordinator.close()
        for store in self.stores.values():
            store.close()
