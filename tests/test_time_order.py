"""A question that asks only whether one event came before another is answered from the dates of
the documents that report each event, through the answer path users get, without the model; the
checks read the computed verdict as they read the model's, and a question the dates cannot answer
goes to the model."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import BackendDefaults, register_backend
from qrag_qdrant.generation.time_order import dated_answer
from qrag_qdrant.results import Evidence, EvidenceCluster, Passage, QuestionPartEvidence
from qrag_qdrant.retrieval.form_parts import time_order

from .test_filters import news  # noqa: F401 (the fixture: four dated articles, two publishers)

RELEASES = {
    "release-2.1.md": (
        "2023-03-02",
        "# Release 2.1\n\nThe upload limit rises from 50 MB to 200 MB per file. Single sign-on through SAML is "
        "now available to enterprise plans.\n",
    ),
    "release-2.2.md": (
        "2023-06-20",
        "# Release 2.2\n\nThe upload limit rises to 500 MB per file. Audit logs are kept for 180 days instead of "
        "90. The legacy v1 API is deprecated and will be removed in release 3.0.\n",
    ),
    "release-3.0.md": (
        "2023-11-14",
        "# Release 3.0\n\nThe legacy v1 API is removed. The web app gets a dark mode, and the mobile app "
        "works offline.\n",
    ),
    "travel.md": (
        "2023-05-04",
        "# Travel policy\n\nTrain travel is booked in second class. Hotels are booked through the travel desk.\n",
    ),
}
#: what the model writes when it is asked: the dates' answer never asks it
MODEL_WRITES = "No [1][2]"


class Counted(BackendDefaults):
    """A model that counts the questions it is asked and answers every one ``MODEL_WRITES``."""

    asked: ClassVar[list[str]] = []

    def __init__(self, settings):
        pass

    def stream(self, question, passages, result):
        Counted.asked.append(question)
        yield MODEL_WRITES


@pytest.fixture(scope="module")
def releases(tmp_path_factory, embedder):
    """A store of release notes and a travel page, each dated and published by the Platform Team
    in a metadata sidecar, and one of the same texts without metadata."""
    register_backend("counted", Counted)
    root = tmp_path_factory.mktemp("time-order")
    stores = {}
    for dated in (True, False):
        folder = root / f"corpus-{dated}"
        folder.mkdir()
        for name, (_, text) in RELEASES.items():
            (folder / name).write_text(text)
        sidecar = root / f"metadata-{dated}.jsonl"
        rows = [{"doc": name, "source": "Platform Team", "published_at": day} for name, (day, _) in RELEASES.items()]
        sidecar.write_text("".join(json.dumps(row) + "\n" for row in rows) if dated else "")
        stores[dated] = root / f"store-{dated}"
        with QuorumRAG(load_settings(store=stores[dated]), embedder=embedder) as rag:
            rag.ingest(folder, metadata=sidecar)
    return stores


def answered(store, embedder, question: str, **generation):
    Counted.asked.clear()
    settings = load_settings(store=store, generation={"backend": "counted", **generation})
    with QuorumRAG(settings, embedder=embedder) as rag:
        return rag.answer(question)


@pytest.mark.parametrize(
    ("question", "order"),
    [
        ("Was the v1 API deprecated before it was removed?", "before"),
        ("Was the upload limit raised to 200 MB earlier than the audit logs were kept for 180 days?", "before"),
        ("Did CBSSports.com report on the injury after Sporting News mentioned the absence of three players?", "after"),
        # asks more than the order: a change, an agreement, a negation, what a report suggests
        ("Did the Federal Reserve change its stance after The Sydney Morning Herald reported on it?", None),
        ("Did The Guardian fail to report on the match before The Independent mentioned it?", None),
        ("Does the article suggest that the coach had doubts before the season started?", None),
        ("Was the upload limit raised before October 2023?", None),  # a date bounds it: no second event
        ("What changed before the upload limit was raised?", None),
    ],
)
def test_a_question_that_asks_only_the_order_of_two_events_is_recognised(question, order):
    found = time_order(question)
    assert (found.order if found else None) == order


def test_each_part_is_given_the_event_that_names_its_publisher():
    found = time_order("Did The Verge describe the new spacesuit after TechCrunch reported the flyby's delay?")
    assert found is not None and found.events == (
        "The Verge describe the new spacesuit",
        "TechCrunch reported the flyby's delay",
    )
    assert found.for_parts(["TechCrunch", "The Verge"]) == found.events[::-1]
    assert found.for_parts(["The Verge", "TechCrunch"]) == found.events
    assert found.for_parts(["part 1", "part 2"]) == found.events


def shown(*passages: tuple[str, str, str, int]) -> list[EvidenceCluster]:
    """One cluster a passage: (publisher, date, text, part)."""
    return [
        EvidenceCluster(
            rank=n,
            score=1.0,
            support=4,
            retrievers=[],
            passages=[
                Passage(
                    citation=n,
                    source=f"{n}.txt",
                    start=0,
                    end=len(text),
                    text=text,
                    publisher=by,
                    published=day,
                    part=part,
                )
            ],
        )
        for n, (by, day, text, part) in enumerate(passages, start=1)
    ]


def test_an_event_a_part_names_the_publisher_of_is_told_by_that_publishers_documents():
    """The later Sporting News piece also says Walker was injured; the injury is CBSSports.com's to
    tell, and its report came first."""
    injury = "Seahawks running back Kenneth Walker III left the game with an oblique injury."
    evidence = Evidence(
        question="Did CBSSports.com report on Kenneth Walker III's injury before Sporting News mentioned the "
        "absence of Tee Higgins?",
        abstained=False,
        retrievers=4,
        timings_ms={},
        time_order="before",
        parts=[
            QuestionPartEvidence(
                label="CBSSports.com",
                searched_for="",
                citations=[1],
                event="CBSSports.com report on Kenneth Walker III's injury",
            ),
            QuestionPartEvidence(
                label="Sporting News",
                searched_for="",
                citations=[2, 3],
                event="Sporting News mentioned the absence of Tee Higgins",
            ),
        ],
        clusters=shown(
            ("CBSSports.com", "2023-11-19", injury, 1),
            ("Sporting News", "2023-11-29", "Tee Higgins is absent with a hamstring injury this week.", 2),
            ("Sporting News", "2023-12-07", f"{injury} He may miss another week.", 2),
        ),
    )
    answer = dated_answer(evidence, 0.3)
    assert answer is not None and (answer.text, answer.first.publisher) == ("Yes [1][2]", "CBSSports.com")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "order", "verdict", "first", "second"),
    [
        ("Was single sign-on through SAML released before dark mode in the web app?", "before", "Yes", "2.1", "3.0"),
        ("Was dark mode added to the web app before single sign-on through SAML?", "before", "No", "3.0", "2.1"),
        ("Was dark mode added to the web app after single sign-on through SAML?", "after", "Yes", "3.0", "2.1"),
        # both parts' searches open with one document: each keeps one of its own, the one it prefers more
        (
            "Was the upload limit raised to 200 MB before it was raised to 500 MB per file?",
            "before",
            "Yes",
            "2.1",
            "2.2",
        ),
        (
            "Was the upload limit raised to 500 MB per file before it was raised to 200 MB?",
            "before",
            "No",
            "2.2",
            "2.1",
        ),
        ("Was the v1 API deprecated before it was removed?", "before", "Yes", "2.2", "3.0"),
        ("Was the v1 API removed before it was deprecated?", "before", "No", "3.0", "2.2"),
        # one publisher named: each event a part, both in its documents
        (
            "Did the Platform Team deprecate the v1 API before removing it in release 3.0?",
            "before",
            "Yes",
            "2.2",
            "3.0",
        ),
        ("Did the Platform Team add dark mode before single sign-on through SAML?", "before", "No", "3.0", "2.1"),
    ],
)
def test_a_time_order_is_answered_from_the_documents_dates_without_the_model(
    releases, embedder, question, order, verdict, first, second
):
    answer = answered(releases[True], embedder, question)
    assert Counted.asked == []
    assert answer.time_order == order
    assert answer.short_answer == verdict and answer.mark == "supported", (answer.answer, answer.mark_reason)
    cited = {p.citation: p for p in answer.passages}
    sides = [cited[n] for n in answer.claims[0].citations]
    assert [p.source for p in sides] == [f"release-{first}.md", f"release-{second}.md"]
    assert answer.computed == (
        f"from the documents' dates: [{sides[0].citation}] {sides[0].byline}, [{sides[1].citation}] {sides[1].byline}"
    )


@pytest.mark.slow
def test_a_time_order_the_dates_cannot_give_goes_to_the_model(releases, embedder):
    question = "Was single sign-on through SAML released before dark mode in the web app?"
    undated = answered(releases[False], embedder, question)
    assert Counted.asked and undated.answer == MODEL_WRITES and undated.computed is None
    turned_off = answered(releases[True], embedder, question, time_order_from_dates=False)
    assert Counted.asked and turned_off.answer == MODEL_WRITES and turned_off.computed is None
    single = answered(releases[True], embedder, "How large may an uploaded file be?")
    assert Counted.asked and single.computed is None and not single.parts


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "verdict"),
    [
        (
            "Did The Verge describe the spacesuit Axiom Space unveiled before TechCrunch reported that NASA "
            "delayed the crewed Artemis II flyby?",
            "Yes",
        ),
        (
            "Did TechCrunch report that NASA delayed the crewed Artemis II flyby before The Verge described the "
            "spacesuit Axiom Space unveiled?",
            "No",
        ),
    ],
)
def test_a_time_order_between_two_named_publishers_reads_each_ones_event(news, embedder, question, verdict):  # noqa: F811
    answer = answered(news, embedder, question)
    assert Counted.asked == [] and answer.short_answer == verdict and answer.mark == "supported"
    by_label = {part.label: part for part in answer.parts}
    assert by_label["The Verge"].event.startswith("The Verge describe")
    assert by_label["TechCrunch"].event.startswith("TechCrunch report")
    cited = {p.citation: p.source for p in answer.passages}
    assert sorted(cited[n] for n in answer.claims[0].citations) == ["tech/artemis-delay.txt", "world/artemis-suits.txt"]


#: minutes with no metadata: dated by their titles, their file names or a date a sentence states
MINUTES = {
    "minutes-2023-02.md": "# Steering committee minutes, February 2023\n\nThe office move to the Harbour building was "
    "postponed to autumn. Omar Haddad will lead the data centre migration.\n",
    "minutes-2023-05.md": "# Steering committee minutes, May 2023\n\nThe committee chose the Harbour building for the "
    "office move in October. Priya Nair joins as security lead.\n",
    "notes-2023-09.md": "# Steering committee notes\n\nThe data centre migration finished two weeks early.\n",
    "security.md": "# Security\n\nThe penetration test was passed on 4 July 2023, after the new firewall went live.\n",
}


@pytest.fixture(scope="module")
def minutes(tmp_path_factory, embedder):
    register_backend("counted", Counted)
    root = tmp_path_factory.mktemp("undated")
    (root / "corpus").mkdir()
    for name, text in MINUTES.items():
        (root / "corpus" / name).write_text(text)
    with QuorumRAG(load_settings(store=root / "store"), embedder=embedder) as rag:
        rag.ingest(root / "corpus")
    return root / "store"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "verdict", "computed"),
    [
        # the titles' months
        (
            "Was the office move postponed before the Harbour building was chosen?",
            "Yes",
            "from the documents' dates: [{}] 2023-02, [{}] 2023-05",
        ),
        (
            "Was the Harbour building chosen for the office move before the move was postponed to autumn?",
            "No",
            "from the documents' dates: [{}] 2023-05, [{}] 2023-02",
        ),
        # a file name's month, and the day a sentence states
        (
            "Did Priya Nair join as security lead before the data centre migration finished?",
            "Yes",
            "from the documents' dates: [{}] 2023-05, [{}] 2023-09",
        ),
        (
            "Was the penetration test passed before the data centre migration finished?",
            "Yes",
            "from the documents' dates: [{}] 2023-07-04, [{}] 2023-09",
        ),
    ],
)
def test_a_time_order_is_answered_from_dates_the_documents_state_without_metadata(
    minutes, embedder, question, verdict, computed
):
    answer = answered(minutes, embedder, question)
    assert Counted.asked == []
    assert answer.short_answer == verdict and answer.mark == "supported", (answer.answer, answer.mark_reason)
    assert answer.computed == computed.format(*answer.claims[0].citations)
