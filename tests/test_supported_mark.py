"""The supported mark as a user meets it, through the query path with the Ollama stand-in writing
the model's rewrites and answers: a follow-up whose rewrite carries over a word the user replaced,
a follow-up rewritten with the wrong subject, a right answer to a question with a common word no
document uses, and a sibling's value copied for an absent fact. Only public names are imported."""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG, load_settings

from .ollama_standin import ollama_standin

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

#: a small company's documents: travel, parental leave, the IT handbook, the canteen, vacation
FJORD = {
    "travel.md": "# Travel\n\n## Per diem\n\nDomestic travel within Norway: the per diem is NOK 550 per day. "
    "International travel: the per diem is NOK 800 per day. Fjordline needs no receipts for the per diem.",
    "parental-leave.md": "# Parental leave\n\nThe primary carer gets 16 weeks of paid parental leave. The "
    "secondary carer gets 4 weeks of unpaid parental leave. Leave is requested in Fjordline's HR portal.",
    "it-handbook.md": "# IT handbook\n\n## Passwords\n\nTo reset your password, phone the service desk on "
    "extension 4417. Fjordline passwords must have at least 12 characters and are never sent by email.",
    "canteen.md": "# Canteen\n\nLunch in the Fjordline canteen costs NOK 75 and is served from 11:00 to 13:00 "
    "on weekdays. The canteen closes for the summer in July.",
    "vacation.md": "# Vacation\n\nFjordline employees get 25 days of paid vacation per year. Vacation days are "
    "requested two weeks ahead in the HR portal.",
}
PER_DIEM = "What is the per diem for international travel?"
WITHIN_NORWAY = "And within Norway?"
#: what a small model made of it: the earlier question's "international" carried over
CARRIED = "What is the per diem for international travel within Norway?"


@pytest.fixture
def fjord(ingest_documents, embedder):
    store = ingest_documents(FJORD)

    def ask(question, tokens, history=(), rewrites=None, **generation):
        with ollama_standin(tokens=tokens, rewrites=rewrites or {}) as ollama:
            settings = load_settings(
                store=store,
                ollama={"host": ollama.host},
                generation={"backend": "ollama", **generation},
                retrieval={"min_confidence": 0.0},  # every question reaches the model: the checks are measured
            )
            with QuorumRAG(settings, embedder=embedder) as rag:
                return rag.answer(question, history=list(history))

    return ask


def turns(*pairs):
    return [
        turn
        for question, answer in pairs
        for turn in ({"role": "user", "content": question}, {"role": "assistant", "content": answer})
    ]


def supported(answer) -> bool:
    return not answer.abstained and bool(answer.claims) and all(claim.supported for claim in answer.claims)


def test_a_follow_up_is_searched_with_the_users_modifier_not_the_one_it_replaced(fjord):
    """ "And within Norway?" was searched as "... international travel within Norway?", answered
    NOK 800 from the international sentence, and marked supported."""
    history = turns((PER_DIEM, "NOK 800 per day [1]"))
    first = fjord(PER_DIEM, ["NOK 800 per day ", "[1]"])
    assert supported(first)  # the first question's answer stands
    follow_up = fjord(WITHIN_NORWAY, ["NOK 800 per day ", "[1]"], history, {WITHIN_NORWAY: CARRIED})
    assert follow_up.searched_for != CARRIED and "international" not in follow_up.searched_for.lower()
    assert "norway" in follow_up.searched_for.lower()
    assert not supported(follow_up), follow_up.claims  # the sibling's value is not shown as supported
    assert follow_up.mark in ("ambiguous", "not supported")
    right = fjord(WITHIN_NORWAY, ["NOK 550 per day ", "[1]"], history, {WITHIN_NORWAY: CARRIED})
    assert supported(right) and right.mark == "supported"
    assert "Domestic travel within Norway" in right.mark_reason  # the sentence it rests on


def test_a_follow_up_rewritten_with_an_older_subject_is_searched_with_the_last_one(fjord):
    """After "And for the secondary one?", "Is it paid?" was searched as "... the primary carer?"."""
    history = turns(
        ("How many weeks of parental leave does the primary carer get?", "16 weeks [1]"),
        ("And for the secondary one?", "4 weeks [1]"),
    )
    wrong = "Is the parental leave of the primary carer paid?"
    asked = fjord("Is it paid?", ["unpaid ", "[1]"], history, {"Is it paid?": wrong})
    assert "secondary" in asked.searched_for and "primary" not in asked.searched_for


def test_a_common_word_no_document_uses_does_not_block_a_right_answer(fjord):
    """ "Which extension do I call to reset my password?" got the right "4417 [1]", marked
    unsupported because no document holds the word "call"."""
    answer = fjord("Which extension do I call to reset my password?", ["4417 ", "[1]"])
    assert supported(answer) and answer.mark == "supported"
    assert "extension 4417" in answer.claims[0].sentence


def test_a_siblings_value_for_an_absent_fact_is_not_shown_as_supported(fjord):
    """No document says anything of sick days: the vacation figure, copied, is grounded and wrong."""
    sick = fjord("How many sick days do Fjordline employees get?", ["25 days ", "[1]"])
    assert not supported(sick) and sick.mark == "not supported"
    assert "sick" in sick.claims[0].missing_terms and "sick" in sick.mark_reason
    vacation = fjord("How many vacation days do Fjordline employees get?", ["25 days ", "[1]"])
    assert supported(vacation)


def test_the_passage_holding_a_rival_value_makes_the_answer_ambiguous_with_both_sentences(fjord):
    """Asked about domestic travel, the model answers from the international sentence beside it."""
    answer = fjord("What is the per diem for domestic travel within Norway?", ["NOK 800 per day ", "[1]"])
    (claim,) = answer.claims
    assert answer.mark == "ambiguous" and claim.unsupported == "ambiguous"
    assert "International travel" in claim.sentence and "Domestic travel within Norway" in claim.rival
    assert claim.rival in answer.mark_reason
