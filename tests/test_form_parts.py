"""Questions that span documents without naming them, split by their form: each clause (or each of
two compared phrases, or two ordered events) searched by its own words alone, with its own quorum
and share of the context; the whole question's search decides whether to answer, as it does for a
question of one part; a single-fact question takes the one-question path, with no more searches."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.retrieval.form_parts import plan_by_form
from qrag_qdrant.retrieval.parts import WHOLE

from .test_filters import QUESTION, news  # noqa: F401 (the fixture: four articles, two publishers)
from .test_model_parts import UNNAMED


def clauses(question: str) -> list[str | None]:
    return [part.clause for part in plan_by_form(question).parts]


def test_a_comparison_of_two_unnamed_articles_is_cut_where_its_clauses_meet():
    plan = plan_by_form(UNNAMED)
    assert [part.clause for part in plan.parts] == [
        "Did one article report that NASA delayed the crewed Artemis II flyby",
        "another article described the spacesuit Axiom Space unveiled for Artemis III",
    ]
    assert all(part.alone and part.publishers is None for part in plan.parts) and plan.alone
    assert [part.label for part in plan.parts] == ["part 1", "part 2"]


def test_each_report_of_a_time_order_question_keeps_its_date_and_the_attribution_is_no_part():
    question = (
        "Between a report on the Artemis II crew training published on October 7, 2023, and another report "
        "on the heat shield erosion published on December 5, 2023, was there a change in the launch date?"
    )
    plan = plan_by_form(question)
    assert [part.when.label for part in plan.parts] == ["2023-10-07", "2023-12-05"]
    assert plan.parts[0].clause == "Between a report on the Artemis II crew training published on October 7, 2023"
    chain = (
        "Which company unveiled the spacesuit for the Artemis III landing, was praised for the suit's knee room, "
        "and plans a private space station, as reported by one outlet and another outlet?"
    )
    assert clauses(chain) == [
        "Which company unveiled the spacesuit for the Artemis III landing",
        "was praised for the suit's knee room",
        "plans a private space station",
    ]


@pytest.mark.parametrize(
    "question,parts",
    [
        (
            "Does an article suggest that the heat shield held up as designed the same as another article's "
            "claim that the crew capsule passed every test?",
            [
                "Does an article suggest that the heat shield held up as designed the same",
                "another article's claim that the crew capsule passed every test",
            ],
        ),
        (
            "Does one report describe the launch tower repairs in the same way that another report describes "
            "the new crawler road?",
            [
                "Does one report describe the launch tower repairs",
                "another report describes the new crawler road",
            ],
        ),
        (
            "Do one article's views on the delayed flyby conflict with another article's account of the "
            "spacesuit tests?",
            [
                "Do one article's views on the delayed flyby conflict",
                "another article's account of the spacesuit tests",
            ],
        ),
    ],
)
def test_a_clause_that_points_to_another_document_after_a_comparison_is_a_part(question, parts):
    """ "the same as another article's", "in the same way that another report", "conflict with
    another article's": what follows describes the second document."""
    assert clauses(question) == parts


def test_a_last_clause_that_judges_how_the_reports_relate_is_no_part():
    """ "Was there a change in the narrative regarding ...?" describes no report: searched alone it
    finds none, and would take the slots of the two that are described."""
    dated = (
        "Between a report on the Artemis II crew training published on October 7, 2023, and another report "
        "on the heat shield erosion published on December 5, 2023, was there a change in the narrative "
        "regarding NASA's launch schedule and crew safety?"
    )
    assert [part.when.label for part in plan_by_form(dated).parts] == ["2023-10-07", "2023-12-05"]
    third = (
        "Did one article report that NASA delayed the crewed Artemis II flyby, while another described the "
        "spacesuit Axiom Space unveiled, and does a third article focus on the heat shield erosion of Orion?"
    )
    assert clauses(third)[-1] == "does a third article focus on the heat shield erosion of Orion"
    two = (
        "Did one article report that NASA delayed the crewed Artemis II flyby, or do they present differing "
        "accounts of the heat shield erosion and crew safety?"
    )
    assert len(clauses(two)) == 2  # the judging clause is kept where it is one of two


