"""What an ingest writes beside each document's text: who may read it (``store/access.py``) and
what is known of it (``metadata.py``).

Readers come from the ingest (``--readers``, for every document of the run), else the metadata
sidecar's line of the document, else what the file says of itself (front matter), else the
document's stored version: a new version never widens who reads a document. Metadata fields come
from the sidecar, else the file itself, else the stored version. A document the run leaves unchanged
gets new readers or metadata from the ingest or the sidecar in place, without embedding it again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.settings import Settings
from ..errors import CorpusError
from ..store import Store
from ..store.access import ALL, Access
from ..store.points import METADATA_FIELDS, READERS
from .metadata import DocumentMetadata

#: why a file named like a stored document the ingest's caller may not read is not written
NOT_PERMITTED = "not written: the namespace holds a document of this name that this caller may not read"


@dataclass
class DocumentLabels:
    #: the readers the ingest names for every document, unchanged ones included; None: none named
    given: tuple[str, ...] | None = None
    #: source -> its line of the metadata sidecar
    sidecar: dict[str, DocumentMetadata] = field(default_factory=dict)
    #: what the ingest's caller may read: a stored document it may not read it neither writes over nor prunes
    access: Access = ALL
    #: source -> the readers and metadata its stored version carries, read when a run starts
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the stored documents ``access`` may not read, read when a run starts
    unreadable: frozenset[str] = frozenset()

    def read_stored(self, store: Store, settings: Settings) -> None:
        names = [spec.name for spec in settings.collections if store.manifest(spec.name) is not None]
        self.stored = store.document_labels(names[0]) if names else {}
        access = self.access
        self.unreadable = frozenset(
            source for source, labels in self.stored.items() if not access.may_read(labels.get(READERS) or ())
        )

    def unmatched(self, sources: set[str], strict_in: Path | None = None) -> list[str]:
        """The sidecar's documents that are not among ``sources`` (the folder's files); with
        ``strict_in`` (the folder), any is a CorpusError naming them, before anything is written."""
        unmatched = sorted(set(self.sidecar) - sources)
        if strict_in is not None and unmatched:
            named = ", ".join(unmatched[:3]) + (" ..." if len(unmatched) > 3 else "")
            count = len(unmatched)
            raise CorpusError(
                f"the metadata names {count} document{'s' * (count != 1)} that {strict_in} lacks: {named}"
            )
        return unmatched

    def readers(self, source: str, own: DocumentMetadata | None = None) -> tuple[str, ...]:
        """The readers a point of ``source`` written now carries (``own``: what the file says)."""
        if self.given is not None:
            return self.given
        for said in (self.sidecar.get(source), own):
            if said is not None and said.readers is not None:
                return said.readers
        return tuple(sorted(self.stored.get(source, {}).get(READERS) or ()))

    def metadata(self, source: str, own: DocumentMetadata | None = None) -> dict[str, str]:
        """The metadata fields a point of ``source`` written now carries: the sidecar's over what
        the file says of itself (``own``), or over the stored version's for a file not read again."""
        stored = self.stored.get(source, {})
        base = own.payload() if own is not None else {k: v for k, v in stored.items() if k in METADATA_FIELDS}
        said = self.sidecar.get(source)
        return base | (said.payload() if said is not None else {})

    def payload(self, source: str) -> dict[str, Any]:
        """Readers and every metadata field (None where unknown): what a stored point is set to."""
        return {READERS: list(self.readers(source))} | dict.fromkeys(METADATA_FIELDS) | self.metadata(source)

    def changed(self, stored_hashes: dict[str, set[str]], sources: dict[str, str]) -> list[str]:
        """The documents the run left unchanged (``sources``: source -> this run's content hash,
        against a collection's ``stored_hashes``) whose readers or metadata it changes."""
        if self.given is None and not self.sidecar:
            return []
        return [
            source
            for source, digest in sorted(sources.items())
            if stored_hashes.get(source) == {digest} and self._differs(source)
        ]

    def _differs(self, source: str) -> bool:
        stored = self.stored.get(source, {})
        before = {READERS: sorted(stored.get(READERS) or ())} | {name: stored.get(name) for name in METADATA_FIELDS}
        return before != self.payload(source)
