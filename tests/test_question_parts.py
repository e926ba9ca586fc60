"""Questions that need several documents: a question that names its documents by publisher (and
date) is searched part by part, each part within its documents, with its own quorum and share of
the context; a part naming an outlet the namespace lacks makes it abstain, naming the outlet; a
question that names no publisher takes the one-question path, with the same evidence."""

from __future__ import annotations

import json
from datetime import date, timedelta

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.sections import GenerationSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.eval import Dataset, EvalQuestion, Evaluation
from qrag_qdrant.generation.checks.answer_check import check_answer
from qrag_qdrant.generation.prompt import (
    NAMED_ANSWER_NOTE,
    PARTS_NOTE,
    YES_OR_NO_NOTE,
    asks_yes_or_no,
    build_messages,
)
from qrag_qdrant.results import Answer, EvidenceCluster, Passage, QuestionPartEvidence
from qrag_qdrant.retrieval.parts import WHOLE, plan_question
from qrag_qdrant.store.filters import DocumentFilter

from .cli_helpers import run
from .test_filters import ARTICLES, found, news  # noqa: F401 (the fixture: four articles, two publishers)

PUBLISHERS = [
    "TechCrunch",
    "The Verge",
    "Cnbc | World Business News Leader",
    "FOX News - Health",
    "FOX News - Lifestyle",
]
COMPARISON = (
    "Did the TechCrunch article report that NASA delayed the crewed Artemis II flyby, while The Verge "
    "article described the spacesuit Axiom Space unveiled for Artemis III?"
)


def test_a_comparison_is_split_at_the_clause_each_publisher_heads():
    plan = plan_question(COMPARISON, PUBLISHERS)
    assert [part.publishers for part in plan.parts] == [("TechCrunch",), ("The Verge",)]
    first, second = (part.clause or "" for part in plan.parts)
    assert "Artemis II flyby" in first and "spacesuit" not in first
    assert second.startswith("while The Verge article") and "spacesuit" in second


def test_a_date_after_a_publisher_narrows_its_part_to_within_two_weeks_of_it():
    plan = plan_question(
        "Was the TechCrunch report published on October 2, 2023 about the trial more critical than the "
        "Cnbc report published on 7 October 2023 about the verdict?",
        PUBLISHERS,
    )
    days = [(part.publishers, part.when.label) for part in plan.parts]
    assert days == [(("TechCrunch",), "2023-10-02"), (("Cnbc | World Business News Leader",), "2023-10-07")]
    assert plan.parts[0].filter == DocumentFilter(publisher="TechCrunch", after="2023-09-18", before="2023-10-17")
    assert plan.parts[1].label == "Cnbc, 2023-10-07"


@pytest.mark.parametrize(
    ("said", "first", "last", "label"),
    [
        ("published in 2024", "2024-01-01", "2024-12-31", "2024"),
        ("published during March 2023", "2023-03-01", "2023-03-31", "2023-03"),
        ("from Q3 2023", "2023-07-01", "2023-09-30", "2023-Q3"),
        ("of the fourth quarter of 2023", "2023-10-01", "2023-12-31", "2023-Q4"),
        ("released in the second half of 2023", "2023-07-01", "2023-12-31", "2023-H2"),
        ("published last quarter", "2026-07-01", "2026-09-30", "2026-Q3"),
        ("from this year", "2026-01-01", "2026-12-31", "2026"),
        ("dated last month", "2026-10-01", "2026-10-31", "2026-10"),
    ],
)
def test_a_period_after_a_publisher_narrows_its_part_to_that_period(said, first, last, label):
    plan = plan_question(
        f"Did the TechCrunch report {said} count more layoffs than The Verge did on October 2, 2023?",
        PUBLISHERS,
        today=date(2026, 11, 29),
    )
    assert [part.when.label for part in plan.parts] == [label, "2023-10-02"]
    end = date.fromisoformat(last) + timedelta(days=1)
    assert plan.parts[0].filter == DocumentFilter(publisher="TechCrunch", after=first, before=end.isoformat())
    assert plan.parts[0].label == f"TechCrunch, {label}"


@pytest.mark.parametrize(
    "question",
    [
        "Did the 2023 TechCrunch review praise the phone more than The Verge?",  # a year that names a thing
        "Did TechCrunch say Google spent $26.3 billion in 2021, while The Verge said it spent less?",  # the events'
        "Did TechCrunch report higher revenue in the last quarter than The Verge?",
    ],
)
def test_a_period_of_what_documents_tell_is_no_filter_on_when_they_were_published(question):
    plan = plan_question(question, PUBLISHERS, today=date(2026, 11, 29))
    assert [part.when for part in plan.parts] == [None, None]