@pytest.mark.parametrize(
    "question,parts",
    [
        (
            "Did the 2023 handbook and the 2024 one give the same notice period?",
            [
                "Did the 2023 handbook give the same notice period",
                "Did the 2024 handbook give the same notice period",
            ],
        ),
        (
            "Which executive appears in both the lawsuit coverage and the earnings report?",
            ["Which executive appears in the lawsuit coverage", "Which executive appears in the earnings report"],
        ),
        ("Was the price cut announced before the battery plant?", ["the price cut announced", "the battery plant"]),
    ],
)
def test_two_compared_phrases_or_two_ordered_events_are_searched_each(question, parts):
    assert clauses(question) == parts


@pytest.mark.parametrize(
    "question",
    [
        QUESTION,
        "What happened before the Artemis I capsule returned?",
        "What was the final score of the game between the Panthers and the Seahawks?",
        "Which monarchs was the Victoria and Albert Museum named after?",
        "Who exclusively broadcast the game in Spanish after reaching an agreement with the NFL and CBS?",
        "Was the audit report published before the spacesuit story?",  # too few words of its own: the model's
    ],
)
def test_a_question_of_one_fact_is_not_cut(question):
    assert plan_by_form(question) is WHOLE


@pytest.mark.slow
def test_each_unnamed_part_finds_its_own_article_and_the_whole_question_decides(news, embedder):  # noqa: F811
    with QuorumRAG(load_settings(store=news, retrieval={"parts": {"clusters": 2}}), embedder=embedder) as rag:
        evidence = rag.retrieve(UNNAMED)
    with QuorumRAG(load_settings(store=news, retrieval={"parts": {"mode": "off"}}), embedder=embedder) as rag:
        whole = rag.retrieve(UNNAMED)
    assert [(p.label, p.filter, p.missing, p.names_first) for p in evidence.parts] == [
        ("part 1", None, None, []),
        ("part 2", None, None, []),
    ]
    by_part = {number: [p.source for p in evidence.passages if p.part == number] for number in (1, 2)}
    assert by_part[1][0] == "tech/artemis-delay.txt" and by_part[2][0] == "world/artemis-suits.txt"
    assert (evidence.abstain_reason, evidence.confidence) == (whole.abstain_reason, whole.confidence)
    assert [n for part in evidence.parts for n in part.citations] == [p.citation for p in evidence.passages]


@pytest.mark.slow
def test_a_part_that_names_a_period_searches_the_documents_published_then_or_its_words_alone(news, embedder):  # noqa: F811
    asked = (
        "Did a report published {when} say NASA's Artemis programme costs billions of dollars, while another "
        "report said the Artemis II crew flies around the Moon in the Orion capsule?"
    )
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        in_period = rag.retrieve(asked.format(when="in the third quarter of 2023"))
        none_then = rag.retrieve(asked.format(when="in 2019"))
    assert in_period.parts[0].label == "part 1, 2023-Q3"
    assert in_period.parts[0].filter == "published from 2023-07-01T00:00:00Z, published before 2023-10-01T00:00:00Z"
    assert {p.source for p in in_period.passages if p.part == 1} == {"tech/artemis-budget.txt"}  # of 2023-08-11
    assert in_period.parts[1].filter is None
    # no document the namespace holds was published in 2019: the part's words alone, in every document
    assert none_then.parts[0].filter is None
    assert next(p.source for p in none_then.passages if p.part == 1) == "tech/artemis-budget.txt"


