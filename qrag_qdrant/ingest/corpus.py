"""Finding the documents to ingest and extracting their text through the registered loaders.

A file is hashed first and extracted only when the caller still needs its text, so an
unchanged corpus is never parsed. A needed file is extracted once, into a spool (memory for
small documents, a temporary file for large ones), so every chunking reads the same text
without parsing the file again, and a file that cannot be used is skipped with its reason
before any of it reaches the index.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import CorpusError, RequestError
from ..text.locations import HEADING_SEPARATOR, Mark
from .loaders import Loader, LoaderError, configured, loader_for
from .metadata import DocumentMetadata, normalized

BLOCK_BYTES = 1 << 20
#: documents whose text is larger than this spool to a temporary file instead of memory
SPOOL_IN_MEMORY = 4 << 20
#: the reason given for a file no loader reads, followed by its suffix in parentheses
UNSUPPORTED_FORMAT = "unsupported format"
#: the reason given for a file that cannot be read now, followed by why
UNREADABLE = "unreadable"
#: a file written to while it was read: its hash and its text may be of different versions
CHANGED_WHILE_READ = "changed while it was read: kept as it was, read again at the next ingest"
#: between blocks of loaders that give separate paragraphs or pages (text's blocks are one stream)
BLOCK_SEPARATOR = "\n\n"


@dataclass
class Document:
    """A usable file; ``source`` is relative to the ingested root, never absolute.

    ``content_hash`` is over the file's bytes, so an unchanged file is not ingested again.
    ``marks`` say where its pages or headings change in the extracted text (none for text).
    A document the caller did not need is never extracted and has no text (``spool`` is None).
    """

    source: str
    path: Path
    content_hash: str
    marks: tuple[Mark, ...] = ()
    spool: IO[str] | None = field(default=None, repr=False)
    #: what the file says of itself (its loader's ``metadata``); None for a document not extracted
    metadata: DocumentMetadata | None = None

    def blocks(self) -> Iterator[str]:
        assert self.spool is not None, "the document was closed"
        self.spool.seek(0)
        while text := self.spool.read(BLOCK_BYTES):
            yield text

    def close(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None


@dataclass(frozen=True)
class SkippedFile:
    source: str
    reason: str

    @property
    def passing(self) -> bool:
        """Whether the file may read fine next time (unreadable now, written while read): a prune
        keeps the version the namespace holds rather than lose the document to a passing failure."""
        return self.reason == CHANGED_WHILE_READ or self.reason.startswith(UNREADABLE)


#: a file changed this close to when its hash was taken may change again within its clock's tick
#: unseen by its modification time: its hash is not remembered (git's "racy" files)
RACY_SECONDS = 2.0
#: the modification time remembered of a racy file: no file has it, so it is read again
RACY = -1


def changed_lately(status: os.stat_result) -> bool:
    """Whether a file changed within ``RACY_SECONDS`` of now: a hash taken now may miss a change
    still to come within its clock's tick."""
    return time.time_ns() - status.st_mtime_ns <= RACY_SECONDS * 1e9


class FileDigests:
    """Content hashes remembered by each file's size and modification time, so a folder synced
    again reads only the files that changed (a git checkout rewrites only those). A file edited
    to the same size within its clock's tick is hashed again, never taken as unchanged: a hash
    taken within ``RACY_SECONDS`` of the file's change is not remembered."""

    def __init__(self, known: dict[str, tuple[int, int, str]] | None = None):
        #: source -> (size, modification time in ns, sha256), as remembered
        self.known = dict(known or {})
        #: what this run found, to remember for the next (a racy file's time as ``RACY``, which no
        #: file's matches)
        self.found: dict[str, tuple[int, int, str]] = {}
        #: source -> path of the files whose hash was taken within the racy window (``settle``)
        self.racy: dict[str, Path] = {}
        #: the files whose bytes this run read, and how many bytes
        self.read = 0
        self.bytes_read = 0

    def digest(self, source: str, path: Path) -> str:
        status = path.stat()
        known = self.known.get(source)
        if known is not None and known[:2] == (status.st_size, status.st_mtime_ns):
            self.found[source] = known
            return known[2]
        digest = content_hash(path)
        self.read += 1
        self.bytes_read += status.st_size
        racy = changed_lately(status)
        self.found[source] = (status.st_size, RACY if racy else status.st_mtime_ns, digest)
        if racy:
            self.racy[source] = path
        return digest

    def settle(self) -> int:
        """Hash the racy files again once their time is no longer racy (a long sync, a clone
        written just before it): the ones whose bytes are still what was ingested are remembered,
        so the next sync need not read them. How many were."""
        settled = 0
        for source, path in list(self.racy.items()):
            try:
                status = path.stat()
            except OSError:
                continue
            size, _, digest = self.found[source]
            if status.st_size != size or changed_lately(status):
                continue
            if content_hash(path) == digest:
                self.found[source] = (size, status.st_mtime_ns, digest)
                settled += 1
            del self.racy[source]
        return settled


