"""The engines the integration suite runs on: Qdrant Edge, qdrant-client's local mode
(the server code path), and a real Qdrant server when one can be had."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

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


StoreFactory = Callable[[], Store]


def store_factory(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> StoreFactory:
    """A function that opens the test's store; calling it again reopens the same data."""
    if backend == "edge":
        return lambda: EdgeStore(tmp_path / "edge-store")
    if backend == "client-local":
        return lambda: ServerStore(QdrantClient(path=str(tmp_path / "local-store")), location="local")
    url = request.getfixturevalue("server_url")
    return lambda: ServerStore(QdrantClient(url=url), location=url)


def unique_namespace() -> str:
    """Server collections outlive a test; a fresh namespace keeps tests apart."""
    return f"t{uuid.uuid4().hex[:10]}"
