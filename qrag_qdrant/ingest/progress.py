"""What a long ingest reports as it goes, to whoever shows it: the CLI's bars or lines, a
service job's record, or nobody; and what it reports when it is done."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from .corpus import SkippedFile


class IngestProgress(Protocol):
    """What an ingest reports as it goes: the files found, each file as it is read or skipped
    (with why), and the chunks queued for and done by the embedder."""

    def files_found(self, total: int) -> None: ...
    def file_read(self, source: str) -> None: ...
    def file_skipped(self, skipped: SkippedFile) -> None: ...
    def chunks_queued(self, count: int) -> None: ...
    def chunks_embedded(self, count: int) -> None: ...


class NoProgress:
    def files_found(self, total: int) -> None: ...
    def file_read(self, source: str) -> None: ...
    def file_skipped(self, skipped: SkippedFile) -> None: ...
    def chunks_queued(self, count: int) -> None: ...
    def chunks_embedded(self, count: int) -> None: ...


@dataclass
class IngestReport:
    root: str
    documents: int = 0
    unchanged: int = 0
    embedded_chunks: int = 0
    chunks: dict[str, int] = field(default_factory=dict)
    pruned_sources: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)
    #: the metadata sidecar's documents that the folder lacks (a typo in a path, a file moved)
    unmatched_metadata: list[str] = field(default_factory=list)
    #: alias -> the collection it serves after this run
    collections: dict[str, str] = field(default_factory=dict)
    rebuilt: bool = False
    #: collections dropped: the ones a rebuild replaced, and a crashed rebuild's leftovers
    dropped: list[str] = field(default_factory=list)
    seconds: float = 0.0
