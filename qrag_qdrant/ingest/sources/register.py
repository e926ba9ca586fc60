"""Where a namespace's sources are recorded, with what each one's last sync did: one JSON file
per namespace in the store's folder (``<store>/.sources/<namespace>.json``), beside the folder
each source keeps for itself (a repository's clone, the hashes of its files). Every write goes
through ``store.files.write_atomically``, so a crash leaves the old record or the new."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ...config.sources import SourceSpec
from ...errors import ConfigError
from ...store.files import write_atomically

#: the folder of every namespace's sources, in the store's folder
SOURCES_FOLDER = ".sources"


class SyncResult(BaseModel):
    """What one sync of a source did, or why it failed."""

    started_at: datetime
    seconds: float = 0.0
    #: the source's version synced (a commit), where it has versions
    revision: str | None = None
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    #: the files whose bytes were read (the others' sizes and times were as the last sync saw them)
    files_read: int = 0
    bytes_read: int = 0
    #: chunks embedded: the new and changed documents', in every collection
    embedded_chunks: int = 0
    #: path -> why it was not used
    skipped: dict[str, str] = Field(default_factory=dict)
    #: why the sync failed; None: it did not
    error: str | None = None


class RecordedSource(BaseModel):
    spec: SourceSpec
    last: SyncResult | None = None
    #: the last sync that did not fail
    last_success: SyncResult | None = None


def namespaces_with_sources(store_folder: Path) -> list[str]:
    """The namespaces that record sources in ``store_folder``."""
    return sorted(path.stem for path in (Path(store_folder) / SOURCES_FOLDER).glob("*.json"))


class SourceRegister:
    """One namespace's sources, in ``<store>/.sources``."""

    def __init__(self, store_folder: Path, namespace: str):
        self.folder = Path(store_folder) / SOURCES_FOLDER
        self.file = self.folder / f"{namespace}.json"
        self.namespace = namespace

    def read(self) -> dict[str, RecordedSource]:
        try:
            raw = json.loads(self.file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the sources of namespace {self.namespace!r} cannot be read: {exc}") from None
        return {name: RecordedSource.model_validate(recorded) for name, recorded in raw.items()}

    def get(self, name: str) -> RecordedSource:
        recorded = self.read().get(name)
        if recorded is None:
            raise ConfigError(f"no source {name!r} in namespace {self.namespace!r} (sources list shows them)")
        return recorded

    def write(self, recorded: dict[str, RecordedSource]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps({name: r.model_dump(mode="json") for name, r in sorted(recorded.items())}, indent=1)
        write_atomically(self.file, text)

    def workdir(self, name: str) -> Path:
        """The folder a source keeps for itself between syncs."""
        return self.folder / self.namespace / name

    def add(self, spec: SourceSpec) -> None:
        recorded = self.read()
        if spec.name in recorded:
            raise ConfigError(f"namespace {self.namespace!r} has a source {spec.name!r} already")
        self.write({**recorded, spec.name: RecordedSource(spec=spec)})

    def declare(self, spec: SourceSpec) -> None:
        """Record ``spec`` as a config declares it: added, or put in place of the recorded one,
        whose syncs' results it keeps."""
        recorded = self.read()
        kept = recorded.get(spec.name)
        recorded[spec.name] = kept.model_copy(update={"spec": spec}) if kept else RecordedSource(spec=spec)
        self.write(recorded)

    def forget(self, name: str) -> None:
        recorded = self.read()
        recorded.pop(name, None)
        self.write(recorded)
        shutil.rmtree(self.workdir(name), ignore_errors=True)

    def note(self, name: str, result: SyncResult) -> None:
        recorded = self.read()
        if (source := recorded.get(name)) is None:  # removed while it synced
            return
        success = source.last_success if result.error is not None else result
        recorded[name] = source.model_copy(update={"last": result, "last_success": success})
        self.write(recorded)
