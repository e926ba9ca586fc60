"""Word-window chunking with exact character spans back into the source text."""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Chunk:
    """Words ``[word_start, word_end)`` of a document; ``text == source[start:end]``."""

    index: int
    word_start: int
    word_end: int
    start: int
    end: int
    text: str


def chunk_words(text: str, size: int, overlap: int) -> list[Chunk]:
    """Windows of ``size`` words moving by ``size - overlap``.

    The last window ends at the last word; no window lies wholly inside the previous
    one, so a short document is exactly one chunk and an empty one is none.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    words = [match.span() for match in WORD.finditer(text)]
    chunks: list[Chunk] = []
    start_word = 0
    while start_word < len(words):
        end_word = min(start_word + size, len(words))
        start, end = words[start_word][0], words[end_word - 1][1]
        chunks.append(Chunk(len(chunks), start_word, end_word, start, end, text[start:end]))
        if end_word == len(words):
            break
        start_word += size - overlap
    return chunks
