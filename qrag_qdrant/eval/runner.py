"""Runs every system on the same questions, from one embedding and one search per question.

Systems, all with the same context budget (``retrieval.context.clusters`` units, 5 by default):
- each retriever alone (``dense-c50``, ``bm25-c100``, ...): its top chunks;
- ``qdrant-hybrid``: Qdrant's own prefetch (dense + bm25) with its RRF fusion, in the
  100/50 collection (else the first collection with both vectors searched);
- ``rrf-all``: RRF over all retrievers, no clustering or quorum: the top fused chunks;
- ``quorum``: the full pipeline: the top clusters, as merged passages;
- ``quorum+mq``, ``quorum+hyde`` (asked for by name: they call the model for every question):
  quorum with every retriever also searching three rewrites of the question, or a hypothetical
  answer (``retrieval.expansions``, written by the module ``retrieval.expansion``). Their latency
  includes the model's time; each is compared with ``quorum`` (``paired_comparison``).

Latency of every system includes the question's embedding. ``rrf-all`` and ``quorum``
share one search of all collections, so a sweep over fusion and clustering settings
reuses it and embeds nothing twice.

Every system has a gate from the same weights file: quorum on its features, the others on
their own list's top score and score gap (``gate.LIST_FEATURES``), each abstaining below
its own threshold, so abstention and risk-coverage compare like with like.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api import QuorumRAG
from ..calibration.fitting import CATEGORIES
from ..config.retrieval import RetrievalSettings
from ..config.settings import CollectionSpec, Settings
from ..config.values import parse_expansion
from ..errors import ConfigError
from ..results import Passage, QueryExpansion, timed
from ..retrieval import QueryVectors
from ..retrieval.expansion import ExpandedText, Expander, ExpansionPlan
from ..retrieval.fusion import Candidate, RankedList, reciprocal_rank_fusion
from ..retrieval.gate import list_features
from ..retrieval.query import Searched
from ..retrieval.ranking import ScoredCluster
from ..retrieval.search import EVERYTHING, Scope
from ..store import Hit, qdrant_binding
from ..text.json_lines import json_lines
from .dataset import Dataset, EvalQuestion
from .metrics import (
    SystemAnswer,
    expansion_metrics,
    is_correct,
    paired_comparison,
    qa_metrics,
    relevance_metrics,
    support_profile,
)

HYBRID = "qdrant-hybrid"
RRF_ALL = "rrf-all"
QUORUM = "quorum"
#: quorum with query expansions, searched by every retriever: system -> retrieval.expansions item
EXPANDED_SYSTEMS = {"quorum+mq": "multi_query:3", "quorum+hyde": "hyde"}
#: Candidates per retriever for relevance sets, so recall@100 is measured at depth 100.
RELEVANCE_DEPTH = 100
#: Settings applied after the search, so a sweep over them reuses it (top_k and
#: min_similarity shape the search itself: change them with --top-k or the config).
SWEEPABLE = {
    "quorum": int,
    "cluster_threshold": float,
    "rrf_k": int,
    "weight_rrf": float,
    "weight_support": float,
    "context.words": int,
    "context.clusters": int,
    "context.mode": str,
    "context.margin": float,
    "context.adaptive_words": int,
    "context.adaptive_clusters": int,
}


@dataclass
class QuestionSearch:
    """One question's shared work: its vectors, the full search and the time each took."""

    vectors: QueryVectors
    lists: list[RankedList]
    embed_ms: float
    search_ms: float
    scope: Scope = EVERYTHING


@dataclass
class EvalResult:
    dataset: Dataset
    config: dict[str, Any]
    systems: dict[str, dict[str, Any]]
    support: dict[str, dict[str, float | None]]
    sweep: list[dict[str, Any]] = field(default_factory=list)
    #: one per question and system: what a gate is trained on (``qrag-qdrant gate train``)
    rows: list[dict[str, Any]] = field(default_factory=list)
    #: each system's context per question, in the data set's order
    contexts: dict[str, list[SystemAnswer]] = field(default_factory=dict)
    #: answer-level results (``eval --generate``), from ``AnswerEvaluation``
    generation: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        categories = {c: sum(q.category == c for q in self.dataset.questions) for c in CATEGORIES}
        return {
            "dataset": self.dataset.name,
            "questions": len(self.dataset.questions),
            "categories": categories,
            "held_out_docs": sorted(self.dataset.held_out),
            "config": self.config,
            "systems": self.systems,
            "quorum_support": self.support,
            "sweep": self.sweep,
            **({"generation": self.generation} if self.generation else {}),
        }


