"""The searches: every retriever's ranked list for a question, in one round trip per collection.

The namespace's collections are checked once (``store.open_collections``); a question is embedded
once for every dense retriever, and once per collection for BM25 (each with the settings its
collection recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from ..config.settings import DENSE_VECTOR, CollectionSpec, RetrieverSpec, Settings
from ..embedding import Bm25Embedder, Embedder, NamedEmbedders
from ..results import timed
from ..store import Hit, Store, VectorQuery, Where, open_collections
from ..store.access import ALL, Access
from ..store.filters import DocumentFilter
from ..store.points import Sparse
from ..text.terms import with_name_initials
from .expansion import ExpandedText
from .fusion import QUESTION, RankedList
from .question import checked_question


@dataclass(frozen=True)
class QueryVectors:
    """A question embedded once: one dense vector for every dense retriever, and one BM25
    query per collection, made with that collection's recorded BM25 settings."""

    question: str
    dense: list[float]
    sparse: dict[str, Sparse]
    #: the question's vector of each model of ``[embeddings]`` a retriever names, by vector name
    named: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scope:
    """What a caller's searches may find: the documents it may read, narrowed by its filter (and,
    for eval's ceiling, to ``sources`` alone: a question's gold documents)."""

    access: Access = ALL
    documents: DocumentFilter | None = None
    sources: frozenset[str] | None = None


EVERYTHING = Scope()


