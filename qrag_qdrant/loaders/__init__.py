"""Document loaders behind one small interface, found by file suffix or by sniffing the bytes.

A loader turns one file into text blocks in reading order, each with where it came from (a
PDF page, an HTML or Word heading path). The built-ins (text, pdf, html, docx) register
exactly as a plug-in does: an entry point in the group ``qrag_qdrant.loaders`` naming a
class with ``suffixes``, ``sniff`` and ``blocks`` (see pyproject.toml). In-process code may
also call ``register_loader``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Protocol

__all__ = ["Loader", "LoaderError", "TextBlock", "loader_for", "loaders", "register_loader", "require"]
ENTRY_POINT_GROUP = "qrag_qdrant.loaders"
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
    #: lower-case suffixes this loader reads, e.g. (".pdf",)
    suffixes: tuple[str, ...]

    def sniff(self, head: bytes) -> bool:
        """Whether the file's first bytes say it is this format (for files without a known suffix)."""

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        """The document's text in reading order; a file that cannot be used raises LoaderError."""


_REGISTRY: dict[str, Loader] = {}


def register_loader(name: str, loader: Loader) -> None:
    _REGISTRY[name] = loader


def loaders() -> dict[str, Loader]:
    """Every registered loader: the entry points' (built-ins included), then in-process ones."""
    found = {point.name: point.load()() for point in entry_points(group=ENTRY_POINT_GROUP)}
    return {**found, **_REGISTRY}


def loader_for(path: Path, registered: dict[str, Loader]) -> Loader | None:
    """The loader for this file: by suffix, else the first whose sniff recognises its bytes."""
    suffix = path.suffix.lower()
    for loader in registered.values():
        if suffix in loader.suffixes:
            return loader
    with path.open("rb") as file:
        head = file.read(SNIFF_BYTES)
    return next((loader for loader in registered.values() if loader.sniff(head)), None)


def require(module: str, extra: str):  # noqa: ANN201 - returns the imported module
    """Import an optional library, or fail this file with the install that fixes it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise LoaderError(f"needs the {extra} extra: pip install 'qrag-qdrant[{extra}]'") from None
