"""Who may read each document an ingest writes (``store/access.py``): the readers the ingest
names, or, when it names none, the ones the document's stored version has, so a new version
never widens who reads a document."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config.settings import Settings
from ..store import Store


@dataclass
class IngestReaders:
    #: the readers the ingest names for every document, unchanged ones included; None: none named
    given: tuple[str, ...] | None
    #: source -> the readers its stored version names (the sources that name any), read when a run starts
    stored: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def read_stored(self, store: Store, settings: Settings) -> None:
        names = [spec.name for spec in settings.collections if store.manifest(spec.name) is not None]
        self.stored = store.document_readers(names[0]) if names else {}

    def of(self, source: str) -> tuple[str, ...]:
        """The readers a point of ``source`` written now carries."""
        return self.given if self.given is not None else self.stored.get(source, ())

    def changed(self, stored_hashes: dict[str, set[str]], sources: dict[str, str]) -> list[str]:
        """The documents the run left unchanged (``sources``: source -> this run's content hash,
        against a collection's ``stored_hashes``) that the ingest gives other readers."""
        if self.given is None:
            return []
        return [
            source
            for source, digest in sorted(sources.items())
            if stored_hashes.get(source) == {digest} and self.stored.get(source, ()) != self.given
        ]