@dataclass(frozen=True)
class Reading:
    """How a folder is read into documents. ``exclude``: sources to leave out (an eval's held-out
    documents; an earlier run's points of them are removed). ``follow_links``: read what links
    inside the folder point to outside it. ``prefix``: what every document's source starts with
    (a synced source's name and "/"), so what a prune removes is only what this folder gave.
    ``digests``: the hashes a sync remembers, so an unchanged file is not read again.
    ``strict``: a metadata line naming no file of the folder is an error, before anything is written."""

    exclude: Collection[str] = ()
    follow_links: bool = False
    prefix: str = ""
    strict: bool = False
    digests: FileDigests | None = field(default=None, compare=False)


@dataclass
class Corpus:
    """The files under one root. Documents are extracted lazily, one at a time."""

    root: Path
    files: list[Path]
    skipped: list[SkippedFile] = field(default_factory=list)
    registered: dict[str, Loader] = field(default_factory=configured)
    #: whether a file may be a link to outside ``root`` (else it is checked again as it is read)
    follow_links: bool = False
    #: what every document's source starts with (``Reading.prefix``)
    prefix: str = ""
    digests: FileDigests | None = None

    def refuse(self, sources: Collection[str], reason: str) -> None:
        """Leave out the files of ``sources``, each skipped with ``reason``."""
        if not sources:
            return
        refused = [path for path in self.files if self.source_of(path) in sources]
        self.files = [path for path in self.files if path not in refused]
        self.skipped += [SkippedFile(self.source_of(path), reason) for path in refused]

    def sources(self) -> set[str]:
        """Every file's source, the skipped ones' included."""
        return {self.source_of(path) for path in self.files} | {skipped.source for skipped in self.skipped}

    def source_of(self, path: Path) -> str:
        return self.prefix + path.relative_to(self.root).as_posix()

    def documents(
        self,
        needs_text: Callable[[str, str], bool] = lambda source, digest: True,
        on_read: Callable[[str], None] = lambda source: None,
        on_skip: Callable[[SkippedFile], None] = lambda skipped: None,
    ) -> Iterator[Document]:
        """Usable documents; files that cannot be used are appended to ``skipped`` and handed to
        ``on_skip``, each read one to ``on_read`` as it is read. Only files for which
        ``needs_text(source, content_hash)`` holds are extracted; the others come without text.
        The caller closes each document when done with it; the links the walk left out are
        handed to ``on_skip`` first."""
        for left_out in list(self.skipped):
            on_skip(left_out)
        for path in self.files:
            source = self.source_of(path)
            if not (self.follow_links or inside(self.root, path)):  # made a link since the walk
                self._skip(SkippedFile(source, LINK_NOT_FOLLOWED), on_skip)
                continue
            try:
                loader = loader_for(path, self.registered)
                if loader is None:
                    raise LoaderError(f"{UNSUPPORTED_FORMAT} ({path.suffix or 'no suffix'})")
                before = path.stat()
                digest = content_hash(path) if self.digests is None else self.digests.digest(source, path)
                document = extract(source, path, loader, digest) if needs_text(source, digest) else None
                if document is not None and not same_file(before, path.stat()):
                    document.close()
                    self._skip(SkippedFile(source, CHANGED_WHILE_READ), on_skip)
                    continue
            except LoaderError as exc:
                self._skip(SkippedFile(source, str(exc)), on_skip)
                continue
            except OSError as exc:
                self._skip(SkippedFile(source, f"{UNREADABLE}: {exc.strerror or exc}"), on_skip)
                continue
            on_read(source)
            yield document or Document(source, path, digest)

    def _skip(self, skipped: SkippedFile, on_skip: Callable[[SkippedFile], None]) -> None:
        self.skipped.append(skipped)
        on_skip(skipped)


def same_file(before: os.stat_result, after: os.stat_result) -> bool:
    return (before.st_size, before.st_mtime_ns, before.st_ino) == (after.st_size, after.st_mtime_ns, after.st_ino)


def content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while data := file.read(BLOCK_BYTES):
            digest.update(data)
    return digest.hexdigest()


