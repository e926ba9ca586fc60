"""What is shown as supported: readings of the same prompt and what most of them say
(``generation.samples``), and the question's key words the answer's sentence lacks
(``generation.min_coverage``), through the query path with the Ollama stand-in."""

from __future__ import annotations

import threading

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation.checks.agreement import DECLINED, Reading, agreeing, read_again, same_answer
from qrag_qdrant.generation.checks.sentence import coverage
from qrag_qdrant.results import Answer, Passage

from .ollama_standin import ollama_standin

#: a small company's documents: none of them says anything about sick days
ZENTRIX = {
    "vacation.md": "# Vacation\n\nZentrix Labs employees get 27 days of paid vacation per year. Vacation days "
    "are requested two weeks ahead in the HR portal, and unused vacation days carry over until March 31.",
    "expenses.md": "# Expenses\n\nZentrix Labs reimburses travel expenses within 30 days. Keep every receipt "
    "and file it in the finance portal; meals abroad are covered up to 60 euros a day.",
    "oncall.md": "# On-call\n\nThe on-call rotation at Zentrix Labs changes every Monday at 10:00. An engineer "
    "on call is paid a weekly allowance and a day off after a night incident.",
    "onboarding.md": "# Onboarding\n\nNew Zentrix Labs employees receive a laptop and a badge on their first "
    "day, and meet their buddy, who shows them the office and the team's tools.",
}
SICK = "How many sick days do Zentrix Labs employees get?"
VACATION = "How many vacation days do Zentrix Labs employees get?"


@pytest.fixture
def zentrix(ingest_documents, embedder):
    store = ingest_documents(ZENTRIX)

    def ask(question: str, tokens: list[str], readings: list[list[str]] | None = None, **generation) -> Answer:
        with ollama_standin(tokens=tokens, samples=readings) as ollama:
            settings = load_settings(
                store=store,
                ollama={"host": ollama.host},
                generation={"backend": "ollama", **generation},
                retrieval={
                    "min_confidence": 0.0
                },  # the gate is not what this measures: every question reaches the model
            )
            with QuorumRAG(settings, embedder=embedder) as rag:
                answer = rag.answer(question)
            ask.requests = ollama.requests  # what the last question sent
            return answer

    return ask


@pytest.mark.slow
def test_sick_days_from_the_vacation_passage_are_not_shown_as_supported(zentrix):
    """The model copies the vacation figure: grounded, on the topic, and cited. "sick", the
    question's one distinguishing word, is in no document."""
    sick = zentrix(SICK, ["27 days ", "[1]"])
    assert not sick.abstained and sick.claims[0].grounded and sick.claims[0].relevance >= 0.3
    assert sick.claims[0].missing_terms[0] == "sick"
    assert (sick.claims[0].supported, sick.claims[0].unsupported) == (False, "off the question")
    assert sick.mark == "not supported" and 'does not mention "sick"' in sick.mark_reason
    vacation = zentrix(VACATION, ["27 days ", "[1]"])
    assert vacation.claims[0].coverage >= 0.9 and vacation.claims[0].supported
    unchecked = zentrix(SICK, ["27 days ", "[1]"], min_coverage=0.0)
    assert unchecked.claims[0].supported  # without the check: a clean, cited, wrong answer
    assert sick.claims[0].relevance == unchecked.claims[0].relevance  # the same answer, the same other checks


@pytest.mark.slow
def test_readings_of_the_prompt_say_how_many_agree_with_the_answer(zentrix):
    greedy = ["27 days ", "[1]"]
    samples = [["the 27 days [1]"], ["two weeks [1]"], ["27 days of paid vacation [1]"], ["27 days [1]"]]
    answer = zentrix(VACATION, greedy, samples, samples=4)
    assert answer.agreement is not None
    assert (answer.agreement.readings, answer.agreement.agreeing, answer.agreement.share) == (5, 4, 0.8)
    assert answer.agreement.answers == ["27 days", "the 27 days", "two weeks", "27 days of paid vacation", "27 days"]
    assert answer.short_answer == "27 days" and answer.claims[0].supported  # min_agreement 0: not checked
    sampled = [r for r in zentrix.requests if (r.get("options") or {}).get("temperature")]
    assert [r["options"]["seed"] for r in sampled] == [1, 2, 3, 4]
    assert len({str(r["messages"]) for r in sampled}) == 1  # the same prompt every time

    # a number (how many days asks for one) from the sentence on requests, its other checks off: the readings disagree
    outvoted = zentrix(
        VACATION,
        ["two weeks [1]"],
        [["27 days [1]"], ["27 days [1]"]],
        samples=2,
        min_agreement=0.5,
        rivals=False,
        min_coverage=0.0,
        min_relevance=0.0,
    )
    assert outvoted.short_answer == "two weeks"  # the greedy answer is shown, whatever the others say
    assert outvoted.agreement.share == pytest.approx(0.3333)
    assert (outvoted.claims[0].supported, outvoted.claims[0].unsupported) == (False, "disputed")
    assert any("readings" in warning and "min_agreement" in warning for warning in outvoted.warnings)

    declining = zentrix(VACATION, greedy, [["Not in the documents."], ["not in the documents"]], samples=2)
    assert declining.agreement.answers == ["27 days", "(declined)", "(declined)"]
    assert declining.agreement.agreeing == 1

    declined = zentrix(VACATION, ["Not in the documents."], [["not in the documents"], ["27 days [1]"]], samples=2)
    assert declined.abstained and declined.abstain_reason == "model_declined"
    assert declined.agreement.agreeing == 2  # a decline agrees with a decline


def test_a_typo_of_a_sentences_word_is_no_missing_key_word():
    weights = {"counil": 1.0, "members": 0.5, "sick": 0.5}
    share, missing = coverage("The City Council has 60 members.", weights)
    assert missing == ("sick",) and share == 0.75


@pytest.mark.parametrize(
    ("one", "other", "same"),
    [
        ("denver broncos", "denver broncos", True),
        ("denver broncos", "broncos", True),  # one holds the other, as whole words
        ("1883", "18", False),
        ("carolina panthers", "denver broncos", False),
        (DECLINED, "denver broncos", False),
        (DECLINED, DECLINED, True),
        ("", "", True),
        ("", "denver", False),
    ],
)
def test_which_answers_are_the_same(one, other, same):
    assert same_answer(one, other) is same


def test_a_reading_agrees_when_its_short_answer_is_the_same():
    readings = [Reading("The Paris [1]"), Reading("paris [2]"), Reading("Lyon [1]"), Reading("Paris, France [1]")]
    assert agreeing(readings) == 3
    assert agreeing([Reading("Not in the documents."), Reading("Paris [1]"), Reading("not in the documents")]) == 2


def test_a_backend_that_cannot_read_again_says_so():
    answer = Answer(question="q", abstained=False, retrievers=1, clusters=[], timings_ms={}, answer="x [1]")
    passages = [Passage(citation=1, source="a.txt", start=0, end=1, text="x")]
    read_again(answer, object(), passages, load_settings(generation={"samples": 3}).generation, threading.Event())
    assert answer.agreement is None and "cannot read the prompt again" in answer.warnings[0]
