"""PDF through pypdf: pure Python, well kept, and reads objects lazily from an open file. Its
cache of parsed objects is dropped after each page, so a large PDF is extracted page by page
in bounded memory. Each block is one page, so chunks know their pages. The metadata is the
document information's title, author and creation date."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import LoaderError, TextBlock, require

#: pypdf logs what it cannot read ("EOF marker not found") to the user's terminal; the loader's one
#: line per skipped file says it once, so only pypdf's errors pass
logging.getLogger("pypdf").setLevel(logging.ERROR)


class PdfLoader:
    suffixes = (".pdf",)

    def sniff(self, head: bytes) -> bool:
        return head.lstrip()[:5] == b"%PDF-"

    def metadata(self, path: Path) -> dict[str, Any]:
        pypdf = require("pypdf", "pdf")
        try:
            info = pypdf.PdfReader(str(path)).metadata
            if info is None:
                return {}
            fields = {"title": info.title, "author": info.author, "published_at": info.creation_date}
        except Exception:  # damaged or encrypted: ``blocks`` says why the file cannot be used
            return {}
        return {name: value for name, value in fields.items() if value}

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        pypdf = require("pypdf", "pdf")
        with path.open("rb") as file:
            try:
                reader = pypdf.PdfReader(file)
                if reader.is_encrypted and not reader.decrypt(""):
                    raise LoaderError("encrypted PDF (a password is needed to read it)")
                pages = len(reader.pages)
            except LoaderError:
                raise
            except pypdf.errors.FileNotDecryptedError:
                raise LoaderError("encrypted PDF (a password is needed to read it)") from None
            except Exception as exc:  # pypdf raises many kinds on damaged files
                raise LoaderError(f"corrupt or truncated PDF ({type(exc).__name__}: {exc})"[:200]) from None
            found_text = False
            for number in range(pages):
                try:
                    text = reader.pages[number].extract_text() or ""
                except Exception as exc:
                    raise LoaderError(f"corrupt PDF: page {number + 1} cannot be read ({type(exc).__name__})") from None
                found_text |= bool(text.strip())
                reader.resolved_objects.clear()  # the page's streams (images too) are not needed again
                yield TextBlock(text, page=number + 1)
            if not found_text:
                raise LoaderError("no text layer; OCR is not supported")