def test_a_publisher_named_once_with_two_periods_has_a_part_for_each():
    plan = plan_question(
        "Did the TechCrunch report from March 2023 and the one from the third quarter of 2023 agree?", PUBLISHERS
    )
    assert [(part.publishers, part.label) for part in plan.parts] == [
        (("TechCrunch",), "TechCrunch, 2023-03"),
        (("TechCrunch",), "TechCrunch, 2023-Q3"),
    ]


def test_a_name_shared_by_publishers_names_them_all_and_a_lowercase_word_names_none():
    plan = plan_question("What did FOX News say about sleep, and what was our fortune in the age of AI?", PUBLISHERS)
    assert [part.publishers for part in plan.parts] == [("FOX News - Health", "FOX News - Lifestyle")]
    assert plan_question("Is the fortune of the verge company at stake?", PUBLISHERS) is WHOLE


@pytest.mark.parametrize(
    "question,missing",
    [
        ("Did a Bloomberg article and the TechCrunch report both cover the launch?", ["Bloomberg"]),
        ("In a piece from The Wall Street Journal, who leads the company TechCrunch covered?", ["Wall Street Journal"]),
        ("Which city is named in an article by Forbes and in a report from Reuters?", ["Forbes", "Reuters"]),
        ("Did TechCrunch and the upgrades mentioned by CNET in its review agree on the price?", ["CNET"]),
        ("Was the spacesuit TechCrunch covered the one reported by Al Jazeera?", ["Al Jazeera"]),
        ("Did an article on Forbes about the cloud and the TechCrunch report name one CEO?", ["Forbes"]),
    ],
)
def test_an_outlet_the_namespace_does_not_hold_is_a_missing_part(question, missing):
    plan = plan_question(question, PUBLISHERS)
    assert [part.named for part in plan.parts if part.missing] == missing
    assert all(part.missing == f"no document from {part.named}" for part in plan.parts if part.missing)


@pytest.mark.parametrize(
    "question",
    [
        "Did The Verge article say the TechCrunch article reports Tyreek Hill had a standout game?",
        "Does TechCrunch report consumers desire trust according to Mozilla's perspective?",
        "Did TechCrunch report the 'NBA Rookie of the Year Odds' article from the same source?",
        "Which club, another Premier League giant, did TechCrunch say won?",
        "According to Luther, what justifies us, as TechCrunch put it?",
        "Did the TechCrunch article of October 1, 2023 and the one from November 5, 2023 agree?",
        "Which company did TechCrunch say introduced an AI-powered DJ feature?",
        "Did TechCrunch report on the deal described by Sam Altman as historic?",
        "Was the rocket TechCrunch covered the one mentioned by Musk?",
        "Did the TechCrunch article on Tesla say the recall was voluntary?",
    ],
)
def test_a_person_a_possessive_a_title_or_a_date_is_no_outlet(question):
    assert not [part for part in plan_question(question, PUBLISHERS).parts if part.missing]


def test_a_question_that_names_no_publisher_is_searched_whole():
    assert plan_question("When did NASA delay the Artemis II flyby?", PUBLISHERS) is WHOLE
    assert plan_question("What did TechCrunch report about Artemis?", []) is WHOLE
    # a namespace whose documents name no publisher: an outlet is only words there
    assert plan_question("What did the Bloomberg article say about Artemis?", []) is WHOLE


def test_a_part_filter_is_narrowed_by_the_callers():
    part = DocumentFilter(publisher="TechCrunch", after="2023-10-01", before="2023-10-04")
    assert part.within(None) == part
    caller = DocumentFilter(publisher=["TechCrunch", "The Verge"], after="2023-10-02", path="tech/")
    assert part.within(caller) == DocumentFilter(
        publisher="TechCrunch", after="2023-10-02", before="2023-10-04", path="tech/"
    )
    assert part.within(DocumentFilter(publisher="The Verge")) is None
    assert DocumentFilter(path="tech/a").within(DocumentFilter(path="world/")) is None


