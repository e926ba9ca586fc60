"""Late pooling: one pass of the model over a document's windows gives every chunking its vectors."""

from __future__ import annotations

import numpy as np
import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.chunking import chunk_words
from qrag_qdrant.config import load_settings
from qrag_qdrant.embedding import WINDOW_TOKENS
from qrag_qdrant.errors import ConfigError

from .sample_corpus import DOCUMENTS


def test_a_span_pooled_in_context_points_where_its_own_text_does(embedder):
    text = DOCUMENTS["honeybees.txt"]
    chunks = chunk_words(text, 50, 25)
    late = embedder.embed_spans(text, [(c.start, c.end) for c in chunks])
    alone = embedder.embed([c.text for c in chunks])
    assert late.shape == alone.shape and np.allclose(np.linalg.norm(late, axis=1), 1, atol=1e-5)
    similarity = late @ alone.T
    # each chunk's late vector is nearer its own text's embedding than any other chunk's
    assert (similarity.argmax(axis=1) == np.arange(len(chunks))).mean() >= 0.8
    assert np.diag(similarity).min() > 0.6


def test_a_span_longer_than_the_window_keeps_its_tail(embedder):
    filler = " ".join(f"word{i}" for i in range(WINDOW_TOKENS))  # more than a window of tokens on its own
    tails = ["Volcanoes erupt molten rock and ash.", "Honeybees dance to share where flowers grow."]
    texts = [f"{filler} {tail}" for tail in tails]
    late = [embedder.embed_spans(text, [(0, len(text))])[0] for text in texts]
    alone = embedder.embed(texts)
    assert float(alone[0] @ alone[1]) > 0.9999  # truncated at 256 tokens: the tails are never read
    assert float(late[0] @ late[1]) < 0.9999  # pooled over every token: they are


def test_windows_cover_a_long_document_and_agree_with_a_single_window(embedder):
    text = " ".join(DOCUMENTS.values())
    spans = [(c.start, c.end) for c in chunk_words(text, 100, 50)]
    one_pass = embedder.embed_spans(text, spans)
    assert np.isfinite(one_pass).all() and len(one_pass) == len(spans)
    first = spans[0]  # inside the first window: the same with any stride that keeps it there
    assert float(one_pass[0] @ embedder.embed_spans(text, [first], stride=64)[0]) > 0.97


def test_late_pooling_ingests_every_chunking_and_is_fixed_per_collection(tmp_path, corpus, embedder):
    late = load_settings(store=tmp_path / "store", embedding={"pooling": "late"})
    with QuorumRAG(late, embedder=embedder) as rag:
        report = rag.ingest(corpus)
        assert report.embedded_chunks == sum(report.chunks.values()) > 0
        evidence = rag.retrieve("How do honeybee foragers tell their sisters where the flowers are?")
        assert not evidence.abstained and evidence.clusters[0].passages[0].source == "honeybees.txt"
        assert rag.ingest(corpus).embedded_chunks == 0  # unchanged: nothing pooled again
    chunk = load_settings(store=tmp_path / "store")
    with QuorumRAG(chunk, embedder=embedder) as rag:
        (corpus / "new.txt").write_text("Barn owls hunt at night and find mice by sound alone. " * 4)
        with pytest.raises(ConfigError, match="pooling = 'late'.*--rebuild"):
            rag.ingest(corpus)
        assert rag.ingest(corpus, rebuild=True).embedded_chunks > 0  # a rebuild switches it
