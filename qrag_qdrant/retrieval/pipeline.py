"""The query pipeline, assembled once, read top to bottom: ``retrieve`` = ``query`` (the question
checked) -> ``evidence_for`` (whole or by parts, decided there alone) -> ``search`` (embed, search,
expansions) -> ``evidence_from`` -> for a follow-up, ``as_asked`` (its second reading).

``evidence_for`` is what every caller uses (the CLI, the service, and eval's quorum systems from
their shared search); ``evidence_from`` is its tail: fusion, clustering, quorum, ranking, context,
the gate's confidence and its decision. Each step takes the ``Query`` and what its search found.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from ..config.retrieval import RetrievalSettings
from ..config.settings import Settings
from ..embedding import Embedder
from ..errors import NothingIngestedError
from ..results import Evidence, EvidenceCluster, timed
from ..store import Store
from ..store.access import ALL, Access
from ..store.base import CALIBRATED_GATE
from ..store.filters import NoDocumentPasses
from ..text.term_stats import key_term_weights, unseen_words
from .alone_parts import bridged, chains, search_alone
from .context import adaptive_plan, build_context
from .conversation import Asked, Conversation
from .expansion import ExpandedText, Expander, ExpansionPlan, no_completer
from .form_parts import plan_by_form, time_order, value_comparison, within
from .gate import GateInput, GateModel, decide, held_by_every_retriever, quorum_features
from .model_parts import ModelSplit
from .multipart import PartFound, interleaved, joined_evidence
from .parts import WHOLE, QuestionPart, QuestionPlan, plan_question
from .query import Query, Searched
from .question import checked_question
from .ranking import ScoredCluster, fused_and_ranked
from .readings import as_asked, second_reading, word_similarity
from .search import EVERYTHING, QueryVectors, Scope, Searcher
from .views import NamespaceViews

log = logging.getLogger(__name__)


class Coordinator:
    """The query pipeline: a ``Searcher``'s ranked lists, then fusion, clustering, quorum,
    ranking, the context and the gate's decision (``evidence_from``); a follow-up's readings."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Callable[[], Embedder],
        completer: Callable[[], object] | None = None,
    ):
        """``completer``: opens the model that writes the question's expansions (retrieval.expansions);
        it is used if it can complete a prompt (``generation.base.Completer``)."""
        self.settings = settings
        self.store = store
        self.searcher = Searcher(settings, store, embedder)
        self._embedder_factory = embedder
        plans = ExpansionPlan.from_settings(settings)
        self.expander = (
            Expander(plans, completer or no_completer, settings.retrieval.expansion_timeout) if plans else None
        )
        self.conversation = Conversation(settings.retrieval, completer or no_completer)
        self.model_split = ModelSplit(completer or no_completer)
        self._gate: GateModel | None = None
        self._gate_shipped = True
        self.views = NamespaceViews(settings, store, self.searcher)
        self._warm = False

    def index_changed(self, rewarm: bool = True) -> None:
        """After an ingest: check the collections and count their points again (and, with
        ``rewarm``, warm them again if this process asked for it)."""
        self.searcher.forget()
        self.views.forget()
        if self._warm and rewarm:
            self.warm()

    def warm(self) -> None:
        """For a process that will answer many questions (the service, MCP, eval, gate calibrate),
        not for one CLI query: the store readies the collections for them (``Store.warm``), and
        the publishers a question may name are read."""
        self._warm = True
        self.store.warm([spec.name for spec in self.settings.collections])
        with contextlib.suppress(NothingIngestedError):  # an empty namespace has none to read yet
            self.views.publishers_for(ALL)  # read now, not on the first question

    @property
    def gate(self) -> GateModel:
        """``retrieval.gate_model`` when set, else the namespace's own (``gate calibrate``), else the shipped one."""
        if self._gate is None:
            path = self.settings.retrieval.gate_model
            calibrated = None if path else self.store.attachment(self.views.finest, CALIBRATED_GATE)
            self._gate = (
                GateModel.loads(calibrated, "the namespace's calibrated gate") if calibrated else GateModel.load(path)
            )
            self._gate_shipped = not path and not calibrated
        return self._gate

    def shipped_gate(self, options: RetrievalSettings) -> bool:
        """Whether the gate is the shipped one at its own threshold: no ``retrieval.gate_model``,
        no namespace calibration, no ``retrieval.min_confidence``. A gate fitted or a threshold
        chosen for the namespace is its owner's word, kept in a namespace of a few files too
        (``gate.held_by_every_retriever``)."""
        self.gate  # noqa: B018 (loads the gate, and reads where it came from)
        return options.min_confidence is None and self._gate_shipped

    def plan(self, question: str, access: Access = ALL) -> QuestionPlan:
        """The question's parts (``retrieval.parts.mode``): by the publishers it names (one
        publisher's two events ordered or two values compared: a part each, ``within``), else by its form
        (``form_parts``), then by the model for a question they leave whole (``model_parts``); or
        the whole question."""
        how = self.settings.retrieval.parts.mode
        if how == "off":
            return WHOLE
        plan = within(plan_question(question, self.views.publishers_for(access)), question)
        if not plan.split:
            plan = plan_by_form(question)
        return self.model_split.plan(question) if how == "model" and not plan.split else plan

    def min_confidence(self, options: RetrievalSettings) -> float:
        """``retrieval.min_confidence``, or when unset the gate model's own threshold."""
        if options.min_confidence is not None:
            return options.min_confidence
        return self.gate.systems["quorum"].threshold if "quorum" in self.gate.systems else 0.0

    def assess(
        self, query: Query, searched: Searched, ranked: list[ScoredCluster], formed: int, context: list[EvidenceCluster]
    ) -> tuple[dict[str, float] | None, float]:
        """The gate's features of one retrieval and its confidence that ``context`` holds the answer;
        no features and confidence 0 when nothing reached quorum."""
        if not ranked:
            return None, 0.0
        points, stats = self.views.counts_for(query.scope.access)
        features = quorum_features(
            GateInput(
                searched.vectors.question,
                searched.vectors.dense,
                searched.lists,
                {r.name: r.vector for r in self.settings.retrievers},
                ranked,
                [" ".join(p.text for p in cluster.passages) for cluster in context],
                len(self.settings.retrievers),
                query.options.context.clusters,
                points,
                stats,
                formed,
            )
        )
        return features, self.gate.confidence("quorum", features) or 0.0

    def query(
        self,
        question: str | Asked,
        scope: Scope = EVERYTHING,
        on_ranked: Callable[[list[ScoredCluster]], None] | None = None,
        options: RetrievalSettings | None = None,
    ) -> Query:
        """``question`` checked (a follow-up: what ``conversation.asked`` made of it, its
        stand-alone rewrite) as a query of ``scope``, with ``retrieval``'s options unless given."""
        options = options or self.settings.retrieval
        asked = question if isinstance(question, Asked) else None
        text = asked.searched_for if asked is not None else str(question)
        timings = {"conversation": round(asked.seconds * 1000, 3)} if asked is not None and asked.seconds else {}
        return Query(checked_question(text, options.max_question_chars), options, scope, timings, on_ranked, asked)

    def retrieve(self, question: str | Asked, scope: Scope = EVERYTHING) -> Evidence:
        """The question's evidence: ``question`` as typed, or what ``conversation.asked`` made of
        a follow-up (the stand-alone question is searched, then read as the user asked it).
        ``scope``: the documents the caller may read, narrowed by its filter; every search carries
        it. A filter no document the caller may read passes raises NoDocumentPasses."""
        scope = self.views.as_stored(scope)
        query = self.query(question, scope)
        if scope.documents is not None:
            self.require_passing(scope)
        evidence = self.evidence_for(query)
        if query.asked is not None:
            evidence = self.as_asked(query, evidence)
        log.info("retrieve: %d clusters, %s; ms: %s", len(evidence.clusters), evidence.abstain_reason, query.timings)
        return evidence

    def evidence_for(self, query: Query, searched: Searched | None = None) -> Evidence:
        """The one place that decides whether a question is searched whole (``evidence_from``) or by
        its parts (``by_parts``). ``searched``: the question's search, made already (eval shares
        one among its systems; a question of parts then uses only its vectors); else made here."""
        plan = self.plan(query.question, query.scope.access)
        if plan.seconds:
            query.timings["question_split"] = round(plan.seconds * 1000, 3)
        if plan.split:
            return self.by_parts(query, plan, searched.vectors if searched is not None else None)
        return self.evidence_from(query, searched if searched is not None else self.search(query))

    def search(self, query: Query) -> Searched:
        """The question embedded and searched by every retriever. Its expansions, if any are
        configured, are written by the model while the question is embedded and searched, then
        searched; their lists join the fusion, but the gate reads the question's own lists, which
        its features describe."""
        pending = self.expander.start(query.question) if self.expander else None
        try:
            vectors, lists = self.searcher.embed_and_search(query.question, timings=query.timings, scope=query.scope)
        except BaseException:
            if pending is not None:  # nothing will read what the model writes
                pending.cancelled.set()
            raise
        if pending is None:
            return Searched(vectors, lists)
        with timed(query.timings, "expansion_wait"):
            texts, expansions = pending.collect()
        with timed(query.timings, "expansion_search"):
            expanded = self.searcher.search_expansions(texts, scope=query.scope)
        return Searched(vectors, lists, expanded, expansions)

    def require_passing(self, scope: Scope) -> None:
        """NoDocumentPasses, naming the filter, when no document the caller may read passes it:
        the caller learns that, not an empty evidence."""
        assert scope.documents is not None
        where = self.searcher.where(self.views.finest, scope)
        if (where is not None and where.sources == ()) or not self.store.count(self.views.finest, where):
            raise NoDocumentPasses(f"no document passes the filter ({scope.documents.describe()})")

    def passes(self, scope: Scope) -> bool:
        """Whether a document the caller may read passes ``scope``'s filter."""
        try:
            self.require_passing(scope)
        except NoDocumentPasses:
            return False
        return True

    def as_asked(self, query: Query, evidence: Evidence) -> Evidence:
        """A follow-up's evidence as the user asked it: the rewrite's other reading searched (its
        whole question, with no expansion) when ``readings.second_reading`` finds one, the two
        readings' evidence weighed (``readings.as_asked``), the user's typed words weighing most
        in the key terms."""
        asked = query.asked
        assert asked is not None
        similarity = partial(word_similarity, self._embedder_factory())
        reading = second_reading(evidence, asked, similarity, query.options.conversation.readings)
        second = None
        if reading is not None:
            with timed(query.timings, "second_reading"):
                again = query.within(question=reading.searched_for)
                vectors, lists = self.searcher.embed_and_search(again.question, scope=again.scope)
                second = self.evidence_from(again, Searched(vectors, lists))
        evidence = as_asked(evidence, asked, reading, second, query.timings)
        if evidence.key_terms and evidence.searched != asked.question:
            stats = self.views.counts_for(query.scope.access)[1]
            evidence.key_terms = key_term_weights(evidence.searched, stats, typed=asked.question)
            evidence.unseen_terms = unseen_words(evidence.searched, stats)
        return evidence

    def by_parts(self, query: Query, plan: QuestionPlan, vectors: QueryVectors | None = None) -> Evidence:
        """A question of several parts, embedded once (``vectors``, when the caller has them): each
        part searched within its documents, with its own quorum and share of the context
        (``multipart.joined_evidence``); ``query.on_ranked`` sees the parts' clusters as one
        ranking (``multipart.interleaved``)."""
        options = query.options
        with timed(query.timings, "parts"):
            vectors = vectors if vectors is not None else self.searcher.embed(query.question)
            unnamed = plan.unnamed(vectors.question)
            found = [self.search_part(query, vectors, part, unnamed) for part in plan.parts]
            if plan.alone and chains(vectors.question):
                found = bridged(found)
            whole = self.whole_question(query, vectors) if plan.alone else None
            evidence = joined_evidence(vectors.question, found, options.parts.clusters, options.parts.words, whole)
            if len(found) == 2 and (ordered := time_order(vectors.question)) is not None:
                evidence.time_order = ordered.order
                events = ordered.for_parts([one.part.named for one in found])
                for part, event in zip(evidence.parts, events, strict=True):
                    part.event = event
            elif len(found) == 2:
                evidence.comparison = value_comparison(vectors.question)
        if query.on_ranked is not None:
            query.on_ranked(interleaved([one.ranked for one in found]))
        evidence.timings_ms = {**query.timings, **evidence.timings_ms}
        log.info("retrieve: %d parts, %d clusters, %s", len(found), len(evidence.clusters), evidence.abstain_reason)
        return evidence

    def whole_question(self, query: Query, vectors: QueryVectors) -> Evidence:
        """The whole question's evidence, for the gate's decision on a question whose parts are
        searched by their own words alone: its features describe a question's own search."""
        lists, _ = self.searcher.search_embedded(vectors, (), query.scope)
        return self.evidence_from(query.within(), Searched(vectors, lists))

    def search_part(self, query: Query, vectors: QueryVectors, part: QuestionPart, unnamed: str) -> PartFound:
        """One part's evidence: the question and its own words searched in its documents (a part
        the model wrote: its own words alone, in every document), or why none can. The gate reads
        ``unnamed``, the question without the publishers its parts' filters already hold to."""
        scope, options = query.scope, query.options
        searched = part.clause or vectors.question
        if part.missing is not None:
            return PartFound(part, searched, None, missing=part.missing)
        narrowed = part.filter.within(scope.documents)
        if part.alone:
            retrievers = len(self.settings.retrievers)
            if part.when is not None and narrowed is not None:
                dated = Scope(scope.access, narrowed, scope.sources)
                if self.passes(dated):
                    return search_alone(self.searcher, options, part, dated, retrievers, narrowed.describe())
            # no date, or no document the caller may read is dated then: the words alone
            return search_alone(self.searcher, options, part, scope, retrievers)
        described = (narrowed or part.filter).describe()
        gone = PartFound(part, searched, described, missing=f"no document from {part.label}")
        if narrowed is None:
            return gone
        within = Scope(scope.access, narrowed, scope.sources)
        if not self.passes(within):
            return gone
        every = frozenset(retriever.name for retriever in self.settings.retrievers)
        own = [ExpandedText("the part's own words", part.clause, every)] if part.clause else []
        lists, expanded = self.searcher.search_embedded(vectors, own, within, options.parts.top_k)
        ranked: list[ScoredCluster] = []
        in_part = query.within(scope=within, on_ranked=ranked.extend)
        evidence = self.evidence_from(in_part, Searched(replace(vectors, question=unnamed), lists, expanded))
        return PartFound(part, searched, described, evidence, ranked)

    def evidence_from(self, query: Query, searched: Searched) -> Evidence:
        """The question's evidence from its search (and its expansions' lists): rank, build the
        context, assess it and decide. The gate reads the question's own lists, which its features
        describe, on the fixed context (``retrieval.context.clusters`` and ``words``) it was fitted on; an
        adaptive context is cut from the ranking after that. ``query.on_ranked`` sees every cluster
        that reached quorum, best first, for callers that measure more than the context (eval's
        document ranking)."""
        options, timings, question = query.options, query.timings, searched.vectors.question
        retrievers = len(self.settings.retrievers)
        ranked, formed = fused_and_ranked([*searched.lists, *searched.expanded], options, retrievers, timings, question)
        if query.on_ranked is not None:
            query.on_ranked(ranked)
        with timed(timings, "context"):
            evidence = build_context(ranked, options.context.clusters, options.context.words)
        with timed(timings, "gate"):
            features, confidence = self.assess(query, searched, ranked, formed, evidence)
        threshold = self.min_confidence(options)
        points, stats = self.views.counts_for(query.scope.access)
        held = self.shipped_gate(options) and held_by_every_retriever(features, points)
        reason = decide(len(ranked), confidence, threshold, held)
        log.debug(
            "lists %s; %d clusters formed, %d at quorum (supports %s); gate confidence %.3f against %.3f",
            {ranked_list.retriever: len(ranked_list.hits) for ranked_list in searched.lists},
            formed,
            len(ranked),
            [len(scored.cluster.best_ranks) for scored in ranked[:5]],
            confidence,
            threshold,
        )
        policy = f"fixed: {options.context.clusters} clusters, {options.context.words} words" if ranked else None
        if options.context.mode == "adaptive" and ranked:
            with timed(timings, "adaptive_context"):
                keep, policy = adaptive_plan(ranked, options.context.margin, options.context.adaptive_clusters)
                evidence = build_context(ranked, keep, keep * options.context.adaptive_words)
        log.debug(
            "context: %d passages from %s (%s)", sum(len(c.passages) for c in evidence), policy, reason or "answer"
        )
        return Evidence(
            question=question,
            searched_for=question,
            abstained=reason is not None,
            abstain_reason=reason,
            confidence=round(confidence, 4),
            gate_threshold=threshold,
            retrievers=retrievers,
            clusters=evidence,
            context_policy=policy,
            expansions=list(searched.expansions),
            timings_ms=timings,
            gate_features=features,
            key_terms=key_term_weights(question, stats) if ranked else {},
            unseen_terms=unseen_words(question, stats) if ranked else [],
        )

    def close(self) -> None:
        self.searcher.close()
        if self.expander is not None:
            self.expander.close()
