"""How rare general English finds a word, from the shipped table of wordfreq's figures."""

from __future__ import annotations

import pytest

from qrag_qdrant.text.terms import ZIPF_TABLE, general_rarity, zipf_frequency


@pytest.mark.parametrize(
    ("word", "zipf"),
    [
        ("the", 7.73),  # wordfreq 3.1.1's own figures, read from the table
        ("per", 5.45),
        ("café", 3.75),
        ("don't", 6.2),
        ("follow-up", 5.12),  # the pieces combined: 1/f = 1/f("follow") + 1/f("up")
        ("co-op", 4.35),
        ("diem", 0.0),  # under 3.5: not in the table, fully rare
        ("c310", 0.0),
        ("30-second", 0.0),  # a digit: a specific detail, fully rare
        ("", 0.0),
    ],
)
def test_a_words_zipf_frequency_is_wordfreqs_for_the_words_that_matter(word, zipf):
    assert zipf_frequency(word) == zipf


def test_rarity_runs_from_common_to_rare_and_the_table_names_its_source_and_licence():
    assert general_rarity("the") == 0.0 and general_rarity("diem") == 1.0
    assert 0.0 < general_rarity("password") < general_rarity("diem")
    assert general_rarity("call") < general_rarity("sick")
    header = [line for line in ZIPF_TABLE.read_text(encoding="utf-8").splitlines() if line.startswith("#")]
    assert any("wordfreq" in line for line in header) and any("CC BY-SA 4.0" in line for line in header)
