"""Finding and decoding the documents to ingest: .txt and .md files, UTF-8, recursively."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CorpusError

SUPPORTED_SUFFIXES = (".txt", ".md")
BINARY_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class Document:
    """A decoded file; ``source`` is relative to the ingested root, never absolute."""

    source: str
    text: str
    content_hash: str


@dataclass(frozen=True)
class SkippedFile:
    source: str
    reason: str


@dataclass
class Corpus:
    """The files under one root. Documents are read lazily, one at a time."""

    root: Path
    files: list[Path]
    skipped: list[SkippedFile] = field(default_factory=list)

    def source_of(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def documents(self) -> Iterator[Document]:
        """Decoded documents; files that cannot be used are appended to ``skipped``."""
        for path in self.files:
            source = self.source_of(path)
            try:
                data = path.read_bytes()
            except OSError as exc:
                self.skipped.append(SkippedFile(source, f"unreadable: {exc.strerror or exc}"))
                continue
            reason = _unusable(data)
            if reason:
                self.skipped.append(SkippedFile(source, reason))
                continue
            yield Document(source, data.decode("utf-8-sig"), hashlib.sha256(data).hexdigest())


def _unusable(data: bytes) -> str | None:
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return "binary file"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return f"not valid UTF-8 (byte {exc.start})"
    if not text.strip():
        return "empty"
    return None


def open_corpus(path: Path) -> Corpus:
    """A folder (searched recursively) or a single file; an empty result is an error."""
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"path does not exist: {path}")
    if path.is_file():
        if path.suffix.lower() not in SUPPORTED_SUFFIXES:
            raise CorpusError(f"{path} is not a supported file ({', '.join(SUPPORTED_SUFFIXES)})")
        return Corpus(root=path.parent.resolve(), files=[path.resolve()])
    root = path.resolve()
    files = sorted(
        Path(folder) / name
        for folder, _, names in os.walk(root)
        for name in names
        if Path(name).suffix.lower() in SUPPORTED_SUFFIXES
    )
    if not files:
        raise CorpusError(f"no {' or '.join(SUPPORTED_SUFFIXES)} files under {path}")
    return Corpus(root=root, files=files)
