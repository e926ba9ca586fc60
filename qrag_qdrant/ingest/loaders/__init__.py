"""Document loaders behind one small interface, found by file suffix or by sniffing the bytes.

A loader turns one file into text blocks in reading order, each with where it came from (a
PDF page, an HTML or Word heading path), and may say what the file holds of its title, author,
date and publisher (an optional ``metadata`` method: ``ingest/metadata.py`` reads its fields).
The built-ins (text, pdf, html, docx) register exactly as a plug-in does: an entry point in the
group ``qrag_qdrant.loaders`` naming a class with ``suffixes``, ``sniff`` and ``blocks`` (see
pyproject.toml), through ``plugins.Registry``; one that declares ``Options`` is made with its own
``[loaders.<name>]`` table. In-process code may also call ``register_loader``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, cast

from ... import plugins

__all__ = ["LOADERS", "Loader", "LoaderError", "TextBlock", "configured", "loader_for", "register_loader", "require"]
SNIFF_BYTES = 2048


@dataclass(frozen=True)
class TextBlock:
    text: str
    #: the 1-based PDF page the text is on
    page: int | None = None
    #: the headings above the text, outermost first, e.g. ("Onboarding", "Accounts")
    headings: tuple[str, ...] = ()


class LoaderError(Exception):
    """Why this file cannot be ingested, in a few words; the rest of the folder goes on."""


class Loader(Protocol):
    """Optionally also ``metadata(path) -> dict``: what the file says of itself, by the metadata
    sidecar's field names (``title``, ``publisher``, ``author``, ``published_at``, ``url``,
    ``readers``), {} when nothing."""

    #: lower-case suffixes this loader reads, e.g. (".pdf",)
    suffixes: tuple[str, ...]

    def sniff(self, head: bytes) -> bool:
        """Whether the file's first bytes say it is this format (for files without a known suffix)."""

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        """The document's text in reading order; a file that cannot be used raises LoaderError."""


#: an entry point names a loader class, made once per corpus (``configured``); in-process code
#: registers an instance
LOADERS: plugins.Registry[Callable[..., Loader] | Loader] = plugins.Registry(
    "qrag_qdrant.loaders", "loader", section="loaders"
)
register_loader = LOADERS.register


def configured(sections: Mapping[str, Mapping[str, Any]] | None = None) -> dict[str, Loader]:
    """Every loader by name: a class made with its own ``[loaders.<name>]`` table where it
    declares ``Options`` (``plugins.Registry.options``), an instance registered in-process as it is."""
    return {
        name: LOADERS.make(name, sections or {}) if isinstance(item, type) else cast(Loader, item)
        for name, item in LOADERS.registered().items()
    }


def loader_for(path: Path, registered: dict[str, Loader]) -> Loader | None:
    """The loader for this file: by suffix, else the first whose sniff recognises its bytes."""
    suffix = path.suffix.lower()
    for loader in registered.values():
        if suffix in loader.suffixes:
            return loader
    with path.open("rb") as file:
        head = file.read(SNIFF_BYTES)
    return next((loader for loader in registered.values() if loader.sniff(head)), None)


def require(module: str, extra: str) -> ModuleType:
    """Import an optional library, or fail this file with the install that fixes it."""
    return plugins.require(module, extra, error=LoaderError)
