"""Shared fixtures. Every test runs with its own cwd, cache and QRAG_* environment,
so nothing of the user's (store, config, env) leaks in or is touched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from qrag_qdrant.config.settings import Settings, load_settings
from qrag_qdrant.embedding import DenseEmbedder

from .backends import BACKENDS, RagOpener, qdrant_server_url
from .sample_corpus import DOCUMENTS

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("qrag-cache")


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_cache: Path) -> Path:
    for name in list(os.environ):
        if name.startswith("QRAG_") and not name.startswith("QRAG_TEST_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("QRAG_CACHE_DIR", str(model_cache))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    with qdrant_server_url() as url:
        yield url


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory, model_cache: Path) -> DenseEmbedder:
    """One loaded model for the whole session: loading it is the slow part."""
    os.environ["QRAG_CACHE_DIR"] = str(model_cache)
    return DenseEmbedder(Settings().embedding)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return load_settings(store=tmp_path / "store")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    for name, text in DOCUMENTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def repo_config() -> Iterator[Path]:
    yield REPO / "qrag_qdrant" / "configs" / "default.toml"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Each integration test runs on Edge, on qdrant-client's local mode and, when one is
    available, on a real server."""
    return request.param


@pytest.fixture
def open_rag(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, embedder: DenseEmbedder
) -> Iterator[RagOpener]:
    """Opens QuorumRAG on the test's store, by namespace; closes everything it opened."""
    opener = RagOpener(backend, tmp_path, request, embedder)
    yield opener
    opener.close()