def test_the_prompt_groups_a_questions_passages_by_part_and_leaves_a_whole_question_as_it_was():
    passages = [
        Passage(citation=n, source=f"{n}.txt", start=0, end=4, text=f"text {n}", part=part)
        for n, part in ((1, 1), (2, 1), (3, 2))
    ]
    grouped = build_messages("Did both say so?", passages)[-1]["content"]
    assert grouped.index("Part 1:") < grouped.index('id="1"') < grouped.index('id="2"') < grouped.index("Part 2:")
    assert grouped.index("Part 2:") < grouped.index('id="3"') and PARTS_NOTE in grouped
    whole = build_messages("Did both say so?", [p.model_copy(update={"part": None}) for p in passages])[-1]
    assert "Part 1:" not in whole["content"] and PARTS_NOTE not in whole["content"]


@pytest.mark.parametrize(
    "question,yes_or_no",
    [
        ("Did TechCrunch report the delay, while The Verge reported the launch?", True),
        ("Between the Fortune report on 2023-10-02 and The Age's, was there a change in the figure?", True),
        ("After The Verge reported the fine, did TechCrunch show agreement or disagreement?", True),
        ("Who is the founder named by both TechCrunch and The Verge?", False),
        ("Which company, as reported by Fortune and The Age, was fined?", False),
    ],
)
def test_a_question_of_several_parts_is_told_how_to_answer_by_its_form(question, yes_or_no):
    passages = [Passage(citation=n, source=f"{n}.txt", start=0, end=4, text=f"text {n}", part=n) for n in (1, 2)]
    turn = build_messages(question, passages)[-1]["content"]
    assert asks_yes_or_no(question) is yes_or_no
    assert (YES_OR_NO_NOTE in turn, NAMED_ANSWER_NOTE in turn) == (yes_or_no, not yes_or_no)


def with_parts_and_without(store, embedder, ask):
    """``ask(rag)`` with question parts on, then its retrieval with them off (the control)."""
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        parted = ask(rag)
    with QuorumRAG(load_settings(store=store, retrieval={"parts": {"mode": "off"}}), embedder=embedder) as rag:
        return parted, rag.retrieve(parted.question)


@pytest.mark.slow
def test_each_part_is_searched_in_its_own_documents(news, embedder):  # noqa: F811
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        evidence = rag.retrieve(COMPARISON)
    assert not evidence.abstained and [part.label for part in evidence.parts] == ["TechCrunch", "The Verge"]
    by_part = {number: {p.source for p in evidence.passages if p.part == number} for number in (1, 2)}
    assert by_part[1] and by_part[1] <= {"tech/artemis-delay.txt", "tech/artemis-budget.txt"}
    assert by_part[2] and by_part[2] <= {"world/artemis-crew.txt", "world/artemis-suits.txt"}
    assert [p.citation for p in evidence.passages] == list(range(1, len(evidence.passages) + 1))
    cited = [n for part in evidence.parts for n in part.citations]
    assert cited == [p.citation for p in evidence.passages]
    assert evidence.context_words <= load_settings(store=news).retrieval.parts.words


@pytest.mark.slow
def test_an_outlet_the_namespace_lacks_abstains_naming_it(news, embedder):  # noqa: F811
    question = "Did the Bloomberg article and The Verge report describe the Artemis III spacesuit the same way?"
    answer, whole = with_parts_and_without(news, embedder, lambda rag: rag.answer(question))
    assert answer.abstain_reason == "part_missing" and answer.mark == "no evidence"
    assert answer.mark_reason == "no document from Bloomberg" and answer.answer is None
    assert [part.missing for part in answer.parts] == [None, "no document from Bloomberg"]
    assert not whole.abstained and found(whole)  # the control: searched whole, the question found evidence


@pytest.mark.slow
def test_a_part_without_documents_leaves_the_others_numbered_as_the_parts_are(news, embedder):  # noqa: F811
    """Passages carry the number of their part in ``parts``, and the parts with evidence share the
    context, when an earlier part has no document (TechCrunch published nothing that week)."""
    question = "Did the TechCrunch report published on January 3, 2020 and The Verge report both describe the suit?"
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        evidence = rag.retrieve(question)
    assert [(part.label, part.missing) for part in evidence.parts] == [
        ("TechCrunch, 2020-01-03", "no document from TechCrunch, 2020-01-03"),
        ("The Verge", None),
    ]
    assert evidence.passages and {p.part for p in evidence.passages} == {2}
    assert evidence.parts[1].citations == [p.citation for p in evidence.passages]
    shares = load_settings(store=news).retrieval
    assert evidence.context_policy == f"parts: 2, {shares.parts.clusters} clusters and {shares.parts.words} words each"


