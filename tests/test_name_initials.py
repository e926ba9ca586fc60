"""A name written in full is searched by its initials too: news writes "SBF" for Sam Bankman-Fried."""

from __future__ import annotations

import pytest

from qrag_qdrant.text.terms import initials, terms, with_name_initials


@pytest.mark.parametrize(
    ("text", "searched"),
    [
        ("What did Sam Bankman-Fried offer Trump?", "What did Sam Bankman-Fried offer Trump? SBF"),
        ("Did Sam Bankman-Fried plead guilty?", "Did Sam Bankman-Fried plead guilty? SBF"),  # "Did" is no initial
        ("Who reported it, The Wall Street Journal?", "Who reported it, The Wall Street Journal? WSJ"),
        ("What does the Department of Human Resources pay?", "What does the Department of Human Resources pay? DHR"),
        ("How long is the warranty in the European Union?", "How long is the warranty in the European Union?"),
        ("Where is New York?", "Where is New York?"),  # two letters stand for too much
        ("What did Bankman-Fried say?", "What did Bankman-Fried say?"),
        ("how long is the warranty?", "how long is the warranty?"),
    ],
)
def test_a_name_of_three_capitalised_words_or_more_adds_its_initials(text, searched):
    assert with_name_initials(text) == searched


def test_initials_split_hyphenated_names_and_leave_out_an_opening_the():
    assert initials("Sam Bankman-Fried") == "sbf"
    assert initials("The Wall Street Journal") == "wsj"
    assert initials("Department of Human Resources") == "dhr"


def test_the_initials_are_a_term_bm25_matches():
    assert terms("SBF allegedly tried to buy off Trump") & terms(with_name_initials("What did Sam Bankman-Fried do?"))
    assert not terms("SBF allegedly tried to buy off Trump") & terms("What did Sam Bankman-Fried do?")
