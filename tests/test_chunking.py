import pytest

from qrag_qdrant.chunking import chunk_words


def words(n: int) -> str:
    return " ".join(f"w{i}" for i in range(n))


@pytest.mark.parametrize(("n", "size", "overlap", "expected"), [
    (0, 4, 2, []),
    (1, 4, 2, [(0, 1)]),
    (4, 4, 2, [(0, 4)]),
    (5, 4, 2, [(0, 4), (2, 5)]),
    (6, 4, 2, [(0, 4), (2, 6)]),
    (7, 4, 2, [(0, 4), (2, 6), (4, 7)]),
    (10, 5, 0, [(0, 5), (5, 10)]),
    (120, 100, 50, [(0, 100), (50, 120)]),
])
def test_windows_move_by_stride_and_end_at_the_last_word(n, size, overlap, expected):
    chunks = chunk_words(words(n), size, overlap)
    assert [(c.word_start, c.word_end) for c in chunks] == expected
    assert [c.index for c in chunks] == list(range(len(expected)))


def test_character_spans_give_back_the_exact_text():
    text = "  Alpha beta\r\n\tgamma  delta\n\nepsilon zeta. "
    for chunk in chunk_words(text, 3, 1):
        assert text[chunk.start:chunk.end] == chunk.text
        assert chunk.text == chunk.text.strip()
    assert [c.text for c in chunk_words(text, 3, 1)] == ["Alpha beta\r\n\tgamma", "gamma  delta\n\nepsilon",
                                                         "epsilon zeta."]


def test_unicode_words_and_whitespace():
    text = "Ça\u00a0va — naïve café 東京 emoji🙂 end"
    chunks = chunk_words(text, 2, 0)
    assert all(text[c.start:c.end] == c.text for c in chunks)
    # U+00A0 (no-break space) separates words as any whitespace does
    assert chunks[0].text == "Ça\u00a0va"
    assert sum(c.word_end - c.word_start for c in chunks) == 8


def test_overlap_must_be_below_size():
    with pytest.raises(ValueError):
        chunk_words("a b c", 2, 2)
