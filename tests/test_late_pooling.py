"""Late pooling: one pass of the model over a document's windows gives every chunking its vectors."""

from __future__ import annotations

import numpy as np
import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import WINDOW_TOKENS, DenseEmbedder
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.ingest.chunking import chunk_words

from .sample_corpus import DOCUMENTS


@pytest.fixture(scope="module")
def embedder(embedder):
    """The packaged model on onnxruntime, whose vectors do not depend on what shares a batch: the
    pooling is tested exactly here, and OpenVINO against it in test_embedding_runtime."""
    return DenseEmbedder(EmbeddingSettings(runtime="onnxruntime"))


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


@pytest.mark.slow
def test_windows_cover_a_long_document_and_a_short_one_needs_one_window(embedder):
    text = " ".join(DOCUMENTS.values())
    spans = [(c.start, c.end) for c in chunk_words(text, 100, 50)]
    assert len(embedder._window_tokenizer().encode(text, add_special_tokens=False).ids) > 4 * WINDOW_TOKENS
    for stride in (64, 192, WINDOW_TOKENS):  # overlapping windows, and windows edge to edge
        pooled = embedder.embed_spans(text, spans, stride=stride)
        assert pooled.shape == (len(spans), embedder.dim) and np.allclose(np.linalg.norm(pooled, axis=1), 1, atol=1e-5)
    short = DOCUMENTS["honeybees.txt"][:400]  # well inside one window: the stride cannot matter
    one, other = (embedder.embed_spans(short, [(0, 200), (150, 400)], stride=stride) for stride in (16, 192))
    assert np.allclose(one, other, atol=1e-5)


@pytest.mark.slow
def test_late_pooling_ingests_every_chunking_and_is_fixed_per_collection(tmp_path, corpus, embedder):
    late = load_settings(store=tmp_path / "store", embedding={"pooling": "late"})
    with QuorumRAG(late, embedder=embedder) as rag:
        report = rag.ingest(corpus)
        assert report.embedded_chunks == sum(report.chunks.values()) > 0
        evidence = rag.retrieve("How do honeybee foragers tell their sisters where the flowers are?")
        assert not evidence.abstained and evidence.clusters[0].passages[0].source == "honeybees.txt"
        assert rag.ingest(corpus).embedded_chunks == 0  # unchanged: nothing pooled again
    unset = load_settings(store=tmp_path / "store")  # pooling not set: the namespace keeps its own
    with QuorumRAG(unset, embedder=embedder) as rag:
        (corpus / "new.txt").write_text("Barn owls hunt at night and find mice by sound alone. " * 4)
        assert rag.ingest(corpus).embedded_chunks > 0
        assert {rag.store.manifest(spec.name).pooling for spec in unset.collections} == {"late"}
    chunk = load_settings(store=tmp_path / "store", embedding={"pooling": "chunk"})
    with QuorumRAG(chunk, embedder=embedder) as rag:
        (corpus / "other.txt").write_text("Otters crack shellfish open on stones they keep. " * 4)
        with pytest.raises(ConfigError, match="pooling 'late'.*--rebuild"):
            rag.ingest(corpus)
        assert rag.ingest(corpus, rebuild=True).embedded_chunks > 0  # a rebuild switches it
        assert {rag.store.manifest(spec.name).pooling for spec in chunk.collections} == {"chunk"}


