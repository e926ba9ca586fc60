"""Questions to the packaged model are embedded by onnxruntime directly, as fastembed would."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from fastembed import TextEmbedding

from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.embedding import OFFLINE_MODEL, OFFLINE_MODEL_DIM, MeanPooledOnnx, embedding_dim
from qrag_qdrant.embedding.files import offline_model_dir

QUESTIONS = [
    "How do honeybees tell each other where flowers are?",
    "x",
    "  ",
    "naïve café — 東京 🐝?",
    "Which team won the game? " * 80,  # past the model's 256 tokens: truncated the same way
]


@pytest.mark.parametrize("question", QUESTIONS)
def test_a_question_embeds_as_fastembed_embeds_it(embedder, question):
    theirs = np.asarray(next(iter(embedder._fastembed(threads=1).query_embed(question))), dtype=np.float32)
    ours = embedder.query_embed(question)
    assert ours.dtype == np.float32 and ours.shape == (OFFLINE_MODEL_DIM,)
    assert np.allclose(ours, theirs, atol=1e-6)


def test_the_optimised_graph_is_kept_and_a_damaged_one_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("QRAG_CACHE_DIR", str(tmp_path))
    model_dir = offline_model_dir(OFFLINE_MODEL)
    first = MeanPooledOnnx(model_dir, threads=1).encode(QUESTIONS[0])
    [saved] = (tmp_path / "models" / "optimized").iterdir()
    assert saved.stat().st_size > 1_000_000
    saved.write_bytes(b"not a model")
    again = MeanPooledOnnx(model_dir, threads=1).encode(QUESTIONS[0])
    assert np.allclose(first, again, atol=1e-6)
    assert saved.stat().st_size > 1_000_000 and list(saved.parent.iterdir()) == [saved]  # made again, in place


def test_the_packaged_models_dimension_is_fastembeds():
    listed = {m["model"].lower(): m["dim"] for m in TextEmbedding.list_supported_models()}
    assert listed[OFFLINE_MODEL.lower()] == OFFLINE_MODEL_DIM == embedding_dim(EmbeddingSettings(model=OFFLINE_MODEL))


@pytest.mark.slow
def test_a_query_never_imports_fastembed(corpus, tmp_path):
    """Its import (its hub client with it) was half a CLI query's first second."""
    from qrag_qdrant import QuorumRAG

    with QuorumRAG.from_config(store=tmp_path / "store") as rag:
        rag.ingest(corpus)
    script = (
        "import json, sys\nfrom qrag_qdrant import QuorumRAG\n"
        f"with QuorumRAG.from_config(store={str(tmp_path / 'store')!r}) as rag:\n"
        "    evidence = rag.retrieve('How do honeybees tell each other where flowers are?')\n"
        "print(json.dumps([evidence.clusters[0].passages[0].source,"
        " sorted(m for m in sys.modules if m.split('.')[0] in ('fastembed', 'huggingface_hub'))]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    source, imported = json.loads(done.stdout)
    assert source == "honeybees.txt"
    assert imported == []


def test_the_packaged_model_files_are_checked_against_their_pinned_sha256(tmp_path, monkeypatch):
    from qrag_qdrant.embedding import files
    from qrag_qdrant.errors import EmbeddingError

    monkeypatch.setenv("QRAG_CACHE_DIR", str(tmp_path / "cache"))
    laid_out = offline_model_dir(OFFLINE_MODEL)  # the real packaged files pass
    assert (laid_out / files.VERIFIED_STAMP).is_file()
    real = files.package_file
    forged = tmp_path / "model.onnx"
    forged.write_bytes(b"weights from somewhere else")
    monkeypatch.setattr(
        files,
        "package_file",
        lambda package, relative: forged if relative.name == "model.onnx" else real(package, relative),
    )
    with pytest.raises(EmbeddingError, match="not the packaged embedding model's file"):
        offline_model_dir(OFFLINE_MODEL)  # the stamp no longer matches, so the files are checked again
