"""Plain text and Markdown: UTF-8, decoded block by block so a file of any size streams. A
Markdown file's YAML front matter (between ``---`` lines at its start) is its metadata, not its
text."""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import LoaderError, TextBlock

BINARY_SNIFF_BYTES = 8192
BLOCK_BYTES = 1 << 20
#: front matter: YAML between a first line ``---`` and the next ``---`` line, in the first 64 KB
FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
FRONT_MATTER_BYTES = 64 << 10


def front_matter(path: Path) -> re.Match[str] | None:
    if path.suffix.lower() != ".md":
        return None
    with path.open("rb") as file:
        head = file.read(FRONT_MATTER_BYTES).decode("utf-8-sig", errors="replace")
    return FRONT_MATTER.match(head)


class TextLoader:
    suffixes = (".txt", ".md")
    separator = ""  # the blocks are consecutive pieces of one stream

    def sniff(self, head: bytes) -> bool:
        return False  # text has no signature: only the suffixes claim it

    def metadata(self, path: Path) -> dict[str, Any]:
        found = front_matter(path)
        if found is None:
            return {}
        import yaml

        try:
            fields = yaml.safe_load(found.group(1))
        except yaml.YAMLError:
            raise LoaderError("front matter is not valid YAML") from None
        return fields if isinstance(fields, dict) else {}

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        decoder, offset = codecs.getincrementaldecoder("utf-8-sig")(), 0
        matter = front_matter(path)
        with path.open("rb") as file:
            while data := file.read(BLOCK_BYTES):
                if offset == 0 and b"\0" in data[:BINARY_SNIFF_BYTES]:
                    raise LoaderError("binary file")
                try:
                    text = decoder.decode(data)
                    if offset == 0 and matter is not None:  # the same characters the match read
                        text = text[matter.end() :]
                    yield TextBlock(text)
                except UnicodeDecodeError as exc:
                    raise LoaderError(f"not valid UTF-8 (byte {offset + exc.start})") from None
                offset += len(data)
        try:
            yield TextBlock(decoder.decode(b"", final=True))
        except UnicodeDecodeError:
            raise LoaderError(f"not valid UTF-8 (truncated at byte {offset})") from None