class Searcher:
    """Every retriever's ranked list for a question: the namespace's collections (checked once),
    the question's vectors, and the searches, collection by collection."""

    def __init__(self, settings: Settings, store: Store, embedder: Callable[[], Embedder]):
        self.settings = settings
        self.store = store
        self._embedder_factory = embedder
        self.named = NamedEmbedders(settings)
        #: the models of ``[embeddings]`` the retrievers name
        self._models = tuple(dict.fromkeys(r.embedding for r in settings.retrievers if r.embedding is not None))
        self._collections: list[tuple[CollectionSpec, Bm25Embedder]] | None = None
        self._points: dict[str, int] = {}
        #: collection -> (its index stamp, the groups its documents name as readers)
        self._groups: dict[str, tuple[int, frozenset[str]]] = {}
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

    def forget(self) -> None:
        """After an ingest: the collections are checked, and their points counted, again."""
        self._collections = None

    @property
    def points(self) -> dict[str, int]:
        """Each collection's point count, as counted when the collections were checked."""
        self.collections  # noqa: B018 (checks the collections and counts their points)
        return self._points

    @property
    def collections(self) -> list[tuple[CollectionSpec, Bm25Embedder]]:
        """The namespace's collections, checked once (``store.open_collections``)."""
        if self._collections is None:
            self._collections, self._points = open_collections(self.store, self.settings)
        return self._collections

    def embed(self, question: str) -> QueryVectors:
        return self._vectors(checked_question(question, self.settings.retrieval.max_question_chars))

    def _sparse(self, question: str) -> dict[str, Sparse]:
        """Each collection's BM25 query: the question's words and the initials of the names it
        writes in full (``terms.with_name_initials``)."""
        lexical = with_name_initials(question)
        return {spec.name: sparse.query_embed(lexical) for spec, sparse in self.collections}

    def embed_and_search(
        self,
        question: str,
        top_k: int | None = None,
        timings: dict[str, float] | None = None,
        scope: Scope = EVERYTHING,
    ) -> tuple[QueryVectors, list[RankedList]]:
        """Every retriever's ranked list for the question, embedded here. The BM25 searches need
        only the question's words, so they run on a worker thread while this one computes the
        dense vector (the ONNX run lets go of the GIL), and only the dense searches wait for it.
        On 2 idle cores a retrieve took 0.9-1.3 ms less (p50, about 9%), and up to 0.9 ms more with
        the other core busy (docs/benchmarks.md). ``timings``: ``embed`` (the dense vector) and
        ``search`` (what follows until every list is in); ``scope``: the documents the hits may come from."""
        timings = {} if timings is None else timings
        question = checked_question(question, self.settings.retrieval.max_question_chars)
        sparse = self._sparse(question)
        wheres = self.wheres(scope)  # once for both halves of the search
        lexical = self._lexical.submit(
            self._search, [(QUESTION, QueryVectors(question, [], sparse), self._lexical_names)], top_k, scope, wheres
        )
        try:
            with timed(timings, "embed"):
                vectors = self._vectors(question, sparse)
            with timed(timings, "search"):
                dense = self._search([(QUESTION, vectors, self._dense_names)], top_k, scope, wheres)
                lists = dense + lexical.result()
        except BaseException:
            wait([lexical])  # nothing searches on after the question failed
            raise
        return vectors, sorted(lists, key=lambda ranked: self._list_order[ranked.collection, ranked.retriever])

    def named_groups(self, name: str) -> frozenset[str]:
        """Every group collection ``name``'s documents name as readers, read again whenever its
        index stamp changes (every change of readers stamps it). A caller's filter names them:
        there is none when the caller's groups cover them all (a namespace that restricts nothing,
        a reader of every restricted document), where a filter passing every point cost 13% of a
        query (docs/benchmarks.md#permissions). Readers changed by another process since are
        caught by the check of every hit (``_search_collection``)."""
        manifest = self.store.manifest(name)
        stamp = manifest.indexed if manifest is not None else -1
        known = self._groups.get(name)
        if known is None or known[0] != stamp:
            known = self._groups[name] = (stamp, self.store.reader_groups(name))
        return known[1]

    def queries(
        self, vectors: QueryVectors, spec: CollectionSpec, top_k: int | None = None, scope: Scope = EVERYTHING
    ) -> list[VectorQuery]:
        """One search per retriever of a collection; dense hits under ``min_similarity`` are dropped.
        Each carries the caller's filter (``where``)."""
        return self._requests(vectors, spec, top_k, self.where(spec.name, scope))

    def _requests(
        self, vectors: QueryVectors, spec: CollectionSpec, top_k: int | None, where: Where | None
    ) -> list[VectorQuery]:
        options = self.settings.retrieval
        limit = top_k or options.top_k
        return [
            VectorQuery(r.vector, vectors.dense, limit, options.min_similarity or None, options.hnsw_ef, where=where)
            if r.vector == DENSE_VECTOR
            # another model's cosines are on a scale of their own: min_similarity is [embedding]'s
            else VectorQuery(r.vector, vectors.named.get(r.vector, []), limit, None, options.hnsw_ef, where=where)
            if r.kind == "dense"
            else VectorQuery(r.vector, vectors.sparse[spec.name], limit, where=where)
            for r in spec.retrievers
        ]

    def wheres(self, scope: Scope) -> dict[str, Where | None]:
        """``where`` of each collection: what one retrieval's searches read."""
        return {spec.name: self.where(spec.name, scope) for spec, _ in self.collections}

    def where(self, name: str, scope: Scope) -> Where | None:
        """The points a caller's searches of collection ``name`` read: not the excluded sources
        (``retrieval.exclude_sources``), only documents it may read unless it may read every one
        (``named_groups``), and those its filter passes (a path prefix as the sources under it)."""
        options, access, documents = self.settings.retrieval, scope.access, scope.documents
        named = None if access.groups is None else self.named_groups(name)
        if named is not None and access.groups is not None and named <= access.groups:
            access = ALL  # nothing it may not read
        if not (options.exclude_sources or not access.reads_all or documents is not None or scope.sources is not None):
            return None
        sources = self.store.sources_under(name, documents.path) if documents and documents.path else None
        if scope.sources is not None:
            sources = tuple(sorted(scope.sources.intersection(sources) if sources is not None else scope.sources))
        return Where(
            sources=sources,
            not_sources=tuple(options.exclude_sources),
            readers=access.groups,
            documents=documents,
        )

    def search_expansions(
        self, texts: Sequence[ExpandedText], top_k: int | None = None, scope: Scope = EVERYTHING
    ) -> list[RankedList]:
        """The ranked lists of the question's expansions, each searched by the retrievers that
        asked for it, all of a collection's in one round trip."""
        if not texts:
            return []
        return self._search([(text.label, self._vectors(text.text), text.retrievers) for text in texts], top_k, scope)

    def search_embedded(
        self,
        vectors: QueryVectors,
        texts: Sequence[ExpandedText] = (),
        scope: Scope = EVERYTHING,
        top_k: int | None = None,
    ) -> tuple[list[RankedList], list[RankedList]]:
        """A question embedded already, searched by every retriever, and ``texts`` beside it, in
        one round trip per collection: the question's lists, then the texts'. A question searched
        in several scopes (the parts of a question) is embedded once."""
        queries = [(QUESTION, vectors, None), *((t.label, self._vectors(t.text), t.retrievers) for t in texts)]
        lists = self._search(queries, top_k, scope)
        return [ranked for ranked in lists if ranked.query == QUESTION], [
            ranked for ranked in lists if ranked.query != QUESTION
        ]

    def _vectors(self, text: str, sparse: dict[str, Sparse] | None = None) -> QueryVectors:
        """``text`` embedded for every retriever, unchecked (a model's expansion, a question's clause);
        ``sparse``: its BM25 queries, when the caller has them."""
        return QueryVectors(
            text,
            self._embedder_factory().query_embed(text).tolist(),
            self._sparse(text) if sparse is None else sparse,
            self.named.query_embed(self._models, text),
        )

    def _search(
        self,
        queries: Sequence[tuple[str, QueryVectors, Collection[str] | None]],
        top_k: int | None,
        scope: Scope = EVERYTHING,
        wheres: dict[str, Where | None] | None = None,
    ) -> list[RankedList]:
        """``queries``: (label, vectors, the retrievers that search them; None: all). On a server the
        collections are searched concurrently; in-process (Edge) one after another: on 2 cores
        threads measured slightly slower, and 4 times slower beside other load. ``wheres``: each
        collection's filter, when the caller has it already (``wheres``)."""
        wheres = self.wheres(scope) if wheres is None else wheres
        searches = []
        for spec, _ in self.collections:
            planned = [
                (label, retriever, request)
                for label, vectors, wanted in queries
                for retriever, request in zip(spec.retrievers, self._requests(vectors, spec, top_k, wheres[spec.name]))
                if wanted is None or retriever.name in wanted
            ]
            if planned:
                searches.append((spec, planned))
        specs, plans = [spec for spec, _ in searches], [planned for _, planned in searches]
        mapper = self._pool.map if self.store.concurrent_queries else map
        results = list(mapper(self._search_collection, specs, plans, [scope.access] * len(specs)))
        return [
            RankedList(retriever.name, spec.name, hits, label)
            for (spec, planned), per_query in zip(searches, results)
            for (label, retriever, _), hits in zip(planned, per_query)
        ]

    def _search_collection(
        self, spec: CollectionSpec, planned: Sequence[tuple[str, RetrieverSpec, VectorQuery]], access: Access = ALL
    ) -> list[list[Hit]]:
        """One collection's searches, keeping only hits of each file's newest complete version:
        a query during a rewrite sees the old file or the new one, never both (one more lookup).
        A hit the caller may not read is dropped, filter or not: readers changed by another
        process since ``named_groups`` looked are not seen."""
        results = self.store.query(spec.name, [request for _, _, request in planned])
        if not access.reads_all:
            results = [[hit for hit in hits if access.may_read(hit.payload.readers)] for hits in results]
        sources = {hit.payload.source for hits in results for hit in hits}
        current = self.store.current_versions(spec.name, sources)
        return [[hit for hit in hits if current.get(hit.payload.source) == hit.payload.doc_hash] for hits in results]

    def close(self) -> None:
        self._lexical.shutdown()
        self._pool.shutdown()
