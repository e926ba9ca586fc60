"""One warm pipeline per team namespace, opened on first use."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from starlette.exceptions import HTTPException

from ..api import CollectionInfo, QuorumRAG
from ..config.settings import Settings
from ..embedding import Embedder
from ..errors import QragError
from ..generation.scheduler import GenerationScheduler
from ..ingest.documents import DocumentPage
from ..ingest.progress import IngestProgress, IngestReport
from ..ingest.sources import SyncResult
from ..ingest.vectors import EmbeddingProgress
from ..results import Answer, Evidence
from ..retrieval.conversation import Asked
from ..store.filters import DocumentFilter


class Namespaces:
    """One warm QuorumRAG per namespace, opened on first use, sharing one embedder. Each opens
    its own store bound to its namespace, so the store itself refuses other teams' collections.
    Retrievals of a namespace take turns under its lock (the embedded engine is not promised
    to be thread-safe for concurrent searches); an ingest job and answer generation run beside
    them (Edge served 6,218 searches during an ingest without an error)."""

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder,
        on_answer: Callable[[Answer], None] | None = None,
        scheduler: GenerationScheduler | None = None,
        on_retrieved: Callable[[float], None] | None = None,
    ):
        """``on_answer``: every answer finished; ``on_retrieved``: every retrieval's seconds."""
        self.settings, self.embedder, self.on_answer, self.scheduler = settings, embedder, on_answer, scheduler
        self.on_retrieved = on_retrieved
        self._lock = threading.Lock()  # guards the two dicts only, never held while a namespace opens
        self._rags: dict[str, tuple[QuorumRAG, threading.Lock]] = {}
        self._opening: dict[str, threading.Lock] = {}
        #: the index stamps each namespace's pipeline last saw (``stamp``)
        self._stamps: dict[str, tuple[int, ...]] = {}

    def _open(self, namespace: str) -> tuple[QuorumRAG, threading.Lock]:
        """Opening and warming a namespace reads its shards (0.4 s for SciFact's 70k chunks, more for
        a bigger store): only that namespace's first requests wait for it, not other teams'."""
        with self._lock:
            if namespace in self._rags:
                return self._rags[namespace]
            opening = self._opening.setdefault(namespace, threading.Lock())
        with opening:
            with self._lock:
                if namespace in self._rags:  # opened while this request waited
                    return self._rags[namespace]
            rag = QuorumRAG(
                self.settings.model_copy(update={"namespace": namespace}),
                embedder=self.embedder,
                on_answer=self.on_answer,
                scheduler=self.scheduler,
            )
            with contextlib.suppress(QragError):  # a speed-up only: a collection that cannot open says so when queried
                rag.warm()
            with self._lock:
                self._rags[namespace] = (rag, threading.Lock())
                return self._rags[namespace]

    def rag(self, namespace: str) -> QuorumRAG:
        return self._open(namespace)[0]

    @contextlib.contextmanager
    def _locked(self, namespace: str) -> Iterator[QuorumRAG]:
        """The namespace's pipeline under its retrieval lock: the one serving once the lock is held,
        as a model switch (``switch_embedding``) may replace it while a request waits."""
        _, lock = self._open(namespace)
        with lock:
            yield self._open(namespace)[0]

    def reconfigure(self, settings: Settings, embedder: Embedder, namespaces: Iterable[str]) -> list[str]:
        """Namespaces opened from now on get ``settings`` and ``embedder``; ``namespaces`` are opened
        with the ones they have first, to answer until each is switched. The namespaces open whose
        pipeline has another ``[embedding]`` (one whose switch failed among them): those to switch."""
        for namespace in namespaces:
            self._open(namespace)
        with self._lock:
            self.settings, self.embedder = settings, embedder
            return sorted(name for name, (rag, _) in self._rags.items() if rag.settings.embedding != settings.embedding)

    def switch_embedding(
        self, namespace: str, settings: Settings, embedder: Embedder, progress: EmbeddingProgress
    ) -> dict[str, Any]:
        """Re-embed ``namespace`` with ``settings``' ``[embedding]`` model from the text its points hold,
        while its pipeline answers from its old collections; then the aliases move and a pipeline
        of ``settings`` takes over in one step under the namespace's lock, so no request meets the
        new collections with the old model or the old ones with the new. Its report is the job's."""
        old, lock = self._open(namespace)
        new = QuorumRAG(
            settings.model_copy(update={"namespace": namespace}),
            store=old.store,
            embedder=embedder,
            on_answer=self.on_answer,
            scheduler=self.scheduler,
        )

        def switch(targets: dict[str, str]) -> None:
            with lock:
                if targets:
                    old.store.switch_aliases(targets)
                with self._lock:
                    self._rags[namespace] = (new, lock)
                    self._stamps.pop(namespace, None)

        report = new.reembed(progress, switch)
        if not report.changed:  # nothing was built with another model: no alias moves, the pipeline swaps
            switch({})
        old.close(keep_store=True)
        return report.model_dump()

    def asked(self, namespace: str, question: str, history: Iterable[Any] = ()) -> Asked:
        """What the question is searched as after ``history``; a follow-up's rewrite is a model
        call, made outside the namespace's retrieval lock."""
        return self.rag(namespace).asked(question, history)

    def retrieve(
        self,
        namespace: str,
        question: str | Asked,
        readers: Iterable[str] | None = None,
        where: DocumentFilter | None = None,
    ) -> Evidence:
        """``readers``: the groups the caller reads as; ``where``: its filter (``QuorumRAG.retrieve``)."""
        started = time.perf_counter()
        with self._locked(namespace) as rag:
            evidence = rag.retrieve(question, readers=readers, where=where)
        if self.on_retrieved is not None:
            self.on_retrieved(time.perf_counter() - started)
        return evidence

    def ingest(
        self,
        namespace: str,
        path: Path,
        progress: IngestProgress,
        prune: bool = False,
        rebuild: bool = False,
        ingested_by: str | None = None,
        readers: Sequence[str] | None = None,
        as_groups: Sequence[str] | None = None,
    ) -> IngestReport:
        """Outside the retrieval lock: queries go on during an ingest and see the old index until
        each document's new version is complete. Links are never followed out of ``path``; a
        document the key (``as_groups``) may not read is neither written over nor pruned."""
        return self.rag(namespace).ingest(
            path,
            prune=prune,
            rebuild=rebuild,
            progress=progress,
            ingested_by=ingested_by,
            readers=readers,
            as_groups=as_groups,
        )

    def sync(self, namespace: str, name: str, progress: IngestProgress) -> SyncResult:
        """A source's sync, outside the retrieval lock as an ingest is."""
        return self.rag(namespace).sources().sync(name, progress)

    def collections(self, namespace: str, readers: Sequence[str] | None = None) -> list[CollectionInfo]:
        """The namespace's collections, their points counted as ``readers`` read them."""
        with self._locked(namespace) as rag:
            return rag.collections(readers=readers)

    def stamp(self, namespace: str) -> tuple[int, ...]:
        """The index stamps of the namespace's collections: they change with every ingest. A change
        seen here, whoever made it (another service or a CLI on the same Qdrant server), has the
        pipeline check its collections and count them again before its next search: a namespace
        rebuilt with another model under it is refused in one line, never searched with this
        model's vectors, and its gate reads the documents it holds now."""
        with self._locked(namespace) as rag:
            manifests = [rag.store.manifest(spec.name) for spec in rag.settings.collections]
            stamps = tuple(m.indexed if m is not None else -1 for m in manifests)
            if self._stamps.setdefault(namespace, stamps) != stamps:
                rag.index_changed(rewarm=False)  # a query waits for this: the engine warms as it reads
                self._stamps[namespace] = stamps
        return stamps

    def store_reachable(self) -> bool:
        with self._locked(self.settings.namespace) as rag:
            try:
                rag.store.list_collections(self.settings.namespace)
                return True
            except QragError:
                return False

    def close(self) -> None:
        for rag, _ in self._rags.values():
            rag.close()


