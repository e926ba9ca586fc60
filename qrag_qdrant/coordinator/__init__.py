"""The coordinator: every retriever searches, RRF fuses, clusters form, the quorum decides.

Stages, each its own module: fusion (RRF), clustering (cosine of stored vectors or
overlapping spans), quorum (support >= N distinct retrievers), ranking.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from ..config import CollectionSpec, Settings
from ..context import build_context
from ..embedding import DenseEmbedder, SparseEmbedder
from ..errors import NothingIngestedError, QuestionError
from ..evidence import Evidence
from ..store import CollectionManifest, Store, VectorQuery
from .clustering import greedy_clusters
from .fusion import RankedList, reciprocal_rank_fusion
from .quorum import apply_quorum
from .ranking import rank_clusters


class Coordinator:
    def __init__(self, settings: Settings, store: Store, embedder: Callable[[], DenseEmbedder]):
        self.settings = settings
        self.store = store
        self._embedder_factory = embedder
        self._collections: list[tuple[CollectionSpec, SparseEmbedder]] | None = None
        self._pool = ThreadPoolExecutor(max_workers=len(settings.collections), thread_name_prefix="qrag-query")
        self._embedder: DenseEmbedder | None = None

    def _open(self) -> tuple[DenseEmbedder, list[tuple[CollectionSpec, SparseEmbedder]]]:
        """Check, once, that every collection exists and was built with our model."""
        if self._embedder is None or self._collections is None:
            embedder = self._embedder_factory()
            specs = self.settings.collections
            missing = [s.name for s in specs if s.name not in self.store.collection_names()]
            if missing:
                raise NothingIngestedError(
                    f"nothing ingested in namespace {self.settings.namespace!r} for "
                    f"{', '.join(missing)}; run: qrag-qdrant ingest PATH"
                )
            collections = []
            for spec in specs:
                expected = CollectionManifest.expected(self.settings.namespace, spec, embedder.model_name,
                                                       embedder.dim)
                self.store.open_collection(spec.name, expected, create=False)
                collections.append((spec, SparseEmbedder(expected.bm25_settings)))
            self._embedder, self._collections = embedder, collections
        return self._embedder, self._collections

    def check_question(self, question: str) -> str:
        question = question.strip()
        if not question:
            raise QuestionError("the question is empty")
        limit = self.settings.retrieval.max_question_chars
        if len(question) > limit:
            raise QuestionError(
                f"the question is {len(question)} characters long; the limit is {limit} "
                "(retrieval.max_question_chars)"
            )
        return question

    def retrieve(self, question: str) -> Evidence:
        question = self.check_question(question)
        embedder, collections = self._open()
        options = self.settings.retrieval
        timings: dict[str, float] = {}
        with _timed(timings, "embed"):
            dense = embedder.query_embed(question).tolist()
            requests = []
            for spec, sparse_embedder in collections:
                sparse = sparse_embedder.query_embed(question)
                requests.append((spec, [
                    VectorQuery(r.vector, dense, options.top_k, options.min_similarity or None) if r.kind == "dense"
                    else VectorQuery(r.vector, sparse, options.top_k) for r in spec.retrievers]))
        with _timed(timings, "search"):
            results = self._pool.map(lambda item: self.store.query(item[0].name, item[1]), requests)
            lists = [RankedList(retriever.name, spec.name, hits)
                     for (spec, _), per_retriever in zip(requests, list(results))
                     for retriever, hits in zip(spec.retrievers, per_retriever)]
        with _timed(timings, "fusion"):
            candidates = reciprocal_rank_fusion(lists, options.rrf_k)
        with _timed(timings, "clustering"):
            clusters = greedy_clusters(candidates, options.cluster_threshold)
        with _timed(timings, "quorum_ranking"):
            ranked = rank_clusters(apply_quorum(clusters, options.quorum), len(self.settings.retrievers),
                                   options.rrf_k, options.weight_rrf, options.weight_support)
        with _timed(timings, "context"):
            evidence = build_context(ranked, options.context_clusters)
        return Evidence(question=question, abstained=not evidence, retrievers=len(self.settings.retrievers),
                        clusters=evidence, timings_ms=timings)

    def close(self) -> None:
        self._pool.shutdown()


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    timings[stage] = round((time.perf_counter() - started) * 1000, 3)
