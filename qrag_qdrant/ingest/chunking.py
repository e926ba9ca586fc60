"""Word-window chunking with exact character spans back into the source text."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..text.words import WORD


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
    return list(iter_chunks([text], size, overlap))


def iter_chunks(blocks: Iterable[str], size: int, overlap: int) -> Iterator[Chunk]:
    """Windows of ``size`` words moving by ``size - overlap``, over text that arrives in blocks.

    The last window ends at the last word; no window lies wholly inside the previous one, so
    a short document is exactly one chunk and an empty one is none. Only the current window
    and one block are held, so a file of any size streams in bounded memory.
    """
    if overlap >= size:
        raise ValueError("overlap must be smaller than size")
    stride = size - overlap
    buffer, buffer_start = "", 0  # text from absolute offset buffer_start on
    words: list[tuple[int, int]] = []  # absolute spans of complete words, from word number first_word on
    first_word = next_start = last_end = scanned = 0
    chunk_index = 0

    def window(start_word: int, end_word: int) -> Chunk:
        start, end = words[start_word - first_word][0], words[end_word - 1 - first_word][1]
        return Chunk(chunk_index, start_word, end_word, start, end, buffer[start - buffer_start : end - buffer_start])

    for block in [*blocks, None]:
        at_end = block is None
        buffer += block or ""
        for match in WORD.finditer(buffer, scanned - buffer_start):
            if match.end() == len(buffer) and not at_end:
                break  # the word may go on in the next block
            words.append((buffer_start + match.start(), buffer_start + match.end()))
            scanned = buffer_start + match.end()
        total = first_word + len(words)
        while next_start + size <= total or (at_end and last_end < total):
            end_word = min(next_start + size, total)
            yield window(next_start, end_word)
            chunk_index += 1
            last_end, next_start = end_word, next_start + stride
            if last_end == total and at_end:
                break
        keep = max(0, min(next_start, total) - first_word)  # words before the next window are done
        if keep and keep <= len(words):
            words, first_word = words[keep:], first_word + keep
            cut = (words[0][0] if words else scanned) - buffer_start
            buffer, buffer_start = buffer[cut:], buffer_start + cut