class Meter(Protocol):
    """How a caller's use is counted: ``charge`` checks the quotas first (an HTTPException over one)."""

    def charge(self, counts: dict[str, int]) -> None: ...

    def count(self, answer: Answer) -> None: ...


class ServiceNamespace:
    """One team's namespace of the running service, as the MCP tools use it."""

    def __init__(
        self,
        spaces: Namespaces,
        namespace: str,
        client_gone: threading.Event | None = None,
        meter: Meter | None = None,
        readers: tuple[str, ...] | None = (),
    ):
        """``client_gone``: set when the caller disconnects; an answer then stops its model.
        ``meter``: counts the caller's use against its quotas, as the HTTP routes do. ``readers``:
        the groups the caller reads as (None: every document)."""
        self.spaces, self.namespace, self.client_gone, self.meter = spaces, namespace, client_gone, meter
        self.readers = readers

    def _charge(self, counts: dict[str, int]) -> None:
        if self.meter is not None:
            try:
                self.meter.charge(counts)
            except HTTPException as refused:  # over a quota: the agent reads the reason
                raise QragError(str(refused.detail)) from None

    def retrieve(self, question: str, history: Iterable[Any] = (), where: dict[str, Any] | None = None) -> Evidence:
        self._charge({"queries": 1})
        asked = self.spaces.asked(self.namespace, question, history)
        return self.spaces.retrieve(self.namespace, asked, self.readers, DocumentFilter.of(where))

    def answer(self, evidence: Evidence, cancelled: threading.Event | None = None) -> Answer:
        if not evidence.abstained:
            self._charge({"answers": 1})
        # over HTTP the call is never cancelled: the client leaving is what stops the model
        stop = self.client_gone if self.client_gone is not None else cancelled
        answer = self.spaces.rag(self.namespace).answer(evidence.question, evidence=evidence, cancelled=stop)
        if self.meter is not None:
            self.meter.count(answer)
        return answer

    def collections(self) -> list[CollectionInfo]:
        return self.spaces.collections(self.namespace, self.readers)

    def documents(self, offset: int, limit: int) -> DocumentPage:
        return self.spaces.rag(self.namespace).documents(self.readers).page(offset, limit)
