"""Ingest jobs: an ingest runs in the background while queries go on, and its progress and final
report can be read by the team that started it.

Jobs of one namespace run one at a time, in the order they came: a second ingest waits,
``queued``, as a second CLI ingest waits for the store. Other namespaces' jobs do not wait for it.

Each job's record is written to ``<store>/.jobs/<id>.json`` whenever its state changes, so a
restarted service still answers ``GET /v1/jobs/{id}``. A job the last run left queued or
running reads ``failed`` with the code ``interrupted``: sending the ingest again resumes it, as
a second CLI run does (unchanged files are not embedded again). On shutdown, jobs get
``service.drain_seconds`` to finish; then queued ones are not started and a running one stops
at its next file, each recorded as interrupted.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from ..ingest.corpus import SkippedFile
from ..ingest.progress import IngestReport
from ..store.files import write_atomically

log = logging.getLogger(__name__)

JobState = Literal["queued", "running", "done", "failed"]
#: runs an ingest of ``path`` into ``namespace`` with the ingest's options (prune, rebuild, ingested_by),
#: reporting progress to the job
IngestRun = Callable[[str, Path, "JobProgress", dict[str, Any]], IngestReport]
#: a job's work, given its progress: the report its record shows
JobWork = Callable[["JobProgress"], dict[str, Any]]
#: an exception as the service's error ``(code, message)``
ErrorOf = Callable[[BaseException], tuple[str, str]]
INTERRUPTED = {
    "code": "interrupted",
    "message": "the service stopped before this job finished; send the same "
    "ingest again to resume it (unchanged files are not embedded again)",
}


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class JobInterrupted(BaseException):
    """Raised into a running ingest at its next progress step when the service stops: like Ctrl-C
    in the CLI, it leaves the store consistent."""


#: what a key that may not see server paths reads instead of one
SERVER_FOLDER = "(a folder on the server)"


@dataclass
class IngestJob:
    """One ingest and what is known of it so far."""

    id: str
    namespace: str
    #: what was ingested: the uploaded files' names, or the server-side path
    source: str
    state: JobState = "queued"
    created: str = field(default_factory=now)
    started: str | None = None
    finished: str | None = None
    files_total: int = 0
    #: files read so far, skipped ones included (``files_skipped`` of them)
    files_done: int = 0
    files_skipped: int = 0
    chunks_queued: int = 0
    chunks_embedded: int = 0
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    #: the ingested path is a folder on the server (an admin's ingest), not a job's own uploads
    server_path: str | None = None
    #: the key that started it: only that key, and a caller reading every document, finds it
    submitted_by: str | None = None

    def view(self, shows_paths: bool = True) -> dict[str, Any]:
        """The record; without ``shows_paths`` (any key but an admin's), no path on the server: an
        admin's ingest of a server folder reads as such, and its path is cut from the report and error."""
        record = dataclasses.asdict(self)
        hidden = self.server_path
        if shows_paths or hidden is None:
            return record
        record |= {"source": SERVER_FOLDER, "server_path": None}
        if record["report"] is not None:
            record["report"] = {**record["report"], "root": SERVER_FOLDER}
        if record["error"] is not None:
            record["error"] = {**record["error"], "message": record["error"]["message"].replace(hidden, SERVER_FOLDER)}
        return record


class JobProgress:
    """The ingest's progress, written into its job for ``GET /v1/jobs/{id}``; once ``stop`` is
    set, the next step raises ``JobInterrupted``."""

    def __init__(self, job: IngestJob, stop: threading.Event):
        self.job, self.stop = job, stop

    def _step(self) -> None:
        if self.stop.is_set():
            raise JobInterrupted

    def files_found(self, total: int) -> None:
        self._step()
        self.job.files_total = total

    def file_read(self, source: str) -> None:
        self._step()
        self.job.files_done += 1

    def file_skipped(self, skipped: SkippedFile) -> None:
        self.file_read(skipped.source)
        self.job.files_skipped += 1

    def chunks_queued(self, count: int) -> None:
        self._step()
        self.job.chunks_queued += count

    def chunks_embedded(self, count: int) -> None:
        self._step()
        self.job.chunks_embedded += count


class JobRecords:
    """Jobs' records on disk, one JSON file each, replaced whole on every write."""

    def __init__(self, folder: Path):
        self.folder = folder

    def remove(self, job_id: str) -> None:
        (self.folder / f"{job_id}.json").unlink(missing_ok=True)

    def write(self, job: IngestJob) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_atomically(self.folder / f"{job.id}.json", json.dumps(job.view()))

    def read_all(self) -> list[IngestJob]:
        """The records the last runs left; one that cannot be read is skipped."""
        jobs = []
        for path in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                jobs.append(IngestJob(**json.loads(path.read_text())))
            except (OSError, ValueError, TypeError):
                continue
        return jobs


def lower_priority(niceness: int) -> None:
    """Lower the calling thread's CPU priority by ``niceness`` (Linux keeps a nice value per
    thread, and the threads it starts inherit it: the ingest's writer and onnxruntime's). Where a
    job's thread shares the cores with a team's questions, the questions win; where the cores are
    idle, the job takes them. Elsewhere nothing changes: on another system the id of a thread is
    no process's, and a nice value is the whole process's."""
    if niceness and sys.platform.startswith("linux"):
        try:
            thread = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + niceness))
        except OSError as exc:
            log.warning("ingest jobs run at the questions' CPU priority: %s", exc)


