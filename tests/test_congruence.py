"""Edge and the qdrant-client path give the same evidence for the same corpus and questions.

Both engines get the very same points (ingested once, copied with their vectors), and both
search exactly here: Edge below its full-scan threshold (10,000 KB of vectors, about 6,600
384-d points per segment) and qdrant-client's local mode always. Then the evidence is the
same: clusters, sources, support, and scores to float precision. That needed one fix: the
engines order equal scores differently (BM25 ties are common: in one question here, two
pairs of chunks tied and came back swapped, moving a cluster's score by 0.006), so the stores
now order ties by point id.

Two separate ingests are not bit-identical: onnxruntime's multi-threaded int8 inference
moves vectors in the last digits, which can move a chunk across the 0.85 clustering
threshold. Sources and support of the clusters stayed the same on this corpus; a lower
cluster's score moved by up to 0.01 (one rank of one retriever). On a real server with HNSW
(large collections), lists may also differ where HNSW misses a neighbour:
benchmarks/hnsw_recall.py measures how often.
"""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG

from .backends import RagOpener

QUESTIONS = [
    "How does a honeybee forager tell her sisters the direction and distance of flowers?",
    "Which volcano is the largest active volcano on Earth by volume?",
    "How long is sourdough bread proofed and how is the dough folded?",
    "Who did Deep Blue defeat in 1997?",
    "How did lighthouse keepers keep the light burning?",
    "What is the capital of Mongolia?",
]


def evidence_summary(rag: QuorumRAG) -> list[tuple[bool, list[tuple[frozenset[str], int, float]]]]:
    summary = []
    for question in QUESTIONS:
        evidence = rag.retrieve(question)
        summary.append(
            (
                evidence.abstained,
                [(frozenset(p.source for p in c.passages), c.support, c.score) for c in evidence.clusters],
            )
        )
    return summary


def test_edge_and_the_client_path_agree_on_the_evidence(tmp_path, request, embedder, corpus):
    edge_opener = RagOpener("edge", tmp_path / "edge", request, embedder)
    client_opener = RagOpener("client-local", tmp_path / "client", request, embedder)
    try:
        edge_rag, client_rag = edge_opener(), client_opener()
        edge_rag.ingest(corpus)
        for spec in edge_rag.settings.collections:
            client_rag.store.open_collection(spec.name, edge_rag.store.manifest(spec.name), create=True)
            client_rag.store.upsert(spec.name, list(edge_rag.store.scroll_points(spec.name)))
        assert [client_rag.store.count(s.name) for s in client_rag.settings.collections] == [
            edge_rag.store.count(s.name) for s in edge_rag.settings.collections
        ]
        edge, client = evidence_summary(edge_rag), evidence_summary(client_rag)
    finally:
        edge_opener.close()
        client_opener.close()

    for question, (edge_abstained, edge_clusters), (client_abstained, client_clusters) in zip(QUESTIONS, edge, client):
        assert edge_abstained == client_abstained, question
        assert [c[:2] for c in edge_clusters] == [c[:2] for c in client_clusters], question
        assert [c[2] for c in edge_clusters] == pytest.approx([c[2] for c in client_clusters], abs=1e-6), question
    assert sum(not abstained for abstained, _ in edge) == len(QUESTIONS) - 1  # only Mongolia abstains
