"""Do client-side ``qdrant_edge.Bm25`` vectors agree with fastembed's ``Qdrant/bm25``?

Result (docs/design.md, "BM25 on the client or the server"): they agree exactly, token ids and
weights, documents and queries, once both drop the same stopwords. Tokenising, Snowball
stemming, the mmh3 token ids and the BM25 weight are the same. fastembed reads its stopwords
from a file of the ``Qdrant/bm25`` model repository, which cannot be downloaded here; Qdrant's
built-in English list drops NLTK's peculiar entries (``mightn``, ``shan``, ``needn``) and keeps
``could``, ``would``, ``also``, as NLTK's list does. So the test gives fastembed the stopwords
that ``qdrant_edge.Bm25`` drops from the test texts' words, and shows that without them the two
disagree.
"""

from __future__ import annotations

import re

import pytest

from qrag_qdrant.embedding import Bm25Settings, SparseEmbedder, SparseVec

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Honeybees perform the waggle dance to tell their sisters where the flowers are.",
    "Don't stop: it's 3.14 — naïve café résumé, U.S.A. e-mail x2 co-operate!",
    "Karl von Frisch decoded this dance language and received the Nobel Prize in 1973.",
    "Lighthouse keepers trimmed the wicks, wound the clockwork and kept the glass free of soot.",
]


@pytest.fixture
def fastembed_bm25(tmp_path):
    from fastembed.sparse.bm25 import Bm25

    def make(stopwords):
        model_dir = tmp_path / "qdrant-bm25"  # the model repo's files, minus its stopword lists
        model_dir.mkdir(exist_ok=True)
        (model_dir / "config.json").write_text("{}")
        return Bm25(
            "Qdrant/bm25", specific_model_path=str(model_dir), k=1.2, b=0.75, avg_len=100.0, stopwords=stopwords
        )

    return make


def as_dict(vector) -> dict[int, float]:
    if isinstance(vector, SparseVec):
        return dict(zip(vector.indices, vector.values))
    return dict(zip(vector.indices.tolist(), vector.values.tolist()))


def qdrant_stopwords(edge: SparseEmbedder) -> set[str]:
    words = {word.lower() for text in TEXTS for word in re.findall(r"\w+", text)}
    return {word for word in words if not edge.query_embed(word).indices}


def test_edge_bm25_equals_fastembed_qdrant_bm25_given_the_same_stopwords(fastembed_bm25):
    edge = SparseEmbedder(Bm25Settings(avg_len=100.0))
    stopwords = qdrant_stopwords(edge)
    assert {"the", "and", "their"} <= stopwords and "dance" not in stopwords
    fastembed = fastembed_bm25(stopwords)
    for text, edge_doc, fe_doc in zip(TEXTS, edge.embed(TEXTS), fastembed.embed(TEXTS)):
        ours, theirs = as_dict(edge_doc), as_dict(fe_doc)
        assert ours.keys() == theirs.keys(), text
        assert all(ours[token] == pytest.approx(theirs[token], rel=1e-6) for token in ours), text
        assert as_dict(edge.query_embed(text)) == as_dict(next(iter(fastembed.query_embed(text)))), text


def test_without_the_stopword_file_fastembed_disagrees(fastembed_bm25):
    edge = SparseEmbedder(Bm25Settings(avg_len=100.0))
    fastembed = fastembed_bm25(set())
    ours, theirs = as_dict(edge.embed(TEXTS[:1])[0]), as_dict(next(iter(fastembed.embed(TEXTS[:1]))))
    assert ours.keys() < theirs.keys()  # "the", "over" count for fastembed...
    assert any(ours[token] != pytest.approx(theirs[token]) for token in ours)  # ...and change the length norm


def test_qdrants_english_stopwords_look_like_nltks():
    edge = SparseEmbedder(Bm25Settings(avg_len=100.0))
    dropped = {
        word
        for word in ("mightn", "shan", "needn", "yourselves", "nor", "could", "would", "also")
        if not edge.query_embed(word).indices
    }
    assert dropped == {"mightn", "shan", "needn", "yourselves", "nor"}
