"""The Python API: build from a config, then ``ingest``, ``retrieve`` and ``answer``."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from .config.settings import Settings, load_settings
from .embedding import Embedder, open_embedder
from .errors import StoreError
from .generation import GenerationBackend, loading_note, open_backend
from .generation.answer import answer_from, computed_answer
from .generation.scheduler import GenerationScheduler, QueuedCompleter
from .results import Answer, Evidence
from .retrieval import Coordinator
from .retrieval.conversation import Asked, Turn
from .retrieval.search import Scope
from .store import Store, Where, open_store
from .store.access import Access, checked_groups
from .store.filters import DocumentFilter

if TYPE_CHECKING:  # ingest's modules load when an ingest runs: a query starts sooner
    from .ingest.documents import Documents
    from .ingest.progress import IngestProgress, IngestReport
    from .ingest.sources import Sources
    from .ingest.vectors import AliasSwitch, EmbeddingProgress, RetrieverState, VectorsReport


class CollectionInfo(BaseModel):
    name: str
    namespace: str
    #: the versioned collection the alias ``name`` serves (``name`` itself for an unversioned one)
    collection: str
    points: int
    model: str
    #: the model of each named vector (``dense-<name>``: a model of ``[embeddings]``)
    vectors: dict[str, str] = {}
    size: int
    overlap: int
    retrievers: list[str]


class QuorumRAG:
    """One namespace of one store, with lazily loaded models.

    >>> with QuorumRAG.from_config(store=".qrag") as rag:
    ...     rag.ingest("docs/")
    ...     evidence = rag.retrieve("How does it abstain?")
    """

    def __init__(
        self,
        settings: Settings,
        store: Store | None = None,
        embedder: Embedder | None = None,
        generator: GenerationBackend | None = None,
        on_answer: Callable[[Answer], None] | None = None,
        scheduler: GenerationScheduler | None = None,
    ):
        """``generator``: a backend object to use instead of opening generation.backend;
        ``on_answer``: told of every answer this pipeline finishes (the service counts them);
        ``scheduler``: the queue its answers wait in for the model, shared with other namespaces'."""
        self.settings = settings
        self.store = store or open_store(settings)
        self._embedder = embedder
        self._coordinator: Coordinator | None = None
        self._generator = generator
        self._on_answer = on_answer
        self._scheduler = scheduler

    @classmethod
    def from_config(cls, config_file: Path | None = None, **overrides: Any) -> QuorumRAG:
        return cls(load_settings(config_file, **overrides))

    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = open_embedder(self.settings.embedding, self.settings.embedders)
        return self._embedder

    @property
    def coordinator(self) -> Coordinator:
        if self._coordinator is None:
            self._coordinator = Coordinator(self.settings, self.store, self.embedder, self.completer)
        return self._coordinator

    def pipeline(self, settings: Settings) -> Coordinator:
        """Another pipeline on this store and model, with other settings (``gate calibrate``'s
        held-out documents); the caller closes it."""
        return Coordinator(settings, self.store, self.embedder, self.completer)

    def completer(self) -> object:
        """The backend as retrieval calls it (rewrites, splits, expansions): with a scheduler,
        each prompt waits for the model's turn in this namespace as an answer does."""
        return QueuedCompleter.of(self.generator(), self._scheduler, self.settings.namespace)

    def ingest(
        self,
        path: str | Path,
        prune: bool = False,
        rebuild: bool = False,
        progress: IngestProgress | None = None,
        exclude: Collection[str] = (),
        ingested_by: str | None = None,
        readers: Sequence[str] | None = None,
        metadata: str | Path | None = None,
        follow_links: bool = False,
        as_groups: Iterable[str] | None = None,
        strict: bool = False,
    ) -> IngestReport:
        """``exclude``: sources (paths relative to ``path``) to leave out of the index, e.g. an eval's
        held-out documents; an earlier run's points of them are removed. ``ingested_by``: who
        ingests (a service key's id, "cli"), listed with each document. ``readers``: the groups
        that may read every document of this run (``store/access.py``); None: a document keeps
        the readers it had (or the ones ``metadata`` names), a new one is read by everyone in the
        namespace. ``metadata``: a JSON Lines sidecar of the documents' title, publisher, author,
        date, URL and readers (``ingest/metadata.py``). ``follow_links``: read what links inside
        ``path`` point to outside it (without it they are skipped and reported). ``as_groups``: the
        groups the caller reads as (None: every document); a document it may not read is neither
        written over nor pruned. ``strict``: a ``metadata`` line naming no file of ``path`` is an
        error, before anything is written (else the report lists them)."""
        from .ingest.corpus import Reading
        from .ingest.ingestor import Ingestor
        from .ingest.metadata import read_sidecar

        checked = None if readers is None else checked_groups(readers)
        known = read_sidecar(Path(metadata)) if metadata is not None else None
        try:
            ingestor = Ingestor(
                self.settings, self.store, self.embedder, ingested_by, checked, known, Access.of(as_groups)
            )
            reading = Reading(exclude=exclude, follow_links=follow_links, strict=strict)
            return ingestor.run(Path(path), prune=prune, rebuild=rebuild, progress=progress, reading=reading)
        finally:
            self.index_changed()

    def retrievers(self) -> list[RetrieverState]:
        """The configured retrievers, each with its collection, its model and whether the namespace
        holds its vectors (``ingest/vectors.py``)."""
        from .ingest.vectors import retriever_states

        return retriever_states(self.store, self.settings)

    def change_vectors(self, model: str, adding: bool, progress: EmbeddingProgress | None = None) -> VectorsReport:
        """Add ``model`` (a name in ``[embeddings]``) to the collections whose configured retrievers
        name it, or take it out of those whose retrievers no longer do (``adding`` False), without
        reading a document again: each chunk is embedded from the text its point holds, into a new
        version of its collection that replaces the old one when every collection is done
        (``ingest/vectors.py``)."""
        from .ingest.progress import NoProgress
        from .ingest.vectors import revector

        try:
            return revector(self.store, self.settings, model, adding, progress or NoProgress())
        finally:
            self.index_changed()

    def reembed(self, progress: EmbeddingProgress | None = None, switch: AliasSwitch | None = None) -> VectorsReport:
        """Re-embed the namespace with ``[embedding]``'s model, which it was not built with, from the
        text its points hold (no document read, nothing chunked again), into new versions of its
        collections that replace the old ones when every collection is done: a pipeline with the
        old config answers from the old versions until then (``ingest/vectors.py``). ``switch``:
        what moves the aliases then (a service swaps its pipeline in the same step)."""
        from .ingest.progress import NoProgress
        from .ingest.vectors import reembed

        try:
            return reembed(self.store, self.settings, self.embedder(), progress or NoProgress(), switch)
        finally:
            self.index_changed()

    def documents(self, readers: Iterable[str] | None = None) -> Documents:
        """The namespace's documents: list, show, remove, set who may read one. ``readers``: the
        groups the caller reads as; the documents it may not read are not found (None: all)."""
        from .ingest.documents import Documents

        return Documents(self.settings, self.store, on_change=self.index_changed, access=Access.of(readers))

    def sources(self) -> Sources:
        """The folders and repositories the namespace follows: add, list, sync, remove."""
        from .ingest.sources import Sources

        return Sources(self.settings, self.store, self.embedder, on_change=self.index_changed)

    def index_changed(self, rewarm: bool = True) -> None:
        """The index changed, here or in another process: the collections are checked and counted
        again before the next search (and warmed again, with ``rewarm``, if they were)."""
        if self._coordinator is not None:
            self._coordinator.index_changed(rewarm)

    def retrieve(
        self,
        question: str | Asked,
        history: Iterable[Turn | Mapping[str, Any]] = (),
        readers: Iterable[str] | None = None,
        where: DocumentFilter | Mapping[str, Any] | None = None,
    ) -> Evidence:
        """The quorum evidence for ``question``; after ``history`` (the conversation's earlier
        turns, oldest first, as ``Turn`` or ``{"role", "content"}``) a follow-up is searched as
        the stand-alone question ``asked`` makes of it (``retrieval.conversation``). ``readers``:
        the groups the caller reads as: only the documents they may read are searched (None:
        every document; ``[]``: the documents everyone in the namespace may read). ``where``: only
        documents its filter passes (``DocumentFilter``: ``{"publisher": "TechCrunch", "after":
        "2023-10-01"}``); one no document passes raises NoDocumentPasses."""
        scope = Scope(Access.of(readers), DocumentFilter.of(dict(where) if isinstance(where, Mapping) else where))
        if history:
            question = self.asked(question if isinstance(question, str) else question.question, history)
        return self.coordinator.retrieve(question, scope)

    def asked(self, question: str, history: Iterable[Turn | Mapping[str, Any]] = ()) -> Asked:
        """What a question is searched as after ``history``: itself, or its stand-alone rewrite
        (one model call, for a follow-up that points back). A bad question or history raises
        QuestionError."""
        return self.coordinator.conversation.asked(question, history)

    def warm(self) -> None:
        """Call once in a process that will answer many questions: the embedded store's files are
        read into the page cache, and kept warm after this process's ingests (docs/scaling.md)."""
        self.coordinator.warm()

    def generator(self) -> GenerationBackend:
        """The configured backend (generation.backend), opened once."""
        if self._generator is None:
            self._generator = open_backend(self.settings)
        return self._generator

    def loading_note(self, evidence: Evidence | None = None) -> str | None:
        """What the next answer (to ``evidence``, where given) waits for before its first token
        ("loading the model (1.1 GB, once)"), to tell the user while they wait; None when nothing
        is to load, or the answer needs no model (a time order the documents' dates give)."""
        if self._generator is not None or (evidence is not None and computed_answer(evidence, self.settings)):
            return None
        return loading_note(self.settings)

    def answer(
        self,
        question: str,
        on_token: Callable[[str], None] | None = None,
        evidence: Evidence | None = None,
        cancelled: threading.Event | None = None,
        on_queued: Callable[[int], None] | None = None,
        history: Iterable[Turn | Mapping[str, Any]] = (),
        readers: Iterable[str] | None = None,
        where: DocumentFilter | Mapping[str, Any] | None = None,
    ) -> Answer:
        """Generate from the quorum evidence, then check the answer's citations and claims;
        abstain without calling the model when the evidence is missing or too weak.

        A generation failure does not raise: the evidence is returned with ``error`` set, and
        ``complete`` is false when the stream broke after part of the answer arrived. With a
        scheduler, ``on_queued`` is told the answer's place while it waits for the model, and a
        full queue raises ``QueueFull``. ``history``, ``readers`` and ``where``: as for ``retrieve``; the
        answer is written to the stand-alone question. ``evidence`` given, it is answered as it is:
        the caller retrieved it as the reader it is.
        """
        scheduler, namespace = self._scheduler, self.settings.namespace
        turn = (lambda left: scheduler.turn(namespace, left, on_queued)) if scheduler is not None else None
        evidence = evidence or self.retrieve(question, history, readers, where)
        answer = answer_from(evidence, self.generator, self.settings, on_token, cancelled, turn)
        if self._on_answer is not None:
            self._on_answer(answer)
        return answer

    def collections(self, all_namespaces: bool = False, readers: Iterable[str] | None = None) -> list[CollectionInfo]:
        """What readers of this namespace (or, for an admin, of every namespace) see. ``readers``:
        the groups the caller reads as; its points are counted (None: every point)."""
        from .store.tokens import is_collection_scoped

        key = self.settings.qdrant.api_key
        if (
            all_namespaces
            and self.settings.qdrant.url
            and is_collection_scoped(key.get_secret_value() if key else None)
        ):
            raise StoreError(
                "listing every namespace needs the server's API key: this token reaches only the collections it names"
            )
        by_name = {spec.name: spec for spec in self.settings.collections}
        access = Access.of(readers)
        infos = []
        served = self.store.list_collections(None if all_namespaces else self.settings.namespace)
        if not all_namespaces:  # a namespace token may not list aliases: try each configured one too
            served |= {spec.name: spec.name for spec in self.settings.collections if spec.name not in served}
        for name, collection in served.items():
            manifest = self.store.manifest(collection)
            if manifest is None:  # not there, or dropped since it was listed
                continue
            spec = by_name.get(name)
            infos.append(
                CollectionInfo(
                    name=name,
                    namespace=manifest.namespace,
                    collection=collection,
                    points=self.store.count_in_any_namespace(collection)
                    if access.reads_all
                    else self.store.count(collection, Where(readers=access.groups)),
                    model=manifest.model,
                    vectors={name: vector.model for name, vector in manifest.vectors.items()},
                    size=manifest.size,
                    overlap=manifest.overlap,
                    retrievers=[r.name for r in spec.retrievers] if spec else [],
                )
            )
        return infos

    def close(self, keep_store: bool = False) -> None:
        """``keep_store``: the store is another pipeline's too (the one that replaced this one)."""
        if self._coordinator is not None:
            self._coordinator.close()
        if not keep_store:
            self.store.close()

    def __enter__(self) -> QuorumRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
