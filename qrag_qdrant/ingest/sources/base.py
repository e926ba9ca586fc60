"""A source: where a namespace's documents live and keep changing (a folder, a git repository),
named once and synced again and again (``sync.py``), so the namespace follows its edits and
deletions without anyone remembering ``ingest --prune``.

Kinds of source are plug-ins like loaders: the entry points of ``qrag_qdrant.sources`` name a
class, built with a ``SourceSpec`` (which refuses options it does not take), whose ``snapshot``
brings the source's current files into a local folder. The built-ins (``folder``,
``git``) register the same way a user's package would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from ...config.sources import SourceSpec
from ...errors import SourceError
from ...plugins import Registry
from ..metadata import DocumentMetadata


@dataclass
class Snapshot:
    """A source's current files, in the local folder ``root``. ``revision``: what version of the
    source it is (a commit), if the source has versions; ``metadata``: path under ``root`` -> what
    the source knows of that document (a file's last commit and its author, a page's URL);
    ``failures``: what could not be fetched this time (a page's URL) -> why, the rest synced."""

    root: Path
    revision: str | None = None
    metadata: dict[str, DocumentMetadata] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)


class SourceKind(Protocol):
    """A kind of source, built from its spec (a ``SourceError`` for options it cannot use)."""

    def __init__(self, spec: SourceSpec) -> None: ...

    def snapshot(self, workdir: Path) -> Snapshot:
        """The source's current files; ``workdir``: a folder of this source's own that outlives
        the run (a repository's clone), or raise ``SourceError``."""
        ...


def watched_folder(kind: SourceKind) -> tuple[Path, bool] | None:
    """The folder a kind of source can be watched by (its ``watched()``: the folder, and whether
    to poll it), or None for a kind that cannot be (a repository, a site: synced on a schedule)."""
    watched = getattr(kind, "watched", None)
    return watched() if callable(watched) else None


SOURCES: Registry[type[SourceKind]] = Registry("qrag_qdrant.sources", "source kind", setting="sources kind")


def options_of(spec: SourceSpec, model: type[BaseModel]) -> Any:
    """``spec.options`` read as ``model``'s fields: one line naming what it refuses."""
    try:
        return model.model_validate(spec.options)
    except ValidationError as exc:
        said = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'options'}: {e['msg']}" for e in exc.errors())
        raise SourceError(f"source {spec.name!r} ({spec.kind}): {said}") from None
