"""The supported mark reads what a user would read: each case is a small corpus of its own, asked
through the answer path users get (``QuorumRAG.answer``), with a backend that writes a given
answer, so what is tested is the mark, not a model. A right answer is marked supported; a wrong one,
or one whose question the corpus does not answer, is not."""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import BackendDefaults, register_backend
from qrag_qdrant.generation.checks.sentence import coverage

ROOMS = """# Room C310: laser lab

Everyone entering room C310 must wear laser safety glasses rated OD 7 at 1064 nm.

The lab holds at most six people at once, and the door stays locked when the laser is on.

# Room C204: seminar room

Room C204 seats at most 40 people, and the projector is booked through the front desk.
"""
TRIAL = """# Home trial and warranty

During the 30-day home trial, a faulty unit is replaced with a new one at no cost to the customer.

Returns after the trial are refunded minus a restocking fee of 15 percent of the price.

In the EU the warranty lasts two years from the day of delivery.
"""
TRAINS = """# Trains to the airport

The first train leaves the central station at 05:10.

The trip from the central station to the airport takes 22 minutes.
"""
#: the question -> what the model writes
WRITES: dict[str, str] = {}


class Writes(BackendDefaults):
    """A model that writes the answer ``WRITES`` gives for the question."""

    def __init__(self, settings):
        pass

    def stream(self, question, passages, result):
        yield WRITES[question]


@pytest.fixture(scope="module")
def rag(tmp_path_factory, embedder):
    register_backend("writes", Writes)
    root = tmp_path_factory.mktemp("marks")
    for name, text in (("rooms.md", ROOMS), ("trial.md", TRIAL), ("trains.md", TRAINS)):
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(text)
    settings = load_settings(store=root / "store", generation={"backend": "writes"})
    with QuorumRAG(settings, embedder=embedder) as opened:
        opened.ingest(root / "corpus")
        yield opened


def marked(rag, question: str, written: str):
    WRITES[question] = written
    return rag.answer(question)


def test_a_citation_of_a_paragraph_inside_the_one_passage_shown_is_read_as_that_passage(rag):
    """The model, shown one passage of several paragraphs, numbered the paragraphs: [2] can only
    mean the passage it was shown."""
    answer = marked(rag, "What happens to a faulty unit during the home trial?", "replaced with a new one [2]")
    assert [p.citation for p in answer.passages] == [1]
    assert answer.mark == "supported", answer.mark_reason
    assert answer.answer == "replaced with a new one [1]"
    assert "one passage was shown, so it is read as [1]" in answer.warnings[0]


def test_a_question_verb_is_not_required_in_the_sentence(rag):
    answer = marked(rag, "What happens to a faulty unit during the home trial?", "replaced with a new one [1]")
    assert answer.mark == "supported", answer.mark_reason
    wrong = marked(rag, "What happens to a faulty unit during the home trial?", "a restocking fee [1]")
    assert wrong.mark != "supported"


@pytest.mark.parametrize(
    ("question", "written"),
    [
        ("What safety glasses are required in the laser lab?", "laser safety glasses rated OD 7 at 1064 nm [1]"),
        ("What is the maximum number of people in room C204?", "40 [1]"),
    ],
)
def test_a_heading_is_not_a_rival_value(rag, question, written):
    """'# Room C310: laser lab' names what follows it; its number answers no question."""
    answer = marked(rag, question, written)
    assert answer.mark == "supported", answer.mark_reason


def test_a_rival_sentence_still_makes_a_sibling_value_ambiguous(rag):
    answer = marked(rag, "How many people may be in room C204 at once?", "six [1]")
    assert answer.mark != "supported"


def test_an_abbreviation_matches_its_expansion_both_ways():
    weights = {"warranty": 1.0, "eu": 1.0}
    assert coverage("In the European Union the warranty lasts two years.", weights) == (1.0, ())
    spelled = {"warranty": 1.0, "european": 0.5, "union": 0.5}
    assert coverage("In the EU the warranty lasts two years.", spelled) == (1.0, ())
    assert coverage("In the US the warranty lasts one year.", weights)[1] == ("eu",)  # another one's initials
    assert coverage("The Department of Human Resources decides.", {"hr": 1.0}) == (1.0, ())
