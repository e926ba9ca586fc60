"""The service's sources: each synced as a job in its namespace's queue, on its schedule
(``every`` seconds after its last sync began), when its folder changes (``watch``) or when an
admin key asks.

The schedule is one thread that wakes when the next source is due (at least once a minute, to
see sources added while it slept) and queues the due ones' syncs; a sync runs like an ingest
job, in the namespace's own queue, so other namespaces' jobs and every team's queries go on.
Before a sync reads anything, its location is checked against what the operator allows: a
folder, or a repository on the server's disk, inside the namespace's ``service.ingest_roots``; a
URL starting with one of ``service.source_urls``. A refusal is recorded as the sync's failure.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..config.service import ServiceSettings
from ..config.settings import Settings
from ..config.sources import SourceSpec
from ..errors import SourceError
from ..ingest.sources.base import SOURCES, watched_folder
from ..ingest.sources.register import RecordedSource, SourceRegister, SyncResult, namespaces_with_sources
from ..ingest.sources.watch import changed_sources
from .errors import error_of
from .jobs import IngestJob, IngestJobs, JobProgress
from .metrics import ServiceMetrics
from .usage import UsageLedger

log = logging.getLogger(__name__)

#: the longest the schedule sleeps: a source added meanwhile waits no longer than this
LONGEST_SLEEP = 60.0
#: a location that is a URL (``scheme://``) or git's short form for SSH (``user@host:path``)
URL_LIKE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.IGNORECASE)


def refusal(service: ServiceSettings, namespace: str, spec: SourceSpec) -> str | None:
    """Why the service may not read ``spec``'s location for ``namespace``; None when it may."""
    if URL_LIKE.match(spec.location):
        if any(spec.location.startswith(allowed) for allowed in service.source_urls):
            return None
        return f"source {spec.name!r}: its URL does not start with one of service.source_urls"
    path = Path(spec.location)
    if path.is_absolute() and service.ingest_root_of(namespace, path) is not None:
        return None
    return f"source {spec.name!r}: its folder is not inside this namespace's service.ingest_roots"


