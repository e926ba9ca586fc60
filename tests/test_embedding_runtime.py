"""The model's runtime over documents' windows (``embedding.runtime``): OpenVINO where it is
installed, onnxruntime otherwise, and the same vectors from either, to rounding."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.embedding.runtime import OpenVinoTokens
from qrag_qdrant.errors import EmbeddingError
from qrag_qdrant.ingest.chunking import chunk_words

from .sample_corpus import DOCUMENTS


def anchored(embedder: DenseEmbedder) -> np.ndarray:
    """A document's 50-word chunks pooled as ingest pools them by default (the chunks are the windows)."""
    text = DOCUMENTS["honeybees.txt"] + "\n\n" + DOCUMENTS["volcanoes.md"]
    spans = [(chunk.start, chunk.end) for chunk in chunk_words(text, 50, 25)]
    return embedder.embed_spans(text, spans, windows=spans)


def test_openvino_and_onnxruntime_pool_a_document_alike(embedder):
    pytest.importorskip("openvino")
    through_openvino = DenseEmbedder(EmbeddingSettings(runtime="openvino"))
    through_onnxruntime = DenseEmbedder(EmbeddingSettings(runtime="onnxruntime"))
    fast, reference = anchored(through_openvino), anchored(through_onnxruntime)
    assert isinstance(through_openvino._windows, OpenVinoTokens)
    assert not isinstance(through_onnxruntime._windows, OpenVinoTokens)
    assert fast.shape == reference.shape and len(fast) > 4
    assert np.sum(fast * reference, axis=1).min() > 0.999  # each chunk's vector, either way
    assert DenseEmbedder(EmbeddingSettings()).model_name == through_openvino.model_name


def test_without_openvino_auto_runs_onnxruntime_and_openvino_says_what_to_install(embedder, monkeypatch):
    monkeypatch.setitem(sys.modules, "openvino", None)  # as if the extra were not installed
    auto = DenseEmbedder(EmbeddingSettings())
    assert anchored(auto).shape[1] == auto.dim
    assert not isinstance(auto._windows, OpenVinoTokens)
    with pytest.raises(EmbeddingError, match=r"pip install 'qrag-qdrant\[openvino\]'"):
        anchored(DenseEmbedder(EmbeddingSettings(runtime="openvino")))


def test_two_threads_pool_through_one_openvino_model_as_one_would(embedder):
    """The service ingests several namespaces at once with one embedder."""
    pytest.importorskip("openvino")
    shared = DenseEmbedder(EmbeddingSettings(runtime="openvino"))
    alone = anchored(shared)
    with ThreadPoolExecutor(2) as pool:
        together = list(pool.map(lambda _: anchored(shared), range(4)))
    for vectors in together:
        assert np.sum(vectors * alone, axis=1).min() > 0.9999
