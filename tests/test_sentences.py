"""One reading of where sentences start and end, shared by the context's windows, the follow-up
readings and the answer checks."""

from __future__ import annotations

import random

from qrag_qdrant.text.sentences import sentence_starts, sentences, unwrapped

HANDBOOK = (
    "# Room C310: laser lab\n"
    "Wear laser safety glasses rated OD 7 at 1064 nm. The door stays locked\n"
    'while the laser runs. He said "Stop." Then he left.\n'
    "8. If the alarm sounds, leave the room.\n"
    "- Badges are checked at the door\n"
)


def test_sentences_end_at_their_marks_and_lines_and_a_wrapped_line_goes_on():
    assert sentences(HANDBOOK) == [
        "# Room C310: laser lab",
        "Wear laser safety glasses rated OD 7 at 1064 nm.",
        "The door stays locked while the laser runs.",  # the wrapped line joined
        'He said "Stop."',  # a closing quote ends the sentence with it
        "Then he left.",
        "8. If the alarm sounds, leave the room.",  # the list item's number stays with it
        "- Badges are checked at the door",
    ]


def test_a_period_after_an_initial_or_an_abbreviation_or_before_lower_case_ends_no_sentence():
    assert sentences("Lyndon B. Johnson was vice president. He served.") == [
        "Lyndon B. Johnson was vice president.",
        "He served.",
    ]
    assert sentences("Michael E. Mann, Raymond S. Bradley and Malcolm K. Hughes wrote it.") == [
        "Michael E. Mann, Raymond S. Bradley and Malcolm K. Hughes wrote it."
    ]
    assert sentences("Allen left St. George's Church. The population was ca. 2 million.") == [
        "Allen left St. George's Church.",
        "The population was ca. 2 million.",
    ]
    government = "It is the U.S. government. See e.g. the list."
    assert sentences(government) == ["It is the U.S. government.", "See e.g. the list."]
    # "I" ends as a numeral as often as it stands for a name
    war = "He fought in World War I. Then he went home."
    assert sentences(war) == ["He fought in World War I.", "Then he went home."]
    # a line break still ends one
    assert sentences("Signed, J.\nB. Smith") == ["Signed, J.", "B. Smith"]


def test_a_number_the_text_ends_with_stands_alone():
    assert sentences("First step done. 9.") == ["First step done.", "9."]
    assert sentences("") == [] and sentences("  \n ") == []


def test_a_window_may_start_after_a_sentences_end_and_a_heading_stays_with_the_sentence_under_it():
    text = 'The river rises in the hills.\n\nFTX\'s collapse\n\nConcerns grew. They said "no." Then it fell'
    starts = sentence_starts(text)
    assert [text[at:].split()[0] for at in starts] == ["FTX's", "They", "Then"]  # not "Concerns": under the heading


def test_each_start_is_where_a_sentence_starts_in_the_text_as_written():
    """The context cuts the text where the checks find sentences (unwrapping keeps every offset)."""
    rng = random.Random(5)
    vocabulary = ["alpha", "beta.", "Gamma!", "delta?", "(eps)", '"zeta."', "eta", "8.", "# Head", "\n", "\n\n", "  "]
    for _ in range(500):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 40)))
        assert len(unwrapped(text)) == len(text)
        firsts = {" ".join(sentence.split()[:1]) for sentence in sentences(text)}
        for start in sentence_starts(text):
            assert " ".join(unwrapped(text)[start:].split()[:1]) in firsts, (text, start)
