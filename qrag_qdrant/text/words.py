"""A text's words as whitespace separates them, with their character offsets: chunks are cut on
these words and a context window is counted and widened in them."""

from __future__ import annotations

import re

import numpy as np

WORD = re.compile(r"\S+")
#: whether each code point up to U+3000 is one ``\s`` matches (str.isspace), and one more, False,
#: that every code point above stands for: none of them is a space
IS_SPACE = np.array([chr(code).isspace() for code in range(0x3001)] + [False])


def word_bounds(text: str) -> np.ndarray:
    """``[[start, end], ...]`` of every ``WORD`` in ``text``, as ``WORD.finditer`` gives them, found
    with array operations (a table lookup per character: 13 against 41 µs for the regex on a
    SciFact abstract): a query's context windows split a few thousand words this way."""
    characters = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    in_word = np.zeros(len(characters) + 2, dtype=np.int8)
    in_word[1:-1] = ~IS_SPACE[np.minimum(characters, len(IS_SPACE) - 1)]
    edges = np.diff(in_word)
    return np.stack([np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)], axis=1)