@pytest.mark.slow
def test_a_part_with_a_date_searches_that_fortnight_where_documents_carry_dates(news, embedder, tmp_path):  # noqa: F811
    question = (
        "Did a report published on April 3, 2023 say the Artemis II crew flies around the Moon, while another "
        "report said NASA found heat shield erosion after the capsule returned?"
    )
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        dated = rag.retrieve(question)
    assert dated.parts[0].filter == "published from 2023-03-20T00:00:00Z, published before 2023-04-18T00:00:00Z"
    assert {p.source for p in dated.passages if p.part == 1} == {"world/artemis-crew.txt"}
    assert dated.parts[1].filter is None
    # a namespace whose documents carry no dates: the words alone
    folder = tmp_path / "undated"
    folder.mkdir()
    (folder / "crew.txt").write_text("The Artemis II crew of four will fly around the Moon and back in Orion.")
    (folder / "shield.txt").write_text("NASA found heat shield erosion after the uncrewed capsule returned.")
    with QuorumRAG(load_settings(store=tmp_path / "undated-store"), embedder=embedder) as rag:
        rag.ingest(folder)
        undated = rag.retrieve(question)
    assert [p.filter for p in undated.parts] == [None, None]
    assert next(p.source for p in undated.passages if p.part == 1) == "crew.txt"


@pytest.mark.slow
def test_the_cli_shows_the_unnamed_parts(news):  # noqa: F811
    from .cli_helpers import run

    result = run("query", "--no-generate", "--json", UNNAMED, "--store", str(news))
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [part["label"] for part in shown["parts"]] == ["part 1", "part 2"]


CHAIN_ARTICLES = {
    "robot.txt": "Acme Robotics unveiled a warehouse robot that lifts pallets of 500 kilograms on its own.",
    "factory.txt": "Acme Robotics opened a new factory in Lyon that will employ 300 people.",
    "fine.txt": "Regulators fined Acme Robotics 2 million euros for hiding safety reports from inspectors.",
    "globex.txt": "Regulators fined the shipping company Globex 2 million euros for breaking emission rules.",
    "initech.txt": "Regulators fined the bank Initech 2 million euros for misleading customers about fees.",
    "weather.txt": "Heavy rain flooded the harbour district and closed two tram lines for a day.",
}
CHAIN = (
    "Which company unveiled a warehouse robot that lifts pallets on its own, opened a new factory in Lyon, "
    "and was fined 2 million euros by regulators, as reported by three articles?"
)


@pytest.fixture
def chain_store(tmp_path, embedder):
    folder = tmp_path / "chain"
    folder.mkdir()
    for name, text in CHAIN_ARTICLES.items():
        (folder / name).write_text(text)
    with QuorumRAG(load_settings(store=tmp_path / "chain-store"), embedder=embedder) as rag:
        rag.ingest(folder)
    return tmp_path / "chain-store"


@pytest.mark.slow
def test_a_chain_part_ranks_first_the_passages_naming_what_the_other_parts_agree_on(chain_store, embedder):
    settings = load_settings(store=chain_store, retrieval={"parts": {"clusters": 2}})
    with QuorumRAG(settings, embedder=embedder) as rag:
        evidence = rag.retrieve(CHAIN)
    by_part = {n: [p.source for p in evidence.passages if p.part == n] for n in (1, 2, 3)}
    assert [part.searched_for for part in evidence.parts] == [
        "Which company unveiled a warehouse robot that lifts pallets on its own",
        "opened a new factory in Lyon",
        "was fined 2 million euros by regulators",
    ]
    assert evidence.parts[2].names_first[0] == "Acme Robotics"
    assert [sources[0] for sources in by_part.values()] == ["robot.txt", "factory.txt", "fine.txt"]
    # the control: the part's own words alone rank another company's fine first
    with QuorumRAG(load_settings(store=chain_store, retrieval={"parts": {"mode": "off"}}), embedder=embedder) as rag:
        alone = rag.retrieve("was fined 2 million euros by regulators")
    assert alone.passages[0].source != "fine.txt"