@pytest.mark.parametrize("anchored", [False, True])
@pytest.mark.slow
def test_a_long_document_is_pooled_in_segments_with_nearly_the_same_result(embedder, monkeypatch, anchored):
    from qrag_qdrant.embedding import pooling

    text = " ".join(list(DOCUMENTS.values()) * 4)
    spans = [(c.start, c.end) for size in (50, 100, 200) for c in chunk_words(text, size, size // 2)]
    windows = [(c.start, c.end) for c in chunk_words(text, 100, 50)] if anchored else None
    whole = embedder.embed_spans(text, spans, windows=windows)
    segments = []
    pool = embedder._pool_segment
    monkeypatch.setattr(embedder, "_pool_segment", lambda *args: segments.append(len(args[0])) or pool(*args))
    monkeypatch.setattr(pooling, "LATE_SEGMENT_CHARS", 12_000)  # about a dozen windows each
    pieces = embedder.embed_spans(text, spans, windows=windows)
    assert len(segments) > 2 and max(segments) <= 12_000 + 2_000  # a segment ends with its last span
    # only tokens near a segment's edge lose context on one side
    assert float(np.einsum("ij,ij->i", whole, pieces).mean()) > 0.97
    if anchored:  # whole windows are taken into a segment: no vector changes
        assert np.allclose(whole, pieces, atol=1e-4)


@pytest.mark.slow
def test_anchored_pooling_gives_the_anchor_chunks_their_own_embedding(embedder):
    text = " ".join(DOCUMENTS.values())
    spans = {size: [(c.start, c.end) for c in chunk_words(text, size, size // 2)] for size in (50, 100, 200)}
    every = [span for size in (50, 100, 200) for span in spans[size]]
    pooled = dict(zip(every, embedder.embed_spans(text, every, windows=spans[100])))
    anchors = np.array([pooled[span] for span in spans[100]])
    alone = embedder.embed([text[start:end] for start, end in spans[100]])
    assert np.einsum("ij,ij->i", anchors, alone).min() > 0.9999  # what chunk pooling gives them
    for size in (50, 200):  # the others are pooled from the anchors' token vectors
        vectors = np.array([pooled[span] for span in spans[size]])
        alone = embedder.embed([text[start:end] for start, end in spans[size]])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
        assert (np.argmax(vectors @ alone.T, axis=1) == np.arange(len(vectors))).mean() >= 0.8
        assert 0.8 < np.einsum("ij,ij->i", vectors, alone).mean() < 0.9999


def test_anchored_windows_cover_every_token_whatever_the_chunks():
    from qrag_qdrant.embedding.pooling import cover

    count = 1000
    chunks = [(0, 120), (60, 180), (60, 100), (300, 900), (950, 990)]  # one inside another, gaps, one too long
    windows = cover(chunks, count, 192)
    assert all(0 < end - start <= WINDOW_TOKENS for start, end in windows)
    assert (0, 120) in windows and (60, 180) in windows and (60, 100) not in windows
    assert [start for start, _ in windows] == sorted(start for start, _ in windows)
    position = 0
    for start, end in windows:  # each window starts inside (or right after) the ones before it
        assert start <= position
        position = max(position, end)
    assert position == count


def test_anchored_pooling_needs_a_chunking_of_its_size_and_is_recorded_with_it(tmp_path, corpus, embedder):
    with pytest.raises(ConfigError, match="anchor_size \\(70\\) is not the chunk size of any retriever"):
        load_settings(embedding={"pooling": "anchored", "anchor_size": 70})
    anchored = load_settings(store=tmp_path / "store", embedding={"pooling": "anchored"})
    with QuorumRAG(anchored, embedder=embedder) as rag:
        report = rag.ingest(corpus)
        assert report.embedded_chunks == sum(report.chunks.values()) > 0
        assert {rag.store.manifest(spec.name).pooling for spec in anchored.collections} == {"anchored-50"}
        # documents pooled together get the vectors each gets pooled alone
        text = DOCUMENTS["honeybees.txt"]
        windows = [(c.start, c.end) for c in chunk_words(text, 50, 25)]
        for spec in anchored.collections:
            points = sorted(
                (p for p in rag.store.scroll_points(spec.name) if p.payload.source == "honeybees.txt"),
                key=lambda p: p.payload.chunk_index,
            )
            alone = embedder.embed_spans(text, [(p.payload.start, p.payload.end) for p in points], windows=windows)
            assert np.allclose(np.array([p.dense for p in points]), alone, atol=1e-5)
        evidence = rag.retrieve("How do honeybee foragers tell their sisters where the flowers are?")
        assert not evidence.abstained and evidence.clusters[0].passages[0].source == "honeybees.txt"
    other_anchor = load_settings(store=tmp_path / "store", embedding={"pooling": "anchored", "anchor_size": 100})
    with QuorumRAG(other_anchor, embedder=embedder) as rag:
        (corpus / "new.txt").write_text("Barn owls hunt at night and find mice by sound alone. " * 4)
        with pytest.raises(ConfigError, match="pooling 'anchored-50', not 'anchored-100'"):
            rag.ingest(corpus)


def test_pooling_is_refused_for_a_model_that_does_not_mean_pool(embedder, monkeypatch):
    from types import SimpleNamespace

    from qrag_qdrant.errors import EmbeddingError

    monkeypatch.setattr(embedder, "_documents", SimpleNamespace(model=object()))  # as a [CLS]-pooled model
    with pytest.raises(EmbeddingError, match="does not mean-pool its tokens.*pooling = chunk"):
        embedder.embed_spans("Honeybees dance.", [(0, 16)])


@pytest.mark.slow
def test_auto_pooling_anchors_a_new_namespace_where_it_can_and_keeps_a_built_ones(
    tmp_path, corpus, embedder, monkeypatch
):
    def poolings(settings: object) -> set[str]:
        with QuorumRAG(settings, embedder=embedder) as rag:
            assert rag.ingest(corpus).embedded_chunks > 0
            return {rag.store.manifest(spec.name).pooling for spec in rag.settings.collections}

    assert load_settings().embedding.pooling == "auto"
    assert poolings(load_settings(store=tmp_path / "new")) == {"anchored-50"}
    one_chunking = [{"kind": "dense", "size": 100, "overlap": 50}, {"kind": "bm25", "size": 100, "overlap": 50}]
    assert poolings(load_settings(store=tmp_path / "no-anchor", retrievers=one_chunking)) == {"chunk"}
    assert poolings(load_settings(store=tmp_path / "built", embedding={"pooling": "chunk"})) == {"chunk"}
    (corpus / "new.txt").write_text("Barn owls hunt at night and find mice by sound alone. " * 4)
    assert poolings(load_settings(store=tmp_path / "built")) == {"chunk"}  # a built namespace keeps its own
    monkeypatch.setattr(type(embedder), "mean_pools", property(lambda self: False))  # as a [CLS]-pooled model
    assert poolings(load_settings(store=tmp_path / "cls")) == {"chunk"}


def test_tiled_windows_are_the_chunks_that_do_not_overlap():
    from qrag_qdrant.embedding.pooling import tiling

    half_overlapping = [(0, 50), (25, 75), (50, 100), (75, 125), (100, 130), (125, 130)]
    assert tiling(half_overlapping) == [(0, 50), (50, 100), (100, 130)]
    assert tiling([(0, 40), (30, 70), (45, 90)]) == [(0, 40), (45, 90)]  # the first to start after an end
    assert tiling([]) == []


def test_tiled_pooling_reads_each_token_once_and_gives_the_tiles_their_own_embedding(tmp_path, corpus, embedder):
    tiled = load_settings(store=tmp_path / "store", embedding={"pooling": "tiled"})
    run, read = embedder._run_model, []  # per window: the tokens the model read, [CLS] and [SEP] less
    with QuorumRAG(tiled, embedder=embedder) as rag:
        embedder._run_model = lambda inputs: read.extend(inputs["attention_mask"].sum(axis=1) - 2) or run(inputs)
        try:
            report = rag.ingest(corpus)
        finally:
            del embedder._run_model
        assert report.embedded_chunks == sum(report.chunks.values()) > 0
        assert {rag.store.manifest(spec.name).pooling for spec in tiled.collections} == {"tiled-50"}
        anchor = tiled.anchor
        text = DOCUMENTS["honeybees.txt"]
        tiles = chunk_words(text, 50, 25)[::2]  # every other half-overlapping chunk tiles the text
        points = {
            (p.payload.start, p.payload.end): p.dense
            for p in rag.store.scroll_points(anchor.name)
            if p.payload.source == "honeybees.txt"
        }
        alone = embedder.embed([c.text for c in tiles])
        assert np.einsum("ij,ij->i", np.array([points[c.start, c.end] for c in tiles]), alone).min() > 0.9999
        evidence = rag.retrieve("How do honeybee foragers tell their sisters where the flowers are?")
        assert not evidence.abstained and evidence.clusters[0].passages[0].source == "honeybees.txt"
    tokenizer = embedder._window_tokenizer()
    tokens = sum(
        len(tokenizer.encode(path.read_text(), add_special_tokens=False))
        for path in corpus.rglob("*")
        if path.is_file()
    )
    assert sum(read) == tokens  # no token read twice, none left out
