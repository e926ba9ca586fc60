"""Finding and decoding the documents to ingest: .txt and .md files, UTF-8, recursively."""

from __future__ import annotations

import codecs
import hashlib
import os
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CorpusError

SUPPORTED_SUFFIXES = (".txt", ".md")
BINARY_SNIFF_BYTES = 8192
BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class Document:
    """A valid UTF-8 file; ``source`` is relative to the ingested root, never absolute.

    The text is not held: ``blocks()`` decodes it again, block by block, so a file of any
    size is read in bounded memory.
    """

    source: str
    path: Path
    content_hash: str

    def blocks(self) -> Iterator[str]:
        decoder = codecs.getincrementaldecoder("utf-8-sig")()
        with self.path.open("rb") as file:
            while data := file.read(BLOCK_BYTES):
                yield decoder.decode(data)
        yield decoder.decode(b"", final=True)


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
        """Valid documents; files that cannot be used are appended to ``skipped``."""
        for path in self.files:
            source = self.source_of(path)
            try:
                digest, reason = _inspect(path)
            except OSError as exc:
                self.skipped.append(SkippedFile(source, f"unreadable: {exc.strerror or exc}"))
                continue
            if reason:
                self.skipped.append(SkippedFile(source, reason))
                continue
            yield Document(source, path, digest)


def _inspect(path: Path) -> tuple[str, str | None]:
    """One streaming pass: the content hash, and why the file cannot be used, if it cannot."""
    digest, decoder = hashlib.sha256(), codecs.getincrementaldecoder("utf-8-sig")()
    blank, offset = True, 0
    with path.open("rb") as file:
        while data := file.read(BLOCK_BYTES):
            if offset == 0 and b"\0" in data[:BINARY_SNIFF_BYTES]:
                return digest.hexdigest(), "binary file"
            digest.update(data)
            try:
                blank = not decoder.decode(data).strip() and blank
            except UnicodeDecodeError as exc:
                return digest.hexdigest(), f"not valid UTF-8 (byte {offset + exc.start})"
            offset += len(data)
    try:
        blank = not decoder.decode(b"", final=True).strip() and blank
    except UnicodeDecodeError:
        return digest.hexdigest(), f"not valid UTF-8 (truncated at byte {offset})"
    return digest.hexdigest(), "empty" if blank else None


def open_corpus(path: Path, exclude: Collection[str] = ()) -> Corpus:
    """A folder (searched recursively) or a single file; an empty result is an error.
    ``exclude`` names sources (paths relative to the folder) to leave out."""
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
        and (Path(folder) / name).relative_to(root).as_posix() not in exclude
    )
    if not files:
        raise CorpusError(f"no {' or '.join(SUPPORTED_SUFFIXES)} files under {path}")
    return Corpus(root=root, files=files)
