"""A yes-or-no question that compares a value each of its two parts states is answered by reading
the two amounts from the passages shown and comparing them, through the answer path users get,
without the model; the checks read the computed verdict as they read the model's, and a question
whose amounts cannot be read or compared goes to the model."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import register_backend
from qrag_qdrant.generation.compared_values import Amount, MissingSide, amounts_stated, compared_values
from qrag_qdrant.results import Evidence, EvidenceCluster, Passage, QuestionPartEvidence
from qrag_qdrant.retrieval.form_parts import paired, value_comparison

from .test_time_order import MODEL_WRITES, Counted, answered

#: two versions of a handbook, three release notes and two sets of minutes: (publisher, date, text)
DOCUMENTS = {
    "handbook-2023.md": (
        "People Team",
        "2023-01-09",
        "# Employee handbook 2023\n\n## Notice period\n\nStaff who resign give four weeks' notice to their "
        "manager, in writing.\n\n## Remote work\n\nStaff may work from home two days a week if their manager "
        "agrees.\n\n## Parental leave\n\nParents are given twelve weeks of paid parental leave.\n",
    ),
    "handbook-2024.md": (
        "People Team",
        "2024-01-15",
        "# Employee handbook 2024\n\n## Notice period\n\nStaff who resign give six weeks' notice to their "
        "manager and to the People Team, in writing.\n\n## Remote work\n\nStaff may work from home three days "
        "a week; a contract without office days needs a director's approval.\n\n## Parental leave\n\nParents "
        "are given sixteen weeks of paid parental leave.\n",
    ),
    "release-2.1.md": (
        "Platform Team",
        "2023-03-02",
        "# Release 2.1\n\nThe upload limit rises from 50 MB to 200 MB per file. Single sign-on through SAML is "
        "now available to enterprise plans.\n",
    ),
    "release-2.2.md": (
        "Platform Team",
        "2023-06-20",
        "# Release 2.2\n\nThe upload limit rises to 500 MB per file. Audit logs are kept for 180 days instead of 90.\n",
    ),
    "release-3.0.md": (
        "Platform Team",
        "2023-11-14",
        "# Release 3.0\n\nAudit logs are kept for 365 days. The upload limit stays at 500 MB per file.\n",
    ),
    "minutes-2023-02.md": (
        "Steering Committee",
        "2023-02-08",
        "# Steering committee minutes, February 2023\n\nThe committee approved a budget of 40,000 euros for the "
        "data centre migration. Omar Haddad will lead the migration.\n",
    ),
    "minutes-2023-05.md": (
        "Steering Committee",
        "2023-05-10",
        "# Steering committee minutes, May 2023\n\nThe migration budget was raised to 55,000 euros after the "
        "storage audit. Priya Nair joins as security lead.\n",
    ),
}


@pytest.fixture(scope="module")
def documents(tmp_path_factory, embedder):
    """A store of the documents, each dated and published in a metadata sidecar."""
    register_backend("counted", Counted)
    root = tmp_path_factory.mktemp("compared-values")
    folder = root / "corpus"
    folder.mkdir()
    for name, (_, _, text) in DOCUMENTS.items():
        (folder / name).write_text(text)
    sidecar = root / "metadata.jsonl"
    rows = [{"doc": name, "source": by, "published_at": day} for name, (by, day, _) in DOCUMENTS.items()]
    sidecar.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with QuorumRAG(load_settings(store=root / "store"), embedder=embedder) as rag:
        rag.ingest(folder, metadata=sidecar)
    return root / "store"


@pytest.mark.parametrize(
    ("question", "relation"),
    [
        ("Did the 2023 handbook and the 2024 one give the same notice period?", "same"),
        ("Does the 2024 handbook allow more remote days a week than the 2023 handbook?", "more"),
        ("Does release 2.1 allow a smaller upload than release 2.2?", "less"),
        ("Did the Platform Team keep audit logs as long in release 2.2 as in release 3.0?", "at least"),
        ("Did the February minutes and the May minutes name a different budget?", "different"),
        ("Do the February minutes and the May minutes agree on the migration budget?", "same"),
        ("Do the 2023 handbook and the 2024 one differ on the notice period?", "different"),
        ("Does the Guardian article agree with the BBC article that prices rose?", None),
        # more than two values: a stance, a second clause, a document compared, a negation, no yes or no
        ("Does the Guardian article suggest a higher price than the BBC article?", None),
        ("Did the 2023 handbook give the same notice period, while the 2024 one raised it?", None),
        ("Did the same source report the injury and the transfer?", None),
        ("Did the 2024 handbook not give more remote days than the 2023 handbook?", None),
        ("Which handbook gives more remote days than the 2023 handbook?", None),
    ],
)
def test_a_question_that_compares_two_values_is_recognised(question, relation):
    assert value_comparison(question) == relation


def test_a_thing_compared_in_two_places_is_searched_in_each():
    assert paired("Did the Platform Team keep audit logs as long in release 2.2 as in release 3.0?") == [
        "Did the Platform Team keep audit logs in release 2.2",
        "Did the Platform Team keep audit logs in release 3.0",
    ]


@pytest.mark.parametrize(
    ("sentence", "amounts"),
    [
        ("The upload limit rises from 50 MB to 200 MB per file.", {Amount("200 MB", 200, "mb")}),
        ("Audit logs are kept for 180 days instead of 90.", {Amount("180 days", 180, "day")}),
        ("An employee gives four weeks' notice.", {Amount("four weeks", 28, "day")}),
        ("The budget was raised to €55,000 for release 2.1.", {Amount("€55,000", 55000, "euro")}),
        ("The export job moves to 03:00 UTC.", set()),  # a time of day is no amount
    ],
)
def test_a_sentence_states_its_amounts_in_units_that_compare(sentence, amounts):
    assert amounts_stated(sentence, asked={"2.1"}) == amounts


def evidence_of(relation, first: str, second: str, *texts: tuple[str, str]) -> Evidence:
    """Evidence of two parts over passages (file name, text), each a cluster of its own."""
    clusters = [
        EvidenceCluster(
            rank=n,
            score=1.0,
            support=4,
            retrievers=[],
            passages=[Passage(citation=n, source=name, start=0, end=len(text), text=text)],
        )
        for n, (name, text) in enumerate(texts, start=1)
    ]
    return Evidence(
        question=f"{first} {second}",
        abstained=False,
        retrievers=4,
        timings_ms={},
        comparison=relation,
        parts=[
            QuestionPartEvidence(label="part 1", searched_for=first, citations=[1]),
            QuestionPartEvidence(label="part 2", searched_for=second, citations=[2]),
        ],
        clusters=clusters,
    )


def test_amounts_that_cannot_be_compared_leave_the_question_to_the_model():
    parts = ("Did the 2023 plan set the same storage limit", "Did the 2024 plan set the same storage limit")
    compared = evidence_of(
        "same",
        *parts,
        ("plan-2023.md", "The storage limit is 2 GB."),
        ("plan-2024.md", "The storage limit is 2000 MB."),
    )
    found = compared_values(compared, 0.3)
    assert found is not None and found.holds and found.text == "Yes [1][2]"
    in_other_units = evidence_of(
        "same",
        *parts,
        ("plan-2023.md", "The storage limit is 2 GB."),
        ("plan-2024.md", "The storage limit is 5 seats."),
    )
    assert compared_values(in_other_units, 0.3) is None
    two_amounts = evidence_of(
        "same",
        *parts,
        ("plan-2023.md", "The storage limit is 2 GB."),
        ("plan-2024.md", "The storage limit is 2 GB for teams and 5 GB for companies."),
    )
    assert compared_values(two_amounts, 0.3) is None
    unnamed = evidence_of(
        "same",
        "Did one plan set the same storage limit",
        "Did another plan set the same storage limit",
        ("plan-2023.md", "The storage limit is 2 GB."),
        ("plan-2024.md", "The storage limit is 5 GB."),
    )
    assert compared_values(unnamed, 0.3) is None  # nothing tells the two sides apart


def test_a_side_no_passage_names_is_the_part_missing():
    parts = ("Did the 2023 plan set the same storage limit", "Did the 2025 plan set the same storage limit")
    texts = (("plan-2023.md", "The storage limit is 2 GB."), ("plan-2024.md", "The storage limit is 5 GB."))
    assert compared_values(evidence_of("same", *parts, *texts), 0.3) == MissingSide(1, ("2025",))
    named_elsewhere = (*texts, ("roadmap.md", "Plans for 2025 are not settled."))
    assert compared_values(evidence_of("same", *parts, *named_elsewhere), 0.3) is None  # the model reads it


@pytest.mark.slow
def test_a_comparison_with_a_side_no_document_names_abstains_naming_it(documents, embedder):
    answer = answered(documents, embedder, "Did release 2.1 and release 2.4 set the same upload limit per file?")
    assert Counted.asked == [] and answer.abstained and answer.abstain_reason == "part_missing"
    assert [part.missing for part in answer.parts] == [None, "no passage shown names 2.4"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "verdict", "first", "second"),
    [
        ("Did the 2023 handbook and the 2024 one give the same notice period?", "No", "handbook-2023", "handbook-2024"),
        (
            "Did the People Team's 2023 handbook and its 2024 handbook give the same notice period?",
            "No",
            "handbook-2023",
            "handbook-2024",
        ),
        (
            "Does the 2024 handbook allow more remote days a week than the 2023 handbook?",
            "Yes",
            "handbook-2024",
            "handbook-2023",
        ),
        (
            "Does the 2023 handbook allow more remote days a week than the 2024 handbook?",
            "No",
            "handbook-2023",
            "handbook-2024",
        ),
        (
            "Did the 2023 handbook and the 2024 one give the same paid parental leave?",
            "No",
            "handbook-2023",
            "handbook-2024",
        ),
        ("Did release 2.1 and release 2.2 set the same upload limit per file?", "No", "release-2.1", "release-2.2"),
        ("Did release 2.2 and release 3.0 set the same upload limit per file?", "Yes", "release-2.2", "release-3.0"),
        (
            "Did the Platform Team keep audit logs as long in release 3.0 as in release 2.2?",
            "Yes",
            "release-3.0",
            "release-2.2",
        ),
        (
            "Did the February minutes and the May minutes approve the same migration budget?",
            "No",
            "minutes-2023-02",
            "minutes-2023-05",
        ),
        (
            "Do the February minutes and the May minutes agree on the migration budget?",
            "No",
            "minutes-2023-02",
            "minutes-2023-05",
        ),
        (
            "Do the 2023 handbook and the 2024 one differ on the notice period?",
            "Yes",
            "handbook-2023",
            "handbook-2024",
        ),
    ],
)
def test_two_values_are_compared_from_the_passages_without_the_model(
    documents, embedder, question, verdict, first, second
):
    answer = answered(documents, embedder, question)
    assert Counted.asked == []
    assert answer.short_answer == verdict and answer.mark == "supported", (answer.answer, answer.mark_reason)
    cited = {p.citation: p for p in answer.passages}
    sides = [cited[n] for n in answer.claims[0].citations]
    assert [p.source for p in sides] == [f"{first}.md", f"{second}.md"]
    assert answer.computed is not None and answer.computed.startswith("from the values the passages state: ")


@pytest.mark.slow
def test_a_comparison_the_passages_cannot_give_goes_to_the_model(documents, embedder):
    question = "Did the 2023 handbook and the 2024 one give the same notice period?"
    turned_off = answered(documents, embedder, question, compare_values=False)
    assert Counted.asked and turned_off.answer == MODEL_WRITES and turned_off.computed is None
    names = answered(documents, embedder, "Did the February minutes and the May minutes name the same security lead?")
    assert Counted.asked and names.computed is None  # a name is no amount