@pytest.mark.slow
def test_a_publisher_the_caller_may_not_read_is_an_outlet_it_does_not_know(tmp_path, embedder):
    """The publishers a question can name are those of the documents the caller may read: to any
    other caller, a restricted publisher reads exactly as one that does not exist."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "pay.txt").write_text("The payroll bulletin says salary bands rise four percent in March.")
    (folder / "moon.txt").write_text("The Verge says the Artemis II crew flies around the Moon in March.")
    sidecar = tmp_path / "meta.jsonl"
    rows = [
        {"doc": "pay.txt", "source": "Payroll Bulletin", "readers": ["hr"]},
        {"doc": "moon.txt", "source": "The Verge"},
    ]
    sidecar.write_text("\n".join(map(json.dumps, rows)) + "\n")
    asked = "Did the {} article and The Verge report both say what happens in March?"
    with QuorumRAG(load_settings(store=tmp_path / "store"), embedder=embedder) as rag:
        rag.ingest(folder, metadata=sidecar)
        hidden = rag.retrieve(asked.format("Payroll Bulletin"), readers=["sales"])
        absent = rag.retrieve(asked.format("Daily Planet"), readers=["sales"])
        reader = rag.retrieve(asked.format("Payroll Bulletin"), readers=["hr"])
    assert [(p.label, p.missing) for p in hidden.parts] == [
        ("The Verge", None),
        ("Payroll Bulletin", "no document from Payroll Bulletin"),
    ]
    assert [(p.label, p.missing) for p in absent.parts] == [
        ("The Verge", None),
        ("Daily Planet", "no document from Daily Planet"),
    ]
    assert hidden.abstain_reason == absent.abstain_reason == "part_missing"
    assert "pay.txt" not in {p.source for p in hidden.passages}
    assert [p.label for p in reader.parts] == ["Payroll Bulletin", "The Verge"], reader.abstain_reason
    assert [p.missing for p in reader.parts] == [None, None]
    assert {p.source for p in reader.passages if p.part == 1} == {"pay.txt"}


@pytest.mark.slow
def test_a_single_fact_question_has_the_same_evidence_with_parts_on_and_off(news, embedder):  # noqa: F811
    question = "How much will the Artemis programme cost NASA through 2025?"
    with_parts, without = with_parts_and_without(news, embedder, lambda rag: rag.retrieve(question))
    assert with_parts.parts == [] and with_parts.clusters
    keep = {"clusters", "abstained", "abstain_reason", "confidence", "context_policy"}
    assert with_parts.model_dump(include=keep) == without.model_dump(include=keep)


@pytest.mark.slow
def test_the_cli_shows_the_parts(news):  # noqa: F811
    result = run("query", "--no-generate", "--json", COMPARISON, "--store", str(news))
    assert result.exit_code == 0, result.output
    shown = json.loads(result.output)
    assert [part["label"] for part in shown["parts"]] == ["TechCrunch", "The Verge"]
    assert {p["part"] for c in shown["clusters"] for p in c["passages"]} == {1, 2}


@pytest.mark.slow
def test_the_cli_names_the_missing_part(news):  # noqa: F811
    question = "Did the Bloomberg article and The Verge report describe the Artemis III spacesuit the same way?"
    result = run("query", "--no-generate", question, "--store", str(news))
    assert result.exit_code == 0, result.output
    assert "Part 2 (Bloomberg): no document from Bloomberg" in result.stdout
    assert "No answer: a part of the question has no evidence: no document from Bloomberg." in result.stdout


def verdict_answer(text: str, with_parts: bool = True) -> Answer:
    passages = [
        Passage(citation=1, source="delay.txt", start=0, end=99, text=ARTICLES["tech/artemis-delay.txt"], part=1),
        Passage(citation=2, source="laptop.txt", start=0, end=99, text="Apple's new laptop ships in March.", part=1),
        Passage(citation=3, source="suits.txt", start=0, end=99, text=ARTICLES["world/artemis-suits.txt"], part=2),
    ]
    parts = [
        QuestionPartEvidence(
            label="TechCrunch", searched_for="Did TechCrunch report NASA delayed the Artemis II flyby", citations=[1, 2]
        ),
        QuestionPartEvidence(
            label="The Verge", searched_for="while The Verge described the Axiom Space spacesuit", citations=[3]
        ),
    ]
    answer = Answer(
        question=COMPARISON,
        abstained=False,
        retrievers=4,
        timings_ms={},
        confidence=0.9,
        answer=text,
        clusters=[
            EvidenceCluster(rank=n, score=1.0, support=4, retrievers=[], passages=[p])
            for n, p in enumerate(passages, 1)
        ],
        parts=parts if with_parts else [],
    )
    check_answer(answer, answer.passages, None, GenerationSettings(min_answer_probability=0.0))
    return answer


def test_a_yes_or_no_rests_on_the_passages_it_cites_of_every_part():
    both = verdict_answer("Yes [1, 3]")
    assert both.mark == "supported" and both.claims[0].grounded and both.claims[0].relevance >= 0.3
    assert "NASA delayed the Artemis II" in both.claims[0].sentence and "Axiom Space" in both.claims[0].sentence
    assert both.claims[0].location == "delay.txt; suits.txt"
    one_side = verdict_answer("Yes [1]")
    assert one_side.mark == "not supported" and one_side.claims[0].unsupported == "one-sided"
    assert one_side.mark_reason == "it cites no passage of The Verge"
    off = verdict_answer("Yes [2, 3]")  # the laptop article is no evidence of the delay
    assert off.claims[0].grounded and off.claims[0].unsupported == "off the question"
    whole = verdict_answer("Yes [1, 3]", with_parts=False)  # a question searched whole: "yes" is held to its passages
    assert whole.claims[0].unsupported == "not found"


def test_a_listed_answer_to_a_question_of_parts_is_held_to_each_parts_own_words():
    listed = verdict_answer("September 2025 and the Apollo suits [1][3]")
    claim = listed.claims[0]
    assert listed.mark == "supported" and claim.location == "delay.txt; suits.txt"
    assert claim.relevance == 0.75  # the spacesuit sentence holds 3 of its part's 4 words; the delay's 5 of 6
    assert verdict_answer("September 2025 and the Apollo suits [1]").claims[0].unsupported == "not found"


@pytest.mark.slow
def test_eval_can_search_each_questions_gold_documents_alone(news, embedder):  # noqa: F811
    """``eval --gold-documents``: the answers' ceiling. Each part is searched in its publisher's
    gold documents only, so a question whose gold articles are the other two sees only them."""
    crossed = ("tech/artemis-budget.txt", "world/artemis-crew.txt")
    questions = [
        EvalQuestion("crossed", COMPARISON, ("Yes",), relevant_docs=crossed),
        EvalQuestion("null", COMPARISON, (), relevant_docs=()),
    ]
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        dataset = Dataset("news", news, "qa", questions)
        gold = Evaluation(rag, dataset, systems=["quorum"], gold_documents=True)
        ceiling = [gold.answer("quorum", gold.search_question(q)).evidence for q in questions]
        plain = Evaluation(rag, dataset, systems=["quorum"])
        searched = plain.answer("quorum", plain.search_question(questions[0])).evidence
        with pytest.raises(ConfigError, match="measures quorum alone"):
            Evaluation(rag, dataset, systems=["quorum", "qdrant-hybrid"], gold_documents=True)
    assert {p.source for p in ceiling[0].passages} == set(crossed) and [p.label for p in ceiling[0].parts] == [
        "TechCrunch",
        "The Verge",
    ]
    assert "tech/artemis-delay.txt" in {p.source for p in searched.passages}  # the control: every document
    assert ceiling[1].abstained and not ceiling[1].passages  # no gold document: nothing to search


@pytest.mark.slow
@pytest.mark.parametrize("top_k,most", [(None, 2), (1, 1)])
def test_a_part_takes_its_top_k_hits_from_each_retriever(news, embedder, top_k, most):  # noqa: F811
    """Two articles a publisher: each part's retrievers return both, or one with parts.top_k = 1."""
    retrieval = {} if top_k is None else {"parts": {"top_k": top_k}}
    with QuorumRAG(load_settings(store=news, retrieval=retrieval), embedder=embedder) as rag:
        searcher, seen = rag.coordinator.searcher, []
        search = searcher.search_embedded
        searcher.search_embedded = lambda *args, **kwargs: seen.append(search(*args, **kwargs)) or seen[-1]
        assert len(rag.retrieve(COMPARISON).parts) == 2
    assert len(seen) == 2 and max(len(ranked.hits) for lists, _ in seen for ranked in lists) == most
