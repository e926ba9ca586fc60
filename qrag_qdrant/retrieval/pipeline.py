"""The query pipeline, assembled once: ``retrieve`` = embed -> search -> ``evidence_from``.

``evidence_from`` is the one tail every caller uses (the CLI, the service and eval's quorum
systems): fusion, clustering, quorum, ranking, context, the gate's confidence and its decision.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from ..config.sections import RetrievalSettings
from ..config.settings import CollectionSpec, RetrieverSpec, Settings
from ..embedding import Bm25Embedder, DenseEmbedder
from ..embedding.term_stats import TermStats, key_term_weights
from ..results import Evidence, EvidenceCluster, QueryExpansion, timed
from ..store import Hit, Store, VectorQuery, Where, open_collections
from ..store.base import CALIBRATED_GATE
from ..store.points import Sparse
from .context import adaptive_plan, build_context
from .conversation import Asked, Conversation
from .expansion import ExpandedText, Expander, ExpansionPlan, no_completer
from .fusion import QUESTION, RankedList
from .gate import GateInput, GateModel, decide, quorum_features
from .question import checked_question
from .ranking import ScoredCluster, fused_and_ranked
from .readings import as_asked

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class QueryVectors:
    """A question embedded once: one dense vector for every dense retriever, and one BM25
    query per collection, made with that collection's recorded BM25 settings."""

    question: str
    dense: list[float]
    sparse: dict[str, Sparse]