def extract(source: str, path: Path, loader: Loader, digest: str) -> Document:
    """The file's text, spooled, with the marks of its pages or headings; LoaderError if unusable."""
    separator = getattr(loader, "separator", BLOCK_SEPARATOR)
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY, mode="w+", encoding="utf-8")  # noqa: SIM115 returned to the caller
    marks: list[Mark] = []
    offset, blank = 0, True
    try:
        for block in loader.blocks(path):
            if not block.text:
                continue
            if offset and separator:
                offset += spool.write(separator)
            heading = HEADING_SEPARATOR.join(block.headings) or None
            if (block.page is not None or heading is not None) and (
                not marks or (marks[-1].page, marks[-1].heading) != (block.page, heading)
            ):
                marks.append(Mark(offset, block.page, heading))
            offset += spool.write(block.text)
            blank = blank and not block.text.strip()
        if blank:
            raise LoaderError("empty")
    except BaseException:
        spool.close()
        raise
    return Document(source, path, digest, tuple(marks), spool, own_metadata(loader, path))


def own_metadata(loader: Loader, path: Path) -> DocumentMetadata | None:
    """What the file says of itself, if its loader reads any; a field it cannot use makes the
    file unusable, with the field named, so nothing wrong is stored quietly."""
    read = getattr(loader, "metadata", None)
    if read is None:
        return None
    try:
        return normalized(read(path))
    except (ValueError, RequestError) as exc:
        raise LoaderError(f"metadata: {exc}") from None


def visible(root: Path, folder: str, name: str) -> bool:
    """Hidden files and folders (.git, .qrag, ...) are not documents."""
    return not any(part.startswith(".") for part in (Path(folder) / name).relative_to(root).parts)


#: the reason given for a link an ingest does not follow
LINK_NOT_FOLLOWED = "a link to outside the folder: not followed (ingest --follow-links follows links)"
LINKED_FOLDER_NOT_FOLLOWED = "a link to a folder: not followed (ingest --follow-links follows links)"


def inside(root: Path, path: Path) -> bool:
    """Whether ``path``, every link on the way resolved, is ``root`` or below it."""
    return path.resolve().is_relative_to(root)


def walk(root: Path, follow_links: bool) -> tuple[list[Path], list[SkippedFile]]:
    """The visible files under ``root`` (resolved), and the links left out with their reasons.

    Without ``follow_links`` nothing outside ``root`` is read: a file is kept only when its path,
    links resolved, stays inside the root, and a link to a folder is not entered. With it, links
    to files and folders anywhere are followed, each folder entered once (a link back up is no
    loop)."""
    files: list[Path] = []
    skipped: list[SkippedFile] = []
    entered: set[Path] = set()
    for folder, folders, names in os.walk(root, followlinks=follow_links):
        here = Path(folder)
        entered.add(here.resolve())
        for name in list(folders):
            path = here / name
            if not visible(root, folder, name):
                folders.remove(name)
            elif path.is_symlink() and not follow_links:
                skipped.append(SkippedFile(path.relative_to(root).as_posix(), LINKED_FOLDER_NOT_FOLLOWED))
            elif path.resolve() in entered:
                folders.remove(name)
        for name in names:
            path = here / name
            if not visible(root, folder, name):
                continue
            if follow_links or inside(root, path):
                files.append(path)
            else:
                skipped.append(SkippedFile(path.relative_to(root).as_posix(), LINK_NOT_FOLLOWED))
    return sorted(files), sorted(skipped, key=lambda s: s.source)


def open_corpus(
    path: Path, reading: Reading = Reading(), loaders: Mapping[str, Mapping[str, Any]] | None = None
) -> Corpus:
    """A folder (searched recursively) or a single file; an empty folder is an error.
    ``reading.exclude`` names sources to leave out. Links inside the folder are followed only with
    ``reading.follow_links``: without it, what a link points to outside the folder is skipped and
    reported, never read (a service ingests with it off). ``loaders``: the loaders' own tables
    (``[loaders.<name>]``)."""
    registered = configured(loaders)
    path = Path(path)
    if not path.exists():
        raise CorpusError(f"path does not exist: {path}")
    if path.is_file():
        return Corpus(
            root=path.parent.resolve(),
            files=[path.resolve()],
            registered=registered,
            follow_links=True,
            prefix=reading.prefix,
            digests=reading.digests,
        )
    root = path.resolve()
    found, skipped = walk(root, reading.follow_links)
    files = [file for file in found if reading.prefix + file.relative_to(root).as_posix() not in reading.exclude]
    if not files and not skipped:
        raise CorpusError(f"no files under {path}")
    skipped = [SkippedFile(reading.prefix + s.source, s.reason) for s in skipped]
    return Corpus(
        root=root,
        files=files,
        skipped=skipped,
        registered=registered,
        follow_links=reading.follow_links,
        prefix=reading.prefix,
        digests=reading.digests,
    )
