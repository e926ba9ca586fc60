"""Shared fixtures. Every test runs with its own cwd, cache and QRAG_* environment,
so nothing of the user's (store, config, env) leaks in or is touched."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import Settings, load_settings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.service.auth.keys import KeyFile

from .backends import BACKENDS, RagOpener, qdrant_server_url
from .cli_helpers import run
from .sample_corpus import DOCUMENTS
from .service_helpers import TEAM_B_DOC

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
    yield REPO / "qrag_qdrant" / "config" / "default.toml"


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


@pytest.fixture
def ingest_documents(tmp_path, embedder):
    """Writes ``documents`` (name -> text) to a folder and ingests them into the store under
    ``tmp_path`` (the namespace's); returns the store's folder."""
    store = tmp_path / "store"

    def ingest(documents: dict[str, str], namespace: str = "default"):
        folder = tmp_path / f"corpus-{namespace}"
        for name, text in documents.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        with QuorumRAG(load_settings(store=store, namespace=namespace), embedder=embedder) as rag:
            rag.ingest(folder)
        return store

    return ingest


@pytest.fixture
def teams(tmp_path, embedder, ingest_documents):
    """Team a holds the sample corpus, team b one document of its own; each has a key.
    Returns a function that starts the service over them with extra settings."""
    key_file = tmp_path / "keys.toml"
    ingest_documents(DOCUMENTS, "team-a")
    store = ingest_documents({"gears.txt": TEAM_B_DOC}, "team-b")
    keys = KeyFile.load(key_file)
    auth = {
        team: {"Authorization": f"Bearer {keys.add(f'team-{namespace}', role)}"}
        for team, namespace, role in (("a", "a", "read-write"), ("b", "b", "read"), ("a-admin", "a", "admin"))
    }

    pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
    from fastapi.testclient import TestClient

    from qrag_qdrant.service.app import create_app

    def start(**overrides) -> TestClient:
        # lookups unmetered here: a test polls a job as fast as it can (the bucket has a test of its own)
        service = {"keys": key_file, "max_body_bytes": 200_000, "rate_lookup": None, **overrides.pop("service", {})}
        settings = load_settings(store=store, service=service, **overrides)
        return TestClient(create_app(settings, embedder=embedder), raise_server_exceptions=False)

    return start, auth


@pytest.fixture
def service(teams):
    """The service over both teams with the default settings: (client, the teams' headers)."""
    start, auth = teams
    with start() as client:
        yield client, auth


@pytest.fixture
def ingested(corpus: Path) -> Path:
    """The sample corpus, ingested through the CLI into the test's own store."""
    result = run("ingest", str(corpus))
    assert result.exit_code == 0, result.stderr
    return corpus
