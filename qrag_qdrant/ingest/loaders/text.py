"""Plain text and Markdown: UTF-8, decoded block by block so a file of any size streams."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path

from . import LoaderError, TextBlock

BINARY_SNIFF_BYTES = 8192
BLOCK_BYTES = 1 << 20


class TextLoader:
    suffixes = (".txt", ".md")
    separator = ""  # the blocks are consecutive pieces of one stream

    def sniff(self, head: bytes) -> bool:
        return False  # text has no signature: only the suffixes claim it

    def blocks(self, path: Path) -> Iterator[TextBlock]:
        decoder, offset = codecs.getincrementaldecoder("utf-8-sig")(), 0
        with path.open("rb") as file:
            while data := file.read(BLOCK_BYTES):
                if offset == 0 and b"\0" in data[:BINARY_SNIFF_BYTES]:
                    raise LoaderError("binary file")
                try:
                    yield TextBlock(decoder.decode(data))
                except UnicodeDecodeError as exc:
                    raise LoaderError(f"not valid UTF-8 (byte {offset + exc.start})") from None
                offset += len(data)
        try:
            yield TextBlock(decoder.decode(b"", final=True))
        except UnicodeDecodeError:
            raise LoaderError(f"not valid UTF-8 (truncated at byte {offset})") from None