def system_names(rag: QuorumRAG) -> list[str]:
    """The systems an eval runs when none are named; EXPANDED_SYSTEMS run only when named."""
    return [r.name for r in rag.settings.retrievers] + [HYBRID, RRF_ALL, QUORUM]


class ExpansionCache:
    """Expansions already written, one JSON line each, so a rerun asks the model only for new
    questions (CPU generation takes seconds per question). Failures are kept as they happened."""

    def __init__(self, path: Path | None):
        self.path = path
        self.entries: dict[tuple[str, str], QueryExpansion] = {}
        if path is not None and path.is_file():
            for _, row in json_lines(path, skip_invalid=True):  # a line a crash cut short is written again
                self.entries[(row["question"], row["expansion"])] = QueryExpansion(**row["result"])

    def get(self, question: str, item: str, expander: Expander) -> QueryExpansion:
        key = (question, item)
        if key not in self.entries:
            _, (report,) = expander.start(question).collect()
            self.entries[key] = report
            if self.path is not None:
                with self.path.open("a") as sink:
                    sink.write(
                        json.dumps({"question": question, "expansion": item, "result": report.model_dump()}) + "\n"
                    )
        return self.entries[key]


def expanded_settings(settings: Settings, item: str) -> Settings:
    """The settings with ``item`` as the only expansion: searched by every retriever that does not
    name its own, and by those that name it (so ``expansions = []`` on a retriever leaves it out)."""
    name = parse_expansion(item)[0]
    return settings.model_copy(
        update={
            "retrieval": settings.retrieval.model_copy(update={"expansions": (item,)}),
            "retrievers": tuple(
                r
                if r.expansions is None
                else r.model_copy(
                    update={"expansions": tuple(x for x in r.expansions if parse_expansion(x)[0] == name)}
                )
                for r in settings.retrievers
            ),
        }
    )


def parse_sweep(items: Sequence[str]) -> list[dict[str, Any]]:
    """``["quorum=1,2", "rrf_k=10,60"]`` -> every combination, as retrieval overrides."""
    axes: list[list[tuple[str, Any]]] = []
    for item in items:
        name, _, values = item.partition("=")
        if name not in SWEEPABLE or not values:
            raise ConfigError(f"--sweep {item!r}: use NAME=V1,V2 with NAME one of {', '.join(SWEEPABLE)}")
        try:
            axes.append([(name, SWEEPABLE[name](value)) for value in values.split(",")])
        except ValueError:
            raise ConfigError(f"--sweep {item!r}: {values!r} are not {SWEEPABLE[name].__name__} values") from None
    return [dict(point) for point in itertools.product(*axes)] if axes else []