class IngestJobs:
    """The service's ingest jobs, one queue per namespace. Finished jobs are forgotten, record and
    all, past ``kept`` of them or ``kept_days`` old: a service that runs for months holds a bounded
    number, however many jobs its teams start."""

    def __init__(
        self,
        run: IngestRun,
        error_of: ErrorOf,
        records: JobRecords,
        kept: int = 1000,
        kept_days: float = 7.0,
        niceness: int = 0,
    ):
        self._run, self._error_of, self._records = run, error_of, records
        self.kept, self.kept_days = kept, kept_days
        #: how far below the questions' the jobs' threads' CPU priority is (``lower_priority``)
        self.niceness = niceness
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._jobs: dict[str, IngestJob] = {}
        self._queues: dict[str, ThreadPoolExecutor] = {}
        #: job id -> its future and what hands its uploads back
        self._pending: dict[str, tuple[Future[None], Callable[[], None] | None]] = {}

    def restore(self) -> int:
        """Load the jobs earlier runs recorded; the ones they left unfinished become interrupted."""
        restored = self._records.read_all()
        for job in restored:
            if job.state in ("queued", "running"):
                self._finish(job, "failed", dict(INTERRUPTED))
            self._jobs[job.id] = job
        self.prune()
        return len(self._jobs)

    def prune(self, at: datetime | None = None) -> list[str]:
        """Forget finished jobs older than ``kept_days``, then the oldest past ``kept``; the ids gone."""
        oldest = ((at or datetime.now(UTC)) - timedelta(days=self.kept_days)).isoformat(timespec="milliseconds")
        with self._lock:
            finished = sorted(
                (job for job in self._jobs.values() if job.state in ("done", "failed")),
                key=lambda job: job.finished or job.created,
            )
            over = max(0, len(finished) - self.kept)
            gone = [job.id for n, job in enumerate(finished) if n < over or (job.finished or job.created) < oldest]
            for job_id in gone:
                del self._jobs[job_id]
        for job_id in gone:
            self._records.remove(job_id)
        return gone

    def submit(
        self,
        namespace: str,
        path: Path,
        source: str,
        release: Callable[[Path], None] | None = None,
        options: dict[str, Any] | None = None,
        submitted_by: str | None = None,
    ) -> IngestJob:
        """Queue an ingest of ``path``; ``release``: the path is an upload folder of this job's, handed
        back (removed) when the job ends, whatever happened. Without ``release`` the path is a folder
        on the server, which only an admin's view of the job shows."""
        job = IngestJob(
            uuid.uuid4().hex, namespace, source, server_path=None if release else str(path), submitted_by=submitted_by
        )

        def ingest(progress: JobProgress) -> dict[str, Any]:
            report = dataclasses.asdict(self._run(namespace, path, progress, options or {}))
            if release is not None:  # the upload folder is the server's business, and gone
                report["root"] = "(uploaded files)"
            return report

        return self._queue(job, ingest, (lambda: release(path)) if release is not None else None)

    def submit_work(self, namespace: str, source: str, work: JobWork, submitted_by: str | None = None) -> IngestJob:
        """Queue ``work`` (a source's sync) in the namespace's queue, as an ingest is: its report is
        what it returns."""
        return self._queue(IngestJob(uuid.uuid4().hex, namespace, source, submitted_by=submitted_by), work, None)

    def _queue(self, job: IngestJob, work: JobWork, cleanup: Callable[[], None] | None) -> IngestJob:
        self.prune()
        self._records.write(job)
        with self._lock:
            self._jobs[job.id] = job
            queue = self._queues.get(job.namespace)
            if queue is None:
                queue = self._queues[job.namespace] = ThreadPoolExecutor(
                    max_workers=1,
                    thread_name_prefix=f"qrag-ingest-{job.namespace}",
                    initializer=lower_priority,
                    initargs=(self.niceness,),
                )
            self._pending[job.id] = (queue.submit(self._execute, job, work, cleanup), cleanup)
        return job

    def get(self, job_id: str, namespace: str, key_id: str | None = None) -> IngestJob | None:
        """The job, if it belongs to ``namespace`` and (with ``key_id``) was started by that key:
        other teams' jobs, and another key's (whose files' names may be its secret), do not exist
        for a caller."""
        job = self._jobs.get(job_id)
        if job is None or job.namespace != namespace:
            return None
        return job if key_id is None or job.submitted_by == key_id else None

    def _execute(self, job: IngestJob, work: JobWork, cleanup: Callable[[], None] | None) -> None:
        job.state, job.started = "running", now()
        self._records.write(job)
        try:
            job.report = work(JobProgress(job, self._stop))
            self._finish(job, "done")
        except JobInterrupted:
            self._finish(job, "failed", dict(INTERRUPTED))
        except Exception as exc:
            code, message = self._error_of(exc)
            log.warning("ingest job %s (namespace %s) failed: %s", job.id, job.namespace, code, exc_info=True)
            self._finish(job, "failed", {"code": code, "message": message})
        finally:
            with self._lock:
                self._pending.pop(job.id, None)
            if cleanup is not None:
                cleanup()

    def _finish(self, job: IngestJob, state: JobState, error: dict[str, str] | None = None) -> None:
        job.state, job.error, job.finished = state, error, now()
        self._records.write(job)

    def close(self, drain_seconds: float) -> None:
        """Let running and queued jobs finish for up to ``drain_seconds``; then queued ones are
        not started and a running one stops at its next step, each recorded as interrupted."""
        with self._lock:
            pending = dict(self._pending)
        wait([future for future, _ in pending.values()], timeout=drain_seconds)
        self._stop.set()
        for job_id, (future, cleanup) in pending.items():
            if future.cancel():  # never started
                self._finish(self._jobs[job_id], "failed", dict(INTERRUPTED))
                if cleanup is not None:
                    cleanup()
        with self._lock:
            queues, self._queues = list(self._queues.values()), {}
        for queue in queues:
            queue.shutdown(wait=True)
