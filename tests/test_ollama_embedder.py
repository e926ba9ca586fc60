"""embedding.embedder = "ollama" against the Ollama stand-in, which holds each request to
Ollama's API reference (no Ollama binary can be installed where the tests run)."""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings

from .ollama_standin import EMBED_DIM, ollama_standin
from .test_served_embedder import SHORT


def test_the_ollama_embedder_asks_ollamas_embed_api(tmp_path):
    """Against the stand-in, which holds each request to Ollama's API reference (no Ollama binary
    can be installed where the tests run): the ``ollama`` package's own request, in batches."""
    pytest.importorskip("ollama", reason="the ollama extra brings Ollama's client")
    with ollama_standin(model="nomic-embed-text") as ollama:
        embedding = {
            "embedder": "ollama",
            "model": "nomic-embed-text",
            "dim": EMBED_DIM,
            "server": {"url": ollama.host, "batch_size": 1},
        }
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        for name, text in SHORT.items():
            (corpus / name).write_text(text)
        with QuorumRAG(load_settings(store=tmp_path / "store", embedding=embedding)) as rag:
            rag.ingest(corpus)
            evidence = rag.retrieve("Which dance tells the direction of the flowers?")
        assert evidence.clusters[0].passages[0].source == "honeybees.txt"
        embeds = [r for r in ollama.requests if r["path"] == "/api/embed"]
        assert embeds and all(len(r["input"]) == 1 for r in embeds if isinstance(r["input"], list))