class Coordinator:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Callable[[], DenseEmbedder],
        completer: Callable[[], object] | None = None,
    ):
        """``completer``: opens the model that writes the question's expansions (retrieval.expansions);
        it is used if it can complete a prompt (``expansion.Completer``)."""
        self.settings = settings
        self.store = store
        self._embedder_factory = embedder
        plans = ExpansionPlan.from_settings(settings)
        self.expander = (
            Expander(plans, completer or no_completer, settings.retrieval.expansion_timeout) if plans else None
        )
        self.conversation = Conversation(settings.retrieval, completer or no_completer)
        self._collections: list[tuple[CollectionSpec, Bm25Embedder]] | None = None
        self._points: dict[str, int] = {}
        self._gate: GateModel | None = None
        self._term_stats: TermStats | None = None
        self._warm = False
        self._pool = ThreadPoolExecutor(max_workers=2 * len(settings.collections), thread_name_prefix="qrag-query")
        #: the BM25 searches of ``embed_and_search``, while this thread computes the dense vector
        self._lexical = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qrag-bm25")
        self._dense_names = frozenset(r.name for r in settings.retrievers if r.kind == "dense")
        self._lexical_names = frozenset(r.name for r in settings.retrievers) - self._dense_names
        #: each (collection, retriever)'s place among the lists: collection by collection, as ``_search`` gives them
        self._list_order = {
            (spec.name, retriever.name): n
            for n, (spec, retriever) in enumerate(
                (spec, retriever) for spec in settings.collections for retriever in spec.retrievers
            )
        }

    def index_changed(self) -> None:
        """After an ingest in this process: check the collections and count their points again
        (and warm them again, if this process asked for it)."""
        self._collections = None
        self._term_stats = None
        if self._warm:
            self.warm()

    def warm(self) -> None:
        """For a process that will answer many questions (the service, MCP, eval, gate calibrate),
        not for one CLI query: the store readies the collections for them (``Store.warm``)."""
        self._warm = True
        self.store.warm([spec.name for spec in self.settings.collections])

    @property
    def collections(self) -> list[tuple[CollectionSpec, Bm25Embedder]]:
        """The namespace's collections, checked once (``store.open_collections``)."""
        if self._collections is None:
            self._collections, self._points = open_collections(self.store, self.settings)
        return self._collections

    def embed(self, question: str) -> QueryVectors:
        question = checked_question(question, self.settings.retrieval.max_question_chars)
        return QueryVectors(question, self._embedder_factory().query_embed(question).tolist(), self._sparse(question))

    def _sparse(self, question: str) -> dict[str, Sparse]:
        return {spec.name: sparse.query_embed(question) for spec, sparse in self.collections}

    def embed_and_search(
        self, question: str, top_k: int | None = None, timings: dict[str, float] | None = None
    ) -> tuple[QueryVectors, list[RankedList]]:
        """Every retriever's ranked list for the question, embedded here. The BM25 searches need
        only the question's words, so they run on a worker thread while this one computes the
        dense vector (the ONNX run lets go of the GIL), and only the dense searches wait for it.
        On 2 idle cores a retrieve took 0.9-1.3 ms less (p50, about 9%), and up to 0.9 ms more with
        the other core busy (docs/benchmarks.md). ``timings``: ``embed`` (the dense vector) and
        ``search`` (what follows until every list is in)."""
        timings = {} if timings is None else timings
        question = checked_question(question, self.settings.retrieval.max_question_chars)
        sparse = self._sparse(question)
        lexical = self._lexical.submit(
            self._search, [(QUESTION, QueryVectors(question, [], sparse), self._lexical_names)], top_k
        )
        try:
            with timed(timings, "embed"):
                vectors = QueryVectors(question, self._embedder_factory().query_embed(question).tolist(), sparse)
            with timed(timings, "search"):
                lists = self._search([(QUESTION, vectors, self._dense_names)], top_k) + lexical.result()
        except BaseException:
            wait([lexical])  # nothing searches on after the question failed
            raise
        return vectors, sorted(lists, key=lambda ranked: self._list_order[ranked.collection, ranked.retriever])

    def queries(self, vectors: QueryVectors, spec: CollectionSpec, top_k: int | None = None) -> list[VectorQuery]:
        """One search per retriever of a collection; dense hits under ``min_similarity`` are dropped."""
        options = self.settings.retrieval
        limit = top_k or options.top_k
        where = Where(not_sources=tuple(options.exclude_sources)) if options.exclude_sources else None
        return [
            VectorQuery(r.vector, vectors.dense, limit, options.min_similarity or None, options.hnsw_ef, where=where)
            if r.kind == "dense"
            else VectorQuery(r.vector, vectors.sparse[spec.name], limit, where=where)
            for r in spec.retrievers
        ]

    def search_expansions(self, texts: Sequence[ExpandedText], top_k: int | None = None) -> list[RankedList]:
        """The ranked lists of the question's expansions, each searched by the retrievers that
        asked for it, all of a collection's in one round trip."""
        if not texts:
            return []
        embedder = self._embedder_factory()
        return self._search(
            [
                (
                    text.label,
                    QueryVectors(
                        text.text,
                        embedder.query_embed(text.text).tolist(),
                        {spec.name: sparse.query_embed(text.text) for spec, sparse in self.collections},
                    ),
                    text.retrievers,
                )
                for text in texts
            ],
            top_k,
        )

    def _search(
        self, queries: Sequence[tuple[str, QueryVectors, Collection[str] | None]], top_k: int | None
    ) -> list[RankedList]:
        """``queries``: (label, vectors, the retrievers that search them; None: all). On a server the
        collections are searched concurrently; in-process (Edge) one after another: on 2 cores
        threads measured slightly slower, and 4 times slower beside other load."""
        searches = []
        for spec, _ in self.collections:
            planned = [
                (label, retriever, request)
                for label, vectors, wanted in queries
                for retriever, request in zip(spec.retrievers, self.queries(vectors, spec, top_k))
                if wanted is None or retriever.name in wanted
            ]
            if planned:
                searches.append((spec, planned))
        specs, plans = [spec for spec, _ in searches], [planned for _, planned in searches]
        mapper = self._pool.map if self.store.concurrent_queries else map
        results = list(mapper(self._search_collection, specs, plans))
        return [
            RankedList(retriever.name, spec.name, hits, label)
            for (spec, planned), per_query in zip(searches, results)
            for (label, retriever, _), hits in zip(planned, per_query)
        ]

    def _search_collection(
        self, spec: CollectionSpec, planned: Sequence[tuple[str, RetrieverSpec, VectorQuery]]
    ) -> list[list[Hit]]:
        """One collection's searches, keeping only hits of each file's newest complete version:
        a query during a rewrite sees the old file or the new one, never both (one more lookup)."""
        results = self.store.query(spec.name, [request for _, _, request in planned])
        sources = {hit.payload.source for hits in results for hit in hits}
        current = self.store.current_versions(spec.name, sources)
        return [[hit for hit in hits if current.get(hit.payload.source) == hit.payload.doc_hash] for hits in results]

    @property
    def gate(self) -> GateModel:
        """``retrieval.gate_model`` when set, else the namespace's own (``gate calibrate``), else the shipped one."""
        if self._gate is None:
            path = self.settings.retrieval.gate_model
            calibrated = None if path else self.store.attachment(self.finest, CALIBRATED_GATE)
            self._gate = (
                GateModel.loads(calibrated, "the namespace's calibrated gate") if calibrated else GateModel.load(path)
            )
        return self._gate

    @property
    def finest(self) -> str:
        """The collection with the most chunks: its term counts are the gate's, and it keeps the
        namespace's calibrated gate."""
        self.collections  # noqa: B018 (checks the collections and counts their points)
        return max(self._points, key=self._points.__getitem__)

    @property
    def term_stats(self) -> TermStats:
        """The document frequencies of the finest chunking, for the gate, less the excluded
        sources' (``retrieval.exclude_sources``). A collection written before they were kept, or
        by a store that keeps none, has them counted here from its texts, in memory."""
        if self._term_stats is None:
            name = self.finest
            self._term_stats = self.store.term_stats(name, self._points[name], self.settings.retrieval.exclude_sources)
        return self._term_stats

    def min_confidence(self, options: RetrievalSettings) -> float:
        """``retrieval.min_confidence``, or when unset the gate model's own threshold."""
        if options.min_confidence is not None:
            return options.min_confidence
        return self.gate.systems["quorum"].threshold if "quorum" in self.gate.systems else 0.0

    def assess(
        self,
        vectors: QueryVectors,
        lists: list[RankedList],
        ranked: list[ScoredCluster],
        formed: int,
        context: list[EvidenceCluster],
        options: RetrievalSettings,
    ) -> tuple[dict[str, float] | None, float]:
        """The gate's features of one retrieval and its confidence that ``context`` holds the answer;
        no features and confidence 0 when nothing reached quorum."""
        if not ranked:
            return None, 0.0
        features = quorum_features(
            GateInput(
                vectors.question,
                vectors.dense,
                lists,
                {r.name: r.kind for r in self.settings.retrievers},
                ranked,
                [" ".join(p.text for p in cluster.passages) for cluster in context],
                len(self.settings.retrievers),
                options.context_clusters,
                self._points,
                self.term_stats,
                formed,
            )
        )
        return features, self.gate.confidence("quorum", features) or 0.0

    def retrieve(self, question: str | Asked) -> Evidence:
        """The question's evidence: ``question`` as typed, or what ``conversation.asked`` made of
        a follow-up (the stand-alone question is searched). Its expansions, if any are configured,
        are written by the model while the question itself is embedded and searched; their lists
        join the fusion, but the gate reads the question's own lists, which its features describe."""
        options = self.settings.retrieval
        timings: dict[str, float] = {}
        asked = question if isinstance(question, Asked) else None
        text = asked.searched_for if asked is not None else str(question)
        if asked is not None and asked.seconds:
            timings["conversation"] = round(asked.seconds * 1000, 3)
        checked = checked_question(text, options.max_question_chars)
        pending = self.expander.start(checked) if self.expander else None
        try:
            vectors, lists = self.embed_and_search(text, timings=timings)
        except BaseException:
            if pending is not None:  # nothing will read what the model writes
                pending.cancelled.set()
            raise
        expanded: list[RankedList] = []
        expansions: list[QueryExpansion] = []
        if pending is not None:
            with timed(timings, "expansion_wait"):
                texts, expansions = pending.collect()
            with timed(timings, "expansion_search"):
                expanded = self.search_expansions(texts)
        evidence = self.evidence_from(vectors, lists, options, expanded, expansions, timings)
        if asked is not None:
            evidence = self.as_asked(evidence, asked, timings)
        log.info("retrieve: %d clusters, %s; ms: %s", len(evidence.clusters), evidence.abstain_reason, timings)
        return evidence

    def word_similarity(self, first: str, second: str) -> float:
        """The cosine of two words' (or short phrases') question vectors."""
        embedder = self._embedder_factory()
        a, b = embedder.query_embed(first), embedder.query_embed(second)
        return float(np.dot(a, b) / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))

    def as_asked(self, evidence: Evidence, asked: Asked, timings: dict[str, float]) -> Evidence:
        """A follow-up's evidence as the user asked it (``readings.as_asked``), the user's typed
        words weighing most in its key terms."""

        def search(text: str) -> Evidence:
            return self.evidence_from(*self.embed_and_search(text), self.settings.retrieval)

        evidence = as_asked(evidence, asked, search, self.word_similarity, self.settings.retrieval.readings, timings)
        if evidence.key_terms and evidence.searched != asked.question:
            evidence.key_terms = key_term_weights(evidence.searched, self.term_stats, typed=asked.question)
        return evidence

    def evidence_from(
        self,
        vectors: QueryVectors,
        lists: list[RankedList],
        options: RetrievalSettings,
        expanded: Sequence[RankedList] = (),
        expansions: Sequence[QueryExpansion] = (),
        timings: dict[str, float] | None = None,
        on_ranked: Callable[[list[ScoredCluster]], None] | None = None,
    ) -> Evidence:
        """The question's evidence from its searched ``lists`` (and its expansions' ``expanded``):
        rank, build the context, assess it and decide. The gate reads the question's own lists,
        which its features describe, on the fixed context (``context_clusters``, ``word_budget``)
        it was fitted on; an adaptive context is cut from the ranking after that. ``on_ranked``
        sees every cluster that reached quorum, best first, for callers that measure more than
        the context (eval's document ranking)."""
        timings = {} if timings is None else timings
        ranked, formed = fused_and_ranked([*lists, *expanded], options, len(self.settings.retrievers), timings)
        if on_ranked is not None:
            on_ranked(ranked)
        with timed(timings, "context"):
            evidence = build_context(ranked, options.context_clusters, options.word_budget)
        with timed(timings, "gate"):
            features, confidence = self.assess(vectors, lists, ranked, formed, evidence, options)
        threshold = self.min_confidence(options)
        reason = decide(len(ranked), confidence, threshold)
        log.debug(
            "lists %s; %d clusters formed, %d at quorum (supports %s); gate confidence %.3f against %.3f",
            {ranked_list.retriever: len(ranked_list.hits) for ranked_list in lists},
            formed,
            len(ranked),
            [len(scored.cluster.best_ranks) for scored in ranked[:5]],
            confidence,
            threshold,
        )
        policy = f"fixed: {options.context_clusters} clusters, {options.word_budget} words" if ranked else None
        if options.context == "adaptive" and ranked:
            with timed(timings, "adaptive_context"):
                keep, policy = adaptive_plan(ranked, options.adaptive_margin, options.adaptive_clusters)
                evidence = build_context(ranked, keep, keep * options.adaptive_words)
        log.debug(
            "context: %d passages from %s (%s)", sum(len(c.passages) for c in evidence), policy, reason or "answer"
        )
        return Evidence(
            question=vectors.question,
            searched_for=vectors.question,
            abstained=reason is not None,
            abstain_reason=reason,
            confidence=round(confidence, 4),
            gate_threshold=threshold,
            retrievers=len(self.settings.retrievers),
            clusters=evidence,
            context_policy=policy,
            expansions=list(expansions),
            timings_ms=timings,
            gate_features=features,
            key_terms=key_term_weights(vectors.question, self.term_stats) if ranked else {},
        )

    def close(self) -> None:
        self._lexical.shutdown()
        self._pool.shutdown()
        if self.expander is not None:
            self.expander.close()
