"""A namespace's sources: added, listed, synced and removed.

A sync is an ingest of the source's snapshot with a prune scoped to the source's own documents
(named ``<source>/<path>``): what is new or changed is written, what is unchanged costs a look at
its size and time (or a hash), what is gone leaves every collection, so a rename leaves no ghost.
It is as safe to kill as an ingest: the next sync finishes what a killed one left, and the
source's record and remembered hashes are written only after the ingest is done.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from ...config.settings import Settings
from ...config.sources import SourceSpec
from ...embedding import Embedder
from ...errors import CorpusError
from ...store import Store
from ...store.files import write_atomically
from ..corpus import FileDigests, Reading
from ..documents import Documents
from ..ingestor import Ingestor
from ..progress import IngestProgress
from .base import SOURCES
from .register import RecordedSource, SourceRegister, SyncResult

#: in a source's own folder: what its last sync found of each file (size, time, hash)
DIGESTS_FILE = "digests.json"


class Sources:
    """One namespace's sources, on its store."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        embedder: Callable[[], Embedder],
        on_change: Callable[[], None] | None = None,
    ):
        """``on_change``: told after a sync or a removal changed the index."""
        self.settings, self.store, self._embedder, self._on_change = settings, store, embedder, on_change
        self.register = SourceRegister(settings.store, settings.namespace)

    def list(self) -> list[RecordedSource]:
        return list(self.register.read().values())

    def add(self, spec: SourceSpec) -> RecordedSource:
        """Record ``spec``, once its kind has read its options (nothing is synced yet). A location
        that is a local path is recorded whole, so a sync from another folder finds it."""
        if Path(spec.location).expanduser().exists():
            spec = spec.model_copy(update={"location": str(Path(spec.location).expanduser().resolve())})
        SOURCES.get(spec.kind)(spec)
        self.register.add(spec)
        return self.register.get(spec.name)

    def remove(self, name: str, keep_documents: bool = False) -> int:
        """Forget the source and, unless ``keep_documents``, remove its documents. How many went."""
        spec = self.register.get(name).spec
        removed = 0 if keep_documents else self._remove_documents(spec.prefix)
        self.register.forget(name)
        return removed

    def sync(self, name: str, progress: IngestProgress | None = None) -> SyncResult:
        """Bring the namespace to what the source holds now; a failure is recorded, then raised."""
        spec = self.register.get(name).spec
        result = SyncResult(started_at=datetime.now(UTC))
        started = time.perf_counter()
        try:
            result = self._synced(spec, result, progress)
        except Exception as exc:
            result.error = str(exc) or exc.__class__.__name__
            raise
        finally:
            result.seconds = round(time.perf_counter() - started, 3)
            self.register.note(name, result)
            if self._on_change is not None:
                self._on_change()
        return result

    def _synced(self, spec: SourceSpec, result: SyncResult, progress: IngestProgress | None) -> SyncResult:
        workdir = self.register.workdir(spec.name)
        snapshot = SOURCES.get(spec.kind)(spec).snapshot(workdir)
        previous = read_digests(workdir / DIGESTS_FILE)
        digests = FileDigests(previous)
        ingestor = Ingestor(
            self.settings,
            self.store,
            self._embedder,
            ingested_by=f"source:{spec.name}",
            readers=spec.readers,
            metadata={spec.prefix + path: metadata for path, metadata in snapshot.metadata.items()},
        )
        reading = Reading(prefix=spec.prefix, digests=digests)
        try:
            report = ingestor.run(snapshot.root, prune=True, progress=progress, reading=reading)
        except CorpusError:  # no file in it can be read: it holds no document now
            result.removed = self._remove_documents(spec.prefix)
            result.files_read, result.bytes_read = digests.read, digests.bytes_read
            write_digests(workdir / DIGESTS_FILE, {})
            return result
        digests.settle()
        skipped = {s.source: s.reason for s in report.skipped}
        found = {source: known for source, known in digests.found.items() if source not in skipped}
        # a file that failed for now keeps the version the namespace holds, and so its last hash
        found |= {s.source: previous[s.source] for s in report.skipped if s.passing and s.source in previous}
        result.revision = snapshot.revision
        result.added = len(found.keys() - previous.keys())
        result.changed = sum(1 for s, known in found.items() if s in previous and previous[s][2] != known[2])
        result.removed = report.pruned_sources
        result.unchanged = report.unchanged
        result.files_read, result.bytes_read = digests.read, digests.bytes_read
        result.embedded_chunks = report.embedded_chunks
        result.skipped = {**skipped, **snapshot.failures}
        write_digests(workdir / DIGESTS_FILE, found)
        return result

    def _remove_documents(self, prefix: str) -> int:
        return Documents(self.settings, self.store, on_change=self._on_change).remove_under(prefix)


def read_digests(path: Path) -> dict[str, tuple[int, int, str]]:
    """What the last sync found; nothing where it is missing or unreadable (every file is read)."""
    try:
        raw = json.loads(path.read_text())
        return {source: (int(size), int(mtime), str(digest)) for source, (size, mtime, digest) in raw.items()}
    except (OSError, ValueError, TypeError):
        return {}


def write_digests(path: Path, found: dict[str, tuple[int, int, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, json.dumps(found))
