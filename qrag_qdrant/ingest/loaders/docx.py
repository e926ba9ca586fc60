"""Word (.docx) through python-docx. Paragraphs styled "Heading N" or "Title" make the heading
path; a zip that would inflate far beyond its size (a zip bomb) is refused before parsing. The
metadata is the core properties' title, author and creation time."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import LoaderError, TextBlock, require

#: the most a .docx may inflate to, and the largest inflation ratio over 10 MB
MAX_UNCOMPRESSED = 512 << 20
MAX_RATIO = 100


def check_zip(path: Path) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise LoaderError(f"corrupt DOCX (not a readable zip: {exc})") from None
    inflated = sum(entry.file_size for entry in entries)
    packed = sum(entry.compress_size for entry in entries) or 1
    if inflated > MAX_UNCOMPRESSED or (inflated > 10 << 20 and inflated / packed > MAX_RATIO):
        raise LoaderError(f"refused: a zip bomb ({packed:,} bytes inflate to {inflated:,})")
    if "word/document.xml" not in {entry.filename for entry in entries}:
        raise LoaderError("not a Word document (no word/document.xml)")


def heading_level(style_name: str) -> int | None:
    if style_name == "Title":
        return 0
    name, _, number = style_name.partition(" ")
    return int(number) if name == "Heading" and number.isdigit() else None


class DocxLoader:
    suffixes = (".docx",)

    def sniff(self, head: bytes) -> bool:
        return head.startswith(b"PK\x03\x04") and b"word/" in head

    def metadata(self, path: Path) -> dict[str, Any]:
        docx = require("docx", "docx")
        check_zip(path)
        try:
            properties = docx.Document(str(path)).core_properties
            fields = {"title": properties.title, "author": properties.author, "published_at": properties.created}
        except Exception:  # a damaged file: ``blocks`` says why it cannot be used
            return {}
        return {name: value for name, value in fields.items() if value}

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        docx = require("docx", "docx")
        check_zip(path)
        try:
            document = docx.Document(str(path))
        except Exception as exc:  # python-docx raises many kinds on damaged files
            raise LoaderError(f"corrupt DOCX ({type(exc).__name__})") from None
        path_so_far: list[tuple[int, str]] = []
        found = False
        for paragraph in document.paragraphs:
            text = " ".join(paragraph.text.split())
            if not text:
                continue
            level = heading_level(paragraph.style.name if paragraph.style is not None else "")
            if level is not None:
                path_so_far = [(lvl, title) for lvl, title in path_so_far if lvl < level] + [(level, text)]
            found = True
            yield TextBlock(text, headings=tuple(title for _, title in path_so_far))
        for table in document.tables:
            for row in table.rows:
                text = " | ".join(" ".join(cell.text.split()) for cell in row.cells)
                if text.strip(" |"):
                    found = True
                    yield TextBlock(text, headings=tuple(title for _, title in path_so_far))
        if not found:
            raise LoaderError("no text in the Word document")
