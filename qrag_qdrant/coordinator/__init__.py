"""The coordinator: every retriever searches, RRF fuses, clusters form, the quorum decides.

Stages, each its own module: fusion (RRF), clustering (cosine of stored vectors or
overlapping spans), quorum (support >= N distinct retrievers), ranking, context (numbered
passages) and the gate (answer, or abstain on evidence too weak to answer from).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from ..config import CollectionSpec, RetrievalSettings, Settings
from ..embedding import Bm25Embedder, DenseEmbedder, model_dim
from ..errors import NothingIngestedError, QuestionError
from ..evidence import Evidence, EvidenceCluster
from ..store import CollectionManifest, Hit, Store, VectorQuery
from ..store.base import Sparse
from .clustering import greedy_clusters
from .context import build_context
from .fusion import RankedList, reciprocal_rank_fusion
from .gate import GateInput, GateModel, decide, quorum_features
from .quorum import apply_quorum
from .ranking import ScoredCluster, rank_clusters


@dataclass(frozen=True)
class QueryVectors:
    """A question embedded once: one dense vector for every dense retriever, and one BM25
    query per collection, made with that collection's recorded BM25 settings."""

    question: str
    dense: list[float]
    sparse: dict[str, Sparse]



class Coordinator:
    def __init__(self, settings: Settings, store: Store, embedder: Callable[[], DenseEmbedder]):
        self.settings = settings
        self.store = store
        self._embedder_factory = embedder
        self._collections: list[tuple[CollectionSpec, Bm25Embedder]] | None = None
        self._points: dict[str, int] = {}
        self._gate: GateModel | None = None
        self._pool = ThreadPoolExecutor(max_workers=len(settings.collections), thread_name_prefix="qrag-query")

    def index_changed(self) -> None:
        """After an ingest in this process: check the collections and count their points again."""
        self._collections = None

    @property
    def collections(self) -> list[tuple[CollectionSpec, Bm25Embedder]]:
        """Checked once: every collection exists and was built with our model and BM25 setup;
        each is queried with the BM25 source its manifest recorded.

        The check needs only the model's name and dimension, so a namespace built with
        another model is refused before any model is loaded.
        """
        if self._collections is None:
            model = self.settings.embedding.model
            collections, missing, points = [], [], {}
            for spec in self.settings.collections:
                expected = CollectionManifest.expected(self.settings.namespace, spec, model, model_dim(model))
                stored = self.store.open_collection(spec.name, expected, create=False)
                if stored is None:
                    missing.append(spec.name)
                else:
                    collections.append((spec, stored.bm25_embedder()))
                    points[spec.name] = self.store.count(spec.name)
            if missing:
                raise NothingIngestedError(
                    f"nothing ingested in namespace {self.settings.namespace!r} for "
                    f"{', '.join(missing)}; run: qrag-qdrant ingest PATH"
                )
            if not any(points.values()):
                raise NothingIngestedError(f"namespace {self.settings.namespace!r} holds no documents; "
                                           "run: qrag-qdrant ingest PATH")
            self._points, self._collections = points, collections
        return self._collections

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

    def embed(self, question: str) -> QueryVectors:
        question = self.check_question(question)
        collections = self.collections
        dense = self._embedder_factory().query_embed(question).tolist()
        return QueryVectors(question, dense, {spec.name: sparse.query_embed(question) for spec, sparse in collections})

    def queries(self, vectors: QueryVectors, spec: CollectionSpec, top_k: int | None = None) -> list[VectorQuery]:
        """One search per retriever of a collection; dense hits under ``min_similarity`` are dropped."""
        options = self.settings.retrieval
        limit = top_k or options.top_k
        return [VectorQuery(r.vector, vectors.dense, limit, options.min_similarity or None, options.hnsw_ef)
                if r.kind == "dense" else VectorQuery(r.vector, vectors.sparse[spec.name], limit)
                for r in spec.retrievers]

    def search(self, vectors: QueryVectors, top_k: int | None = None) -> list[RankedList]:
        """Every retriever's ranked list: one search round trip per collection. On a server the
        collections are searched concurrently; in-process (Edge) one after another: on 2 cores
        threads measured slightly slower, and 4 times slower beside other load."""
        specs = [spec for spec, _ in self.collections]
        search_one = partial(self._search_collection, vectors=vectors, top_k=top_k)
        results = self._pool.map(search_one, specs) if self.store.concurrent_queries else map(search_one, specs)
        return [RankedList(retriever.name, spec.name, hits)
                for spec, per_retriever in zip(specs, list(results))
                for retriever, hits in zip(spec.retrievers, per_retriever)]

    def _search_collection(self, spec: CollectionSpec, vectors: QueryVectors, top_k: int | None) -> list[list[Hit]]:
        """One collection's retrievers, keeping only hits of each file's newest complete version:
        a query during a rewrite sees the old file or the new one, never both (one more lookup)."""
        results = self.store.query(spec.name, self.queries(vectors, spec, top_k))
        sources = {hit.payload["source"] for hits in results for hit in hits}
        current = self.store.current_versions(spec.name, sources)
        return [[hit for hit in hits if current.get(hit.payload["source"]) == hit.payload["doc_hash"]]
                for hits in results]

    def rank(self, lists: list[RankedList], options: RetrievalSettings,
             timings: dict[str, float] | None = None) -> list[ScoredCluster]:
        """Fusion, clustering, quorum and ranking: the clusters that reached quorum, best first."""
        timings = {} if timings is None else timings
        with _timed(timings, "fusion"):
            candidates = reciprocal_rank_fusion(lists, options.rrf_k)
        with _timed(timings, "clustering"):
            clusters = greedy_clusters(candidates, options.cluster_threshold)
        with _timed(timings, "quorum_ranking"):
            return rank_clusters(apply_quorum(clusters, options.quorum), len(self.settings.retrievers),
                                 options.rrf_k, options.weight_rrf, options.weight_support)

    @property
    def gate(self) -> GateModel:
        if self._gate is None:
            self._gate = GateModel.load(self.settings.retrieval.gate_model)
        return self._gate

    def min_confidence(self, options: RetrievalSettings) -> float:
        """``retrieval.min_confidence``, or when unset the gate model's own threshold."""
        if options.min_confidence is not None:
            return options.min_confidence
        return self.gate.systems["quorum"].threshold if "quorum" in self.gate.systems else 0.0

    def assess(self, vectors: QueryVectors, lists: list[RankedList], ranked: list[ScoredCluster],
               context: list[EvidenceCluster], options: RetrievalSettings) -> tuple[dict[str, float] | None, float]:
        """The gate's features of one retrieval and its confidence that ``context`` holds the answer;
        no features and confidence 0 when nothing reached quorum."""
        if not ranked:
            return None, 0.0
        features = quorum_features(GateInput(
            vectors.question, vectors.dense, lists, {r.name: r.kind for r in self.settings.retrievers}, ranked,
            [" ".join(p.text for p in cluster.passages) for cluster in context], len(self.settings.retrievers),
            options.context_clusters, self._points))
        return features, self.gate.confidence("quorum", features) or 0.0

    def retrieve(self, question: str) -> Evidence:
        options = self.settings.retrieval
        timings: dict[str, float] = {}
        with _timed(timings, "embed"):
            vectors = self.embed(question)
        with _timed(timings, "search"):
            lists = self.search(vectors)
        ranked = self.rank(lists, options, timings)
        with _timed(timings, "context"):
            evidence = build_context(ranked, options.context_clusters, options.word_budget)
        with _timed(timings, "gate"):
            features, confidence = self.assess(vectors, lists, ranked, evidence, options)
        reason = decide(len(ranked), confidence, self.min_confidence(options))
        return Evidence(question=vectors.question, abstained=reason is not None, abstain_reason=reason,
                        confidence=round(confidence, 4), retrievers=len(self.settings.retrievers),
                        clusters=evidence, timings_ms=timings, gate_features=features)

    def close(self) -> None:
        self._pool.shutdown()


@contextmanager
def _timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    timings[stage] = round((time.perf_counter() - started) * 1000, 3)
