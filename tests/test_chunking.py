import random
import re
import tracemalloc

import pytest

from qrag_qdrant.ingest.chunking import chunk_words, iter_chunks
from qrag_qdrant.text.words import WORD, word_bounds


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize(
    ("n", "size", "overlap", "expected"),
    [
        (0, 4, 2, []),
        (1, 4, 2, [(0, 1)]),
        (4, 4, 2, [(0, 4)]),
        (5, 4, 2, [(0, 4), (2, 5)]),
        (6, 4, 2, [(0, 4), (2, 6)]),
        (7, 4, 2, [(0, 4), (2, 6), (4, 7)]),
        (10, 5, 0, [(0, 5), (5, 10)]),
        (120, 100, 50, [(0, 100), (50, 120)]),
    ],
)
def test_windows_move_by_stride_and_end_at_the_last_word(n, size, overlap, expected):
    chunks = chunk_words(words(n), size, overlap)
    assert [(c.word_start, c.word_end) for c in chunks] == expected
    assert [c.index for c in chunks] == list(range(len(expected)))


def test_character_spans_give_back_the_exact_text():
    text = "  Alpha beta\r\n\tgamma  delta\n\nepsilon zeta. "
    for chunk in chunk_words(text, 3, 1):
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip()
    assert [c.text for c in chunk_words(text, 3, 1)] == [
        "Alpha beta\r\n\tgamma",
        "gamma  delta\n\nepsilon",
        "epsilon zeta.",
    ]


def test_unicode_words_and_whitespace():
    text = "Ça\u00a0va — naïve café 東京 emoji🙂 end"
    chunks = chunk_words(text, 2, 0)
    assert all(text[c.start : c.end] == c.text for c in chunks)
    # U+00A0 (no-break space) separates words as any whitespace does
    assert chunks[0].text == "Ça\u00a0va"
    assert sum(c.word_end - c.word_start for c in chunks) == 8


def test_overlap_must_be_below_size():
    with pytest.raises(ValueError):
        chunk_words("a b c", 2, 2)


def reference_windows(text: str, size: int, overlap: int) -> list[tuple[int, int, int, int]]:
    """The definition, on the whole text at once."""
    words = [m.span() for m in re.finditer(r"\S+", text)]
    windows, start = [], 0
    while start < len(words):
        end = min(start + size, len(words))
        windows.append((start, end, words[start][0], words[end - 1][1]))
        if end == len(words):
            break
        start += size - overlap
    return windows


def test_streamed_blocks_give_the_same_chunks_wherever_the_text_is_cut():
    rng = random.Random(1)
    for _ in range(1000):
        tokens = ["".join(rng.choice("abé") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(0, 60))]
        separators = [rng.choice([" ", "  ", "\n", "\r\n", "\t "]) for _ in range(len(tokens) + 1)]
        text = separators[0] + "".join(t + s for t, s in zip(tokens, separators[1:]))
        size = rng.randint(1, 8)
        overlap = rng.randint(0, size - 1)
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 6))))
        blocks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
        chunks = list(iter_chunks(blocks, size, overlap))
        assert [(c.word_start, c.word_end, c.start, c.end) for c in chunks] == reference_windows(text, size, overlap)
        assert all(text[c.start : c.end] == c.text for c in chunks)
        assert [c.index for c in chunks] == list(range(len(chunks)))


@pytest.mark.slow
def test_a_large_text_streams_in_bounded_memory():
    block = " ".join(f"{i:030d}" for i in range(10_000)) + " "  # 310 KB
    tracemalloc.start()
    count = sum(1 for _ in iter_chunks((block for _ in range(40)), 200, 100))  # 12.4 MB of text in all
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 40 * 10_000 // 100 - 1
    assert peak < 40 * len(block) / 3  # what one block holds, not what the file holds


def test_word_bounds_are_the_words_the_regex_finds_in_any_text():
    rng = random.Random(0)
    alphabet = "ab c\n\t\r\x0b\x0c\x1c\x85\u00a0\u2003\u2028\u3000\u3001\u200bé世.\U0001f600"
    texts = [
        "",
        " ",
        "one",
        "  two  words ",
        *("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(2000)),
    ]
    for text in texts:
        expected = [list(match.span()) for match in WORD.finditer(text)]
        assert word_bounds(text).tolist() == expected, repr(text)
