"""What is known of a document beyond its text: its title, publisher, author, publication date,
URL, the version its source holds it at, and who may read it. A loader reads what its format
holds (Markdown front matter, HTML ``<title>`` and ``<meta>``, PDF and Word document properties:
``Loader.metadata``), a synced source what it knows (a git commit, a page's URL), and a sidecar
file given at ingest (``ingest --metadata FILE.jsonl``) says it of any document; the sidecar wins.

The sidecar holds one JSON object per line, naming its document by ``doc`` (or ``path``): the
document's source, as ingest names it (its path under the ingested folder). Field names follow
the common news-metadata layout (MultiHop-RAG's ``corpus-metadata.jsonl`` reads as it is):
``source`` or ``publisher`` is the publisher, ``published_at`` (or ``published``, ``date``) an ISO
8601 date or time. Other fields are ignored. Every chunk of the document carries the metadata
(``ChunkPayload``), so a listing shows it and a search can later filter on it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import date, datetime
from pathlib import Path
from typing import Any

from ..errors import CorpusError, RequestError
from ..store.access import checked_groups
from ..store.filters import utc_time
from ..text.json_lines import BadLine, json_lines

#: the longest value of a text field kept
MAX_FIELD_CHARS = 1000
#: the largest sidecar read
MAX_SIDECAR_BYTES = 64 << 20
#: each field, and the sidecar names it is read from (the first present wins)
NAMES = {
    "title": ("title",),
    "publisher": ("publisher", "source"),
    "author": ("author",),
    "published": ("published_at", "published", "date"),
    "url": ("url",),
    "revision": ("revision",),
}


@dataclass(frozen=True)
class DocumentMetadata:
    title: str | None = None
    publisher: str | None = None
    author: str | None = None
    #: when it was published, ISO 8601 in UTC ("2023-11-27T08:45:59Z")
    published: str | None = None
    url: str | None = None
    #: the version its source holds it at (a git commit, a page's ETag), for a synced source's document
    revision: str | None = None
    #: the groups that may read it (``store/access.py``); None: not said here
    readers: tuple[str, ...] | None = None

    def payload(self) -> dict[str, str]:
        """The fields a chunk's payload stores: the known ones, readers aside (stored on their own)."""
        return {f.name: value for f in fields(self) if f.name != "readers" and (value := getattr(self, f.name))}


def read_sidecar(path: Path) -> dict[str, DocumentMetadata]:
    """source -> its metadata; a line that cannot be used is a one-line CorpusError naming it."""
    found: dict[str, DocumentMetadata] = {}
    try:
        if path.stat().st_size > MAX_SIDECAR_BYTES:
            raise CorpusError(f"metadata file {path} is over {MAX_SIDECAR_BYTES >> 20} MB")
        for number, raw in json_lines(path):
            try:
                source, metadata = entry(raw)
            except (ValueError, RequestError) as exc:
                raise CorpusError(f"metadata file {path.name}, line {number}: {exc}") from None
            if source in found:
                raise CorpusError(f"metadata file {path.name}, line {number}: {source!r} is named twice")
            found[source] = metadata
    except OSError as exc:
        raise CorpusError(f"cannot read metadata file {path}: {exc.__class__.__name__}") from None
    except BadLine as exc:
        raise CorpusError(f"metadata file {exc}") from None
    return found


def entry(raw: dict[str, Any]) -> tuple[str, DocumentMetadata]:
    source = raw.get("doc") or raw.get("path")
    if not isinstance(source, str) or not source.strip():
        raise ValueError('no "doc" naming the document (its path under the ingested folder)')
    return source.strip().replace("\\", "/"), normalized(raw)


def normalized(raw: dict[str, Any]) -> DocumentMetadata:
    """The metadata of a sidecar line or a loader's fields; ValueError or RequestError names a bad one."""
    values: dict[str, Any] = {}
    for name, keys in NAMES.items():
        value = next((raw[key] for key in keys if raw.get(key) is not None), None)
        if value is None:
            continue
        if isinstance(value, datetime | date):  # YAML front matter reads a date as one
            value = value.isoformat()
        if not isinstance(value, str):
            raise ValueError(f"{keys[0]}: a string, not {type(value).__name__}")
        values[name] = published_time(value) if name == "published" else value.strip()[:MAX_FIELD_CHARS] or None
    readers = raw.get("readers")
    if readers is not None:
        if isinstance(readers, str):
            readers = readers.split(",")
        if not isinstance(readers, list) or not all(isinstance(group, str) for group in readers):
            raise ValueError("readers: a list of group names")
        values["readers"] = checked_groups(readers)
    return DocumentMetadata(**values)


def published_time(text: str) -> str:
    try:
        return utc_time(text)
    except ValueError as exc:
        raise ValueError(f"published_at: {exc}") from None