class Evaluation:
    def __init__(
        self,
        rag: QuorumRAG,
        dataset: Dataset,
        systems: Sequence[str] | None = None,
        top_k: int | None = None,
        expansions_cache: Path | None = None,
        chunks: int | None = None,
        gold_documents: bool = False,
    ):
        """``chunks``: how many chunks a chunk system (a retriever alone, hybrid, rrf-all) sends, default
        ``retrieval.context.clusters``; ``gold_documents``: quorum searches a question's gold ones alone."""
        known = system_names(rag) + list(EXPANDED_SYSTEMS)
        if gold_documents and set(systems or ()) != {QUORUM}:
            raise ConfigError("--gold-documents measures quorum alone: add --systems quorum")
        self.gold_documents = gold_documents
        unknown = [name for name in systems or () if name not in known]
        if unknown:
            raise ConfigError(f"unknown systems {', '.join(unknown)}; known: {', '.join(known)}")
        self.rag, self.dataset = rag, dataset
        self.systems = list(systems or system_names(rag))
        self.expanders = {
            name: self._expander(rag, item) for name, item in EXPANDED_SYSTEMS.items() if name in self.systems
        }
        self.expansions = ExpansionCache(expansions_cache)
        self.top_k = top_k or (RELEVANCE_DEPTH if dataset.kind == "relevance" else rag.settings.retrieval.top_k)
        self.options = rag.settings.retrieval.model_copy(update={"top_k": self.top_k})
        self.budget = chunks or rag.settings.retrieval.context.clusters
        self.searches: list[QuestionSearch] = []

    @staticmethod
    def _expander(rag: QuorumRAG, item: str) -> Expander:
        plans = ExpansionPlan.from_settings(expanded_settings(rag.settings, item))
        if not plans:
            raise ConfigError(f"no retriever searches {item}: each names its own expansions without it")
        return Expander(plans, rag.generator, rag.settings.retrieval.expansion_timeout)

    def run(self, sweep: Sequence[dict[str, Any]] = (), advance: Callable[[], None] = lambda: None) -> EvalResult:
        answers: dict[str, list[SystemAnswer]] = {name: [] for name in self.systems}
        self.rag.warm()  # as the service answers: the store's files in the page cache
        for question in self.dataset.questions:
            search = self.search_question(question)
            self.searches.append(search)
            for name in self.systems:
                answers[name].append(self.answer(name, search))
            advance()
        metrics = qa_metrics if self.dataset.kind == "qa" else relevance_metrics
        questions = self.dataset.questions
        support = support_profile(questions, answers[QUORUM], self.dataset.kind) if QUORUM in answers else {}
        result = EvalResult(
            self.dataset,
            self.rag.settings.model_dump(mode="json", exclude={"config_file"}),
            {name: metrics(questions, per_question) for name, per_question in answers.items()},
            support,
            contexts=answers,
        )
        for name in self.expanders:
            result.systems[name]["expansion"] = expansion_metrics(answers[name], answers.get(QUORUM))
            if QUORUM in answers:
                result.systems[name]["vs_quorum"] = paired_comparison(
                    questions, answers[name], answers[QUORUM], self.dataset.kind
                )
        result.rows = [
            {
                "id": q.id,
                "group": q.group,
                "category": q.category,
                "system": name,
                "label": is_correct(q, a, self.dataset.kind),
                "confidence": a.confidence,
                "features": a.features,
            }
            for name, per_question in answers.items()
            for q, a in zip(questions, per_question)
        ]
        for point in sweep:
            options = self.options.updated(point)
            point_answers = [self._quorum(search, options) for search in self.searches]
            result.sweep.append({**point, **metrics(questions, point_answers)})
        return result

    def search_question(self, question: EvalQuestion) -> QuestionSearch:
        coordinator, timings = self.rag.coordinator, {"search": 0.0}
        scope = Scope(sources=frozenset(question.relevant_docs)) if self.gold_documents else EVERYTHING
        searched = {RRF_ALL, QUORUM, *self.expanders} & set(self.systems) and scope.sources != frozenset()
        if searched:  # the query path's own embed and search
            vectors, lists = coordinator.searcher.embed_and_search(question.question, self.top_k, timings, scope)
        else:  # no system searches, or no gold document to search
            with timed(timings, "embed"):
                vectors, lists = coordinator.searcher.embed(question.question), []
        return QuestionSearch(vectors, lists, timings["embed"], timings["search"], scope)

    def answer(self, name: str, search: QuestionSearch) -> SystemAnswer:
        if name == QUORUM:
            return self._quorum(search, self.options)
        if name in self.expanders:
            return self._expanded(name, search)
        started = time.perf_counter()
        if name == RRF_ALL:
            candidates = reciprocal_rank_fusion(search.lists, self.options.rrf_k)
            answer = self._chunks(name, [c.hit for c in candidates], [c.rrf for c in candidates])
            return self._timed(answer, search, started, shared_search=True)
        if name == HYBRID:
            spec = self._hybrid_collection()
            hits = qdrant_binding(self.rag.store).hybrid(
                spec.name,
                search.vectors.dense,
                search.vectors.sparse[spec.name],
                limit=max(self.top_k, self.budget),
                prefetch_limit=self.top_k,
            )
            return self._timed(self._chunks(name, hits), search, started)
        spec, query = self._retriever(name, search.vectors)
        hits = self.rag.store.query(spec.name, [query])[0]
        return self._timed(self._chunks(name, hits), search, started)

    def _expanded(self, name: str, search: QuestionSearch) -> SystemAnswer:
        """Quorum over the question's lists and its expansion's; the model's time counts in latency."""
        expander = self.expanders[name]
        report = self.expansions.get(search.vectors.question, EXPANDED_SYSTEMS[name], expander)
        plan = expander.plans[0]  # this config's retrievers, whoever wrote the cached texts
        started = time.perf_counter()
        lists = self.rag.coordinator.searcher.search_expansions(
            [
                ExpandedText(label, text, plan.searchers(index))
                for index, (label, text) in enumerate(zip(report.labels, report.texts))
            ],
            self.top_k,
        )
        searched_ms = (time.perf_counter() - started) * 1000
        answer = self._quorum(search, self.options, lists)
        answer.expansion = report
        answer.latency_ms += searched_ms + (report.seconds or 0.0) * 1000
        return answer

    def _quorum(
        self, search: QuestionSearch, options: RetrievalSettings, expanded: Sequence[RankedList] = ()
    ) -> SystemAnswer:
        """The query path's own evidence (``Coordinator.evidence_for``) from the shared search;
        the clusters' document order, for ranking metrics, is observed through its hook."""
        started = time.perf_counter()
        ranked: list[ScoredCluster] = []
        query = self.rag.coordinator.query(search.vectors.question, search.scope, ranked.extend, options)
        evidence = self.rag.coordinator.evidence_for(query, Searched(search.vectors, search.lists, expanded))
        clusters = evidence.clusters
        answer = SystemAnswer(
            units=[[p.text for p in c.passages] for c in clusters],
            docs=_cluster_docs(ranked),
            support=clusters[0].support if clusters else None,
            confidence=evidence.confidence or 0.0,
            features=evidence.gate_features or {},
            passages=evidence.passages,
            gated=evidence.abstain_reason in ("low_confidence", "part_missing"),
            evidence=evidence,
        )
        return self._timed(answer, search, started, shared_search=True)

    def _chunks(self, name: str, hits: Sequence[Hit], scores: Sequence[float] | None = None) -> SystemAnswer:
        """The top chunks, gated on the list's own scores with the system's own threshold."""
        features = list_features(list(scores if scores is not None else (h.score for h in hits)))
        gate = self.rag.coordinator.gate.systems.get(name)
        confidence = gate.confidence(features) if gate and hits else (0.0 if gate else None)
        gated = (
            gate is not None
            and confidence is not None
            and self.options.min_confidence != 0
            and confidence < gate.threshold
        )
        shown = hits[: self.budget]
        return SystemAnswer(
            units=[[h.payload.text] for h in shown],
            docs=_unique(h.payload.source for h in hits),
            confidence=confidence,
            features=features,
            gated=gated,
            passages=[
                Passage(
                    citation=n, source=h.payload.source, start=h.payload.start, end=h.payload.end, text=h.payload.text
                )
                for n, h in enumerate(shown, start=1)
            ],
        )

    @staticmethod
    def _timed(
        answer: SystemAnswer, search: QuestionSearch, started: float, shared_search: bool = False
    ) -> SystemAnswer:
        own = (time.perf_counter() - started) * 1000
        answer.latency_ms = search.embed_ms + (search.search_ms if shared_search else 0.0) + own
        return answer

    def _retriever(self, name: str, vectors: QueryVectors) -> tuple[CollectionSpec, Any]:
        for spec, _ in self.rag.coordinator.searcher.collections:
            for retriever, query in zip(
                spec.retrievers, self.rag.coordinator.searcher.queries(vectors, spec, self.top_k)
            ):
                if retriever.name == name:
                    return spec, query
        raise ConfigError(f"no retriever named {name}")

    def _hybrid_collection(self) -> CollectionSpec:
        specs = [spec for spec, _ in self.rag.coordinator.searcher.collections]
        preferred = [s for s in specs if (s.size, s.overlap) == (100, 50)]
        return (preferred or specs)[0]


def _cluster_docs(ranked: Sequence[ScoredCluster]) -> list[str]:
    """Documents in cluster order; inside a cluster, in fused order of its members."""
    members: list[Candidate] = [m for scored in ranked for m in scored.cluster.members]
    return _unique(m.source for m in members)


def _unique(items: Any) -> list[str]:
    return list(dict.fromkeys(items))