class SourceSchedule:
    """Every namespace's sources in the service's store folder, synced when due."""

    def __init__(
        self,
        settings: Settings,
        jobs: IngestJobs,
        sync: Callable[[str, str, JobProgress], SyncResult],
        usage: UsageLedger | None = None,
        metrics: ServiceMetrics | None = None,
    ):
        """``sync``: syncs a namespace's source (``Namespaces.sync``); ``usage`` counts the bytes read
        and chunks embedded to the namespace; ``metrics`` observe each sync."""
        self.settings, self.jobs, self._sync, self.usage, self.metrics = settings, jobs, sync, usage, metrics
        self.folder = Path(settings.store)
        #: (namespace, source) -> the id of its last sync job
        self._jobs: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: set to make the watch start again over the sources watched now (or stop, with ``_stop``)
        self._watch_stop = threading.Event()
        self._watching: dict[str, tuple[Path, bool]] = {}
        #: set once the watched folders are watched: a change from then on starts a sync
        self.watch_ready = threading.Event()
        self._threads: list[threading.Thread] = []

    def declare(self) -> None:
        """The sources ``service.sources`` declares, recorded in their namespaces (replacing what
        was recorded of the same name, its syncs' results kept)."""
        for declared in self.settings.service.sources:
            SourceRegister(self.folder, declared.namespace).declare(declared.spec())

    def register(self, namespace: str) -> SourceRegister:
        return SourceRegister(self.folder, namespace)

    def sync(self, namespace: str, name: str, submitted_by: str | None = None, after_running: bool = True) -> IngestJob:
        """Queue a sync of the source; one queued already is returned as it is. With a sync running,
        another is queued behind it (a change it may have missed), unless ``after_running`` is
        False (the schedule's own: the running one is that sync)."""
        spec = self.register(namespace).get(name).spec
        with self._lock:
            job_id = self._jobs.get((namespace, name))
            last = self.jobs.get(job_id, namespace) if job_id else None
            if last is not None and (last.state == "queued" or (last.state == "running" and not after_running)):
                return last
            job = self.jobs.submit_work(
                namespace,
                f"sync of source {name!r}",
                lambda progress: self._run(namespace, spec, progress),
                submitted_by,
            )
            self._jobs[(namespace, name)] = job.id
        return job

    def _run(self, namespace: str, spec: SourceSpec, progress: JobProgress) -> dict[str, Any]:
        """One sync, refused where the operator does not allow its location or the namespace's
        ingest quota is spent; counted in the namespace's usage and the service's metrics."""
        if (refused := refusal(self.settings.service, namespace, spec)) is not None:
            self._refused(namespace, spec.name, refused, "source_failed")
            raise SourceError(refused)
        # a sync starts while the namespace's daily ingest quota has bytes left; what it reads counts
        left = self.usage.left(namespace, f"source:{spec.name}", "ingest_bytes") if self.usage else None
        if left is not None and left[0] <= 0:
            self._refused(namespace, spec.name, left[1].detail, "quota_exceeded")
            raise left[1]
        try:
            result = self._sync(namespace, spec.name, progress)
        except Exception as exc:
            recorded = self.register(namespace).read().get(spec.name)
            if recorded is not None and recorded.last is not None:
                self._observe(namespace, spec.name, recorded.last, error_of(exc)[1])
            raise
        self._observe(namespace, spec.name, result)
        if self.usage is not None:
            counts = {"ingest_bytes": result.bytes_read, "ingest_chunks": result.embedded_chunks}
            self.usage.add(namespace, f"source:{spec.name}", counts)
        return result.model_dump(mode="json")

    def _refused(self, namespace: str, name: str, why: str, code: str) -> None:
        """A sync refused before it read anything, recorded as the source's last sync and counted."""
        failed = SyncResult(started_at=datetime.now(UTC), error=why)
        self.register(namespace).note(name, failed)
        self._observe(namespace, name, failed, code)

    def _observe(self, namespace: str, name: str, result: SyncResult, code: str | None = None) -> None:
        if self.metrics is not None:
            self.metrics.observe_sync(namespace, name, result, code)

    def recorded(self) -> list[tuple[str, RecordedSource]]:
        """Every namespace's sources as their registers hold them now: (namespace, source)."""
        return [
            (namespace, recorded)
            for namespace in namespaces_with_sources(self.folder)
            for recorded in self.register(namespace).read().values()
        ]

    def due(
        self, at: datetime, sources: list[tuple[str, RecordedSource]] | None = None
    ) -> tuple[list[tuple[str, str]], float]:
        """The sources due at ``at`` (of ``sources``, else of the registers as they are), and the
        seconds until the next one is (``LONGEST_SLEEP`` at most)."""
        due: list[tuple[str, str]] = []
        wait = LONGEST_SLEEP
        for namespace, recorded in self.recorded() if sources is None else sources:
            every = recorded.spec.every
            if every is None:
                continue
            last = recorded.last.started_at if recorded.last is not None else None
            until = (last + timedelta(seconds=every) - at).total_seconds() if last is not None else 0.0
            if until <= 0:  # synced now: due again ``every`` seconds from now
                due.append((namespace, recorded.spec.name))
            wait = min(wait, until if until > 0 else every)
        return due, wait

    def tick(
        self, at: datetime | None = None, sources: list[tuple[str, RecordedSource]] | None = None
    ) -> tuple[list[IngestJob], float]:
        """Queue every due source's sync (one already queued or running is not queued again); the
        jobs, and the seconds until the next source is due."""
        due, wait = self.due(at or datetime.now(UTC), sources)
        jobs = []
        for namespace, name in due:
            try:
                jobs.append(self.sync(namespace, name, after_running=False))
            except Exception:  # a register that cannot be read: the others still sync
                log.warning("source %s of namespace %s: its sync was not queued", name, namespace, exc_info=True)
        return jobs, wait

    def watched(self, sources: list[tuple[str, RecordedSource]] | None = None) -> dict[str, tuple[Path, bool]]:
        """ "<namespace>/<source>" -> (the folder, whether to poll it) of every source with ``watch``
        whose kind can be watched and whose folder the service may read."""
        found = {}
        for namespace, recorded in self.recorded() if sources is None else sources:
            spec = recorded.spec
            if not spec.watch or refusal(self.settings.service, namespace, spec) is not None:
                continue
            try:
                folder = watched_folder(SOURCES.get(spec.kind)(spec))
            except Exception:  # a kind not installed, options it refuses: its syncs say why
                continue
            if folder is not None:
                found[f"{namespace}/{spec.name}"] = folder
        return found

    def start(self) -> None:
        self.declare()
        self._watching = self.watched()
        for target in (self._loop, self._watch):
            thread = threading.Thread(target=target, name=f"qrag-sources{target.__name__}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _loop(self) -> None:
        wait = 0.0
        while not self._stop.wait(wait):
            try:
                sources = self.recorded()  # each register read once a round
                _, wait = self.tick(sources=sources)
                if (watching := self.watched(sources)) != self._watching:  # added, removed or changed: watch anew
                    self._watching = watching
                    self._watch_stop.set()
            except Exception:
                log.warning("the sources' schedule failed; it tries again shortly", exc_info=True)
                wait = LONGEST_SLEEP
            wait = max(wait, 1.0)

    def _watch(self) -> None:
        """Sync each watched source whose folder changed, watching anew when the set changes."""
        while not self._stop.is_set():
            with self._lock:
                self._watch_stop = stop = threading.Event()
            if self._stop.is_set():
                break
            self.watch_ready.clear()
            watching = self._watching
            try:
                for keys in changed_sources(watching, stop):
                    if not keys:  # watched from now on: what changed before (the service was down) syncs now
                        keys = set(watching)
                        self.watch_ready.set()
                    for key in keys:
                        namespace, name = key.split("/", 1)
                        self.sync(namespace, name)
            except Exception:
                log.warning("watching the sources' folders failed; it starts again", exc_info=True)
                self._stop.wait(LONGEST_SLEEP)

    def close(self) -> None:
        self._stop.set()
        with self._lock:
            self._watch_stop.set()
        for thread in self._threads:
            thread.join()
