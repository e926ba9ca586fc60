"""Ingest jobs: an ingest runs in the background while queries go on, and its progress and final
report can be read by the team that started it.

Jobs of one namespace run one at a time, in the order they came: a second ingest waits,
``queued``, as a second CLI ingest waits for the store. Other namespaces' jobs do not wait for it.
Jobs live as long as the service; the index they wrote is what lasts.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from ..ingest import IngestReport

JobState = Literal["queued", "running", "done", "failed"]
#: runs an ingest of ``path`` into ``namespace`` with the ingest's options (prune, rebuild),
#: reporting progress to the job
IngestRun = Callable[[str, Path, "JobProgress", dict[str, bool]], IngestReport]
#: an exception as the service's error ``(code, message)``
ErrorOf = Callable[[BaseException], tuple[str, str]]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


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
    files_done: int = 0
    chunks_queued: int = 0
    chunks_embedded: int = 0
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None

    def view(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class JobProgress:
    """The ingest's progress, written into its job for ``GET /v1/jobs/{id}``."""

    def __init__(self, job: IngestJob):
        self.job = job

    def files_found(self, total: int) -> None:
        self.job.files_total = total

    def file_done(self) -> None:
        self.job.files_done += 1

    def chunks_queued(self, count: int) -> None:
        self.job.chunks_queued += count

    def chunks_embedded(self, count: int) -> None:
        self.job.chunks_embedded += count


class IngestJobs:
    def __init__(self, run: IngestRun, error_of: ErrorOf):
        self._run, self._error_of = run, error_of
        self._lock = threading.Lock()
        self._jobs: dict[str, IngestJob] = {}
        self._queues: dict[str, ThreadPoolExecutor] = {}

    def submit(self, namespace: str, path: Path, source: str, remove_after: bool,
               options: dict[str, bool] | None = None) -> IngestJob:
        """Queue an ingest of ``path``; ``remove_after``: the path is an upload folder of this job's."""
        job = IngestJob(uuid.uuid4().hex, namespace, source)
        with self._lock:
            self._jobs[job.id] = job
            queue = self._queues.setdefault(
                namespace, ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"qrag-ingest-{namespace}"))
        queue.submit(self._execute, job, path, remove_after, options or {})
        return job

    def get(self, job_id: str, namespace: str) -> IngestJob | None:
        """The job, if it belongs to ``namespace``: other teams' jobs do not exist for a caller."""
        job = self._jobs.get(job_id)
        return job if job is not None and job.namespace == namespace else None

    def _execute(self, job: IngestJob, path: Path, remove_after: bool, options: dict[str, bool]) -> None:
        job.state, job.started = "running", now()
        try:
            report = self._run(job.namespace, path, JobProgress(job), options)
            job.report = dataclasses.asdict(report)
            if remove_after:  # the upload folder is the server's business, and gone
                job.report["root"] = "(uploaded files)"
            job.state = "done"
        except Exception as exc:  # noqa: BLE001 - the job reports it; the service goes on
            code, message = self._error_of(exc)
            job.error, job.state = {"code": code, "message": message}, "failed"
        finally:
            job.finished = now()
            if remove_after:
                shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        """Let running and queued jobs finish (SIGTERM drains them too)."""
        with self._lock:
            queues, self._queues = list(self._queues.values()), {}
        for queue in queues:
            queue.shutdown(wait=True)
