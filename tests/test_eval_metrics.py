"""The eval's metric plumbing on tiny hand-made cases with exact expected values."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from qrag_qdrant.config.sections import GenerationSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.eval import DatasetError, EvalQuestion, load_dataset, parse_sweep
from qrag_qdrant.eval.answering import (
    GeneratedAnswer,
    answer_metrics,
    draw,
    paired_f1,
    score_answer,
    supported_under,
)
from qrag_qdrant.eval.metrics import (
    SystemAnswer,
    exact_match,
    first_answer_rank,
    holds_answer,
    normalize_answer,
    qa_metrics,
    relevance_metrics,
    support_profile,
    token_f1,
)
from qrag_qdrant.results import Answer, Claim, Passage


def test_squad_normalisation():
    assert normalize_answer("The  Denver Broncos!") == "denver broncos"
    assert normalize_answer("an apple, a pear") == "apple pear"
    assert holds_answer("In 2016 the Denver Broncos won.", ["denver broncos"])
    assert holds_answer("they beat (the) Carolina Panthers", ["The Carolina Panthers"])
    assert not holds_answer("Denverite Broncos", ["Denver Broncos"])  # whole words only
    assert not holds_answer("anything", ["", "the"])  # answers that normalise to nothing never match


def q(id, answers=("gold",), unanswerable=False):
    return EvalQuestion(id, f"question {id}", tuple(answers), unanswerable)


def test_qa_metrics_exact_values():
    questions = [q("1"), q("2"), q("3"), q("4", answers=(), unanswerable=True)]
    answers = [
        SystemAnswer([["no"], ["the GOLD here"]], latency_ms=10),  # rank 2
        SystemAnswer([["gold first"], ["x y z"]], latency_ms=20),  # rank 1
        SystemAnswer([], latency_ms=30),  # abstained
        SystemAnswer([], latency_ms=40),  # abstained on an unanswerable one
    ]
    metrics = qa_metrics(questions, answers)
    assert metrics["answer_recall"] == pytest.approx(2 / 3)
    assert metrics["mrr"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert metrics["context_words"] == pytest.approx((4 + 5 + 0 + 0) / 4)
    assert metrics["abstain_rate"] == {"answerable": pytest.approx(1 / 3), "unanswerable": 1.0, "out_of_corpus": None}
    assert metrics["answered_recall"] == 1.0  # both answered answerable questions hold the answer
    # no gate: answered in the given order, risk flat at the error rate (2 of 4 wrong)
    assert metrics["aurc"] == pytest.approx(0.5)
    assert metrics["p50_ms"] == pytest.approx(25.0)
    assert metrics["p95_ms"] == pytest.approx(38.5)
    assert set(metrics) == {
        "answer_recall",
        "answered_recall",
        "mrr",
        "context_words",
        "abstain_rate",
        "aurc",
        "risk_coverage",
        "p50_ms",
        "p95_ms",
    }


def test_out_of_corpus_and_gated_answers_count_as_abstentions_of_their_kind():
    questions = [q("1"), q("2"), EvalQuestion("3", "elsewhere?", out_of_corpus=True)]
    answers = [
        SystemAnswer([["gold"]], confidence=0.9),
        SystemAnswer([["gold"]], confidence=0.2, gated=True),
        SystemAnswer([["something"]], confidence=0.1, gated=True),
    ]
    metrics = qa_metrics(questions, answers)
    assert metrics["abstain_rate"] == {"answerable": 0.5, "unanswerable": None, "out_of_corpus": 1.0}
    assert metrics["answer_recall"] == 1.0  # the evidence held it; the gate withheld one
    assert metrics["answered_recall"] == 1.0
    assert metrics["aurc"] == pytest.approx((0 + 0 + 1 / 3) / 3)


def test_first_answer_rank_counts_units_not_passages():
    answer = SystemAnswer([["a", "b"], ["c", "gold"]])
    assert first_answer_rank(answer, ["gold"]) == 2
    assert first_answer_rank(answer, ["missing"]) is None


def test_relevance_metrics_with_trec_eval():
    questions = [
        EvalQuestion("q1", "x", relevant_docs=("d1.txt",)),
        EvalQuestion("q2", "y", relevant_docs=("d2.txt", "d3.txt")),
    ]
    answers = [SystemAnswer([["t"]], docs=["d9.txt", "d1.txt"]), SystemAnswer([], docs=[])]
    metrics = relevance_metrics(questions, answers)
    # q1: relevant at rank 2 -> nDCG 1/log2(3); q2: nothing retrieved -> 0
    assert metrics["ndcg@10"] == pytest.approx((1 / 1.584962500721156) / 2)
    assert metrics["recall@100"] == pytest.approx(0.5)
    assert metrics["abstain_rate"] == {"answerable": 0.5, "unanswerable": None, "out_of_corpus": None}


def test_support_profile_tells_how_often_the_top_cluster_is_right():
    questions = [q("1"), q("2"), q("3"), q("4", answers=(), unanswerable=True)]
    answers = [
        SystemAnswer([["gold"]], support=4),
        SystemAnswer([["no"]], support=4),
        SystemAnswer([["gold"]], support=2),
        SystemAnswer([["gold"]], support=3),
    ]
    assert support_profile(questions, answers, "qa") == {
        "2": {"questions": 1, "top_cluster_right": 1.0, "unanswerable": 0},
        "3": {"questions": 0, "top_cluster_right": None, "unanswerable": 1},
        "4": {"questions": 2, "top_cluster_right": 0.5, "unanswerable": 0},
    }


def test_sweep_grid():
    assert parse_sweep(["quorum=1,2", "rrf_k=10,60"]) == [
        {"quorum": 1, "rrf_k": 10},
        {"quorum": 1, "rrf_k": 60},
        {"quorum": 2, "rrf_k": 10},
        {"quorum": 2, "rrf_k": 60},
    ]
    assert parse_sweep(["cluster_threshold=0.75"]) == [{"cluster_threshold": 0.75}]
    with pytest.raises(ConfigError, match="NAME one of"):
        parse_sweep(["quorom=1"])
    with pytest.raises(ConfigError, match="are not int values"):
        parse_sweep(["quorum=x"])


def test_a_sweep_sets_a_sections_key_by_its_path_and_validates_it():
    point = parse_sweep(["context.words=300", "context.mode=fixed"])[0]
    options = load_settings().retrieval.updated({**point, "quorum": 3})
    assert (options.context.words, options.context.mode, options.quorum, options.parts.words) == (300, "fixed", 3, 300)
    with pytest.raises(ValidationError):
        load_settings().retrieval.updated({"context.mode": "sometimes"})


def test_dataset_layouts_and_sampling(tmp_path):
    qa = tmp_path / "qa"
    (qa / "corpus").mkdir(parents=True)
    rows = [{"id": str(i), "question": f"q{i}", "answers": ["a"], "unanswerable": i == 3} for i in range(10)]
    (qa / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    dataset = load_dataset(qa)
    assert dataset.kind == "qa" and len(dataset.questions) == 10 and not dataset.questions[3].answerable
    sampled = load_dataset(qa, sample=4, seed=7)
    assert len(sampled.questions) == 4 and sampled.questions == load_dataset(qa, sample=4, seed=7).questions

    relevance = tmp_path / "rel"
    (relevance / "corpus").mkdir(parents=True)
    (relevance / "queries.jsonl").write_text(json.dumps({"id": "1", "question": "c", "relevant_docs": ["x.txt"]}))
    assert load_dataset(relevance).questions[0].relevant_docs == ("x.txt",)

    (relevance / "queries.jsonl").write_text('{"id": "1"}')
    with pytest.raises(DatasetError, match="queries.jsonl:1: not a relevance question"):
        load_dataset(relevance)
    with pytest.raises(DatasetError, match="no corpus/ folder"):
        load_dataset(tmp_path)


def test_squad_exact_match_and_f1():
    assert exact_match("The Denver Broncos!", ["Denver Broncos"]) and not exact_match("Broncos", ["Denver Broncos"])
    assert token_f1("Broncos", ["Denver Broncos"]) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert token_f1("the Broncos of Denver", ["Carolina Panthers", "Denver Broncos"]) == pytest.approx(
        2 * (2 / 3) * 1 / (2 / 3 + 1)
    )  # "of" stays: precision 2/3, recall 1, against the best gold
    assert token_f1("nothing alike", ["Denver Broncos"]) == 0.0 and token_f1("", ["Denver"]) == 0.0


def generated(category="answerable", outcome=None, f1=0.0, holds_gold=False, flagged=None, supported=None, **extra):
    fields = dict(
        id="q",
        category=category,
        system="s",
        answer="a",
        short_answer="a",
        outcome=outcome,
        em=False,
        f1=f1,
        holds_gold=holds_gold,
        citations=1,
        citations_valid=True,
        claims_judged=1 if flagged is not None else 0,
        claims_supported=0 if flagged else 1 if flagged is not None else 0,
        flagged=flagged,
        supported=supported,
        seconds=2.0,
        coverage=1.0,  # the sentence the answer comes from says all the question asks about
    )
    return GeneratedAnswer(**{**fields, **extra})


def test_supported_is_worked_out_for_each_coverage_threshold_and_rival_rule():
    """``benchmarks/supported_mark.py`` chooses ``generation.min_coverage`` from one recorded run."""
    rows = [
        generated(holds_gold=True, relevance=0.9, coverage=0.9),
        generated(holds_gold=True, relevance=0.9, coverage=0.55),
        generated(relevance=0.9, coverage=0.3),  # a sibling's value: its sentence lacks the question's subject
        generated(holds_gold=True, relevance=0.9, coverage=1.0, ambiguous=True),
    ]
    base = GenerationSettings(min_answer_probability=0.0)
    shown = {
        (coverage, rivals): [
            supported_under(base.model_copy(update={"min_coverage": coverage, "rivals": rivals}))(r) for r in rows
        ]
        for coverage in (0.0, 0.5, 0.6)
        for rivals in (True, False)
    }
    assert shown[0.0, False] == [True, True, True, True]
    assert shown[0.5, True] == [True, True, False, False]
    assert shown[0.6, True] == [True, False, False, False] and shown[0.6, False][3] is True


def test_answer_metrics_count_abstentions_by_kind_and_the_judges_agreement_with_gold():
    rows = [
        generated(f1=1.0, holds_gold=True, flagged=False),  # right, passed
        generated(f1=0.2, flagged=True),  # wrong, caught
        generated(f1=0.0, flagged=False),  # wrong, missed
        generated(f1=1.0, holds_gold=True, flagged=True),  # right, wrongly flagged
        generated(outcome="model_declined", answer="not in the documents", citations=0, citations_valid=None),
        generated(category="unanswerable", outcome="gate", seconds=0.0),
        generated(category="unanswerable", flagged=True),
    ]
    metrics = answer_metrics(rows)
    assert metrics["f1"] == pytest.approx(2.2 / 5) and metrics["holds_gold"] == pytest.approx(2 / 5)
    assert metrics["answered_rate"] == {"answerable": 0.8, "unanswerable": 0.5, "out_of_corpus": None}
    assert metrics["answered_rate_if_refused"] == {"answerable": 0.4, "unanswerable": 0.0, "out_of_corpus": None}
    assert metrics["judge"] == {"flagged": 2, "wrong": 2, "precision": 0.5, "recall": 0.5}
    assert metrics["claims_supported"] == pytest.approx(2 / 5)
    assert metrics["outcomes"] == {"answered": 5, "gate": 1, "model_declined": 1}
    assert metrics["seconds_per_answer"] == 2.0  # the gate's abstention asked no model
    assert metrics["citations_valid"] == 1.0 and metrics["cites_unshown"] == 0 and metrics["uncited"] == 0.0


def test_supported_is_scored_against_holding_the_gold_answer():
    rows = [
        generated(holds_gold=True, supported=True),
        generated(holds_gold=True, supported=True),
        generated(holds_gold=False, supported=True),  # a span the passage holds, but not the answer
        generated(holds_gold=True, supported=False),  # right, but not copied from its passage
        generated(holds_gold=False, supported=False),
        generated(outcome="model_declined"),
        generated(category="unanswerable", supported=True),
        generated(category="unanswerable", supported=False),
        generated(category="out_of_corpus", supported=False),
        generated(category="out_of_corpus", outcome="gate"),
    ]
    metrics = answer_metrics(rows)
    # of the unanswerable and out-of-corpus questions that reached the model, the share shown as supported
    assert metrics["grounding"] == {
        "supported": 3 / 5,
        "precision": 2 / 3,
        "recall": 2 / 3,
        "unanswerable_shown_supported": pytest.approx(1 / 3),
    }
    assert metrics["unanswerable_reached_model"] == 3


def test_supported_is_worked_out_for_each_relevance_threshold_from_one_run():
    rows = [
        generated(holds_gold=True, supported=True, relevance=0.8),
        generated(holds_gold=True, supported=True, relevance=0.25),
        generated(holds_gold=False, supported=True, relevance=0.3),
        generated(holds_gold=True, supported=False, relevance=None),  # not grounded: never supported
        generated(category="out_of_corpus", supported=True, relevance=0.1),
        generated(category="unanswerable", supported=True, relevance=0.5),
    ]
    curve = answer_metrics(rows)["supported_at_relevance"]
    assert curve["0"] == {
        "supported": 0.75,
        "precision": pytest.approx(2 / 3),
        "recall": pytest.approx(2 / 3),
        "unanswerable_shown_supported": 1.0,
    }
    assert curve["0.3"] == {
        "supported": 0.5,
        "precision": 0.5,
        "recall": pytest.approx(1 / 3),
        "unanswerable_shown_supported": 0.5,
    }
    assert curve["0.6"]["unanswerable_shown_supported"] == 0.0 and curve["0.6"]["precision"] == 1.0


def test_supported_is_worked_out_for_each_answer_probability_threshold_with_the_runs_relevance_rule():
    rows = [
        generated(holds_gold=True, supported=True, relevance=0.8, answer_probability=0.97),
        generated(holds_gold=True, supported=True, relevance=0.5, answer_probability=None),  # not reported: kept
        generated(holds_gold=False, supported=True, relevance=0.6, answer_probability=0.55),
        generated(holds_gold=True, supported=False, relevance=0.1, answer_probability=0.99),  # off the question
        generated(category="out_of_corpus", supported=True, relevance=0.4, answer_probability=0.7),
        generated(category="unanswerable", supported=True, relevance=0.9, answer_probability=0.92),
    ]
    curve = answer_metrics(rows)["supported_at_answer_probability"]  # min_relevance 0.3, the default
    assert curve["0"] == {
        "supported": 0.75,
        "precision": pytest.approx(2 / 3),
        "recall": pytest.approx(2 / 3),
        "unanswerable_shown_supported": 1.0,
    }
    assert curve["0.6"] == {
        "supported": 0.5,
        "precision": 1.0,
        "recall": pytest.approx(2 / 3),
        "unanswerable_shown_supported": 1.0,
    }
    assert curve["0.75"]["unanswerable_shown_supported"] == 0.5 and curve["0.95"]["unanswerable_shown_supported"] == 0.0
    # the run's own relevance threshold holds for every probability threshold
    strict = load_settings(generation={"min_relevance": 0.7}).generation
    assert answer_metrics(rows, strict)["supported_at_answer_probability"]["0"]["supported"] == 0.25
    # and the relevance sweep holds the run's probability threshold
    sure = load_settings(generation={"min_answer_probability": 0.9}).generation
    assert answer_metrics(rows, sure)["supported_at_relevance"]["0.3"]["unanswerable_shown_supported"] == 0.5


def test_supported_is_worked_out_for_each_evidence_confidence_threshold_with_the_runs_other_rules():
    rows = [
        generated(holds_gold=True, supported=True, relevance=0.8, answer_probability=0.97, confidence=0.9),
        generated(holds_gold=False, supported=True, relevance=0.6, answer_probability=0.95, confidence=0.4),
        generated(holds_gold=True, supported=True, relevance=0.5, answer_probability=0.9, confidence=None),  # no gate
        generated(category="out_of_corpus", supported=True, relevance=0.4, answer_probability=0.9, confidence=0.45),
    ]
    curve = answer_metrics(rows)["supported_at_evidence_confidence"]
    assert curve["0"] == {
        "supported": 1.0,
        "precision": pytest.approx(2 / 3),
        "recall": 1.0,
        "unanswerable_shown_supported": 1.0,
    }
    assert curve["0.5"] == {
        "supported": pytest.approx(2 / 3),
        "precision": 1.0,
        "recall": 1.0,
        "unanswerable_shown_supported": 0.0,
    }
    # the other sweeps hold the run's own minimum evidence confidence
    strict = load_settings(generation={"min_evidence_confidence": 0.5}).generation
    assert answer_metrics(rows, strict)["supported_at_answer_probability"]["0"]["unanswerable_shown_supported"] == 0.0
    assert answer_metrics(rows, strict)["supported_at_relevance"]["0.3"]["supported"] == pytest.approx(2 / 3)


def test_a_scored_answer_keeps_its_lowest_claim_relevance_and_its_probability():
    claims = [
        Claim(text="Broncos [1]", citations=[1], grounded=True, relevance=0.5, supported=True),
        Claim(text="Santa Clara [2]", citations=[2], grounded=True, relevance=0.25, supported=False),
    ]
    answer = Answer(
        question="Who won where?",
        abstained=False,
        retrievers=5,
        clusters=[],
        timings_ms={},
        answer="Broncos [1]. Santa Clara [2].",
        claims=claims,
        answer_probability=0.81,
    )
    row = score_answer(EvalQuestion(id="q", question="Who won where?", answers=("Broncos",)), "quorum", answer, 1.0)
    assert row.relevance == 0.25 and row.supported is False and row.answer_probability == 0.81
    answer.claims[1] = Claim(text="Denver [3]", citations=[3], grounded=False, supported=False)
    assert (
        score_answer(
            EvalQuestion(id="q", question="Who won where?", answers=("Broncos",)), "quorum", answer, 1.0
        ).relevance
        is None
    )


def test_the_short_answer_is_scored_and_the_whole_answer_holds_the_gold():
    answer = Answer(
        question="Who won?",
        abstained=False,
        retrievers=5,
        clusters=[],
        timings_ms={},
        answer='"The Denver Broncos won." [1]\nAnswer: Broncos',
        short_answer="Broncos",
        claims=[
            Claim(text='"The Denver Broncos won." [1]', citations=[1], grounded=True, supported=True),
            Claim(text="Answer: Broncos", citations=[], grounded=True, supported=True),
        ],
    )
    row = score_answer(EvalQuestion(id="q", question="Who won?", answers=("Denver Broncos",)), "quorum", answer, 3.0)
    assert row.short_answer == "Broncos" and not row.em and row.f1 == pytest.approx(2 / 3)
    assert row.holds_gold and row.supported


def test_a_scored_answer_keeps_the_judges_scores_for_calibration():
    answer = Answer(
        question="Who won?",
        abstained=False,
        retrievers=5,
        clusters=[],
        timings_ms={},
        answer="The Broncos won [1]. They scored 24 [2].",
        claims=[
            Claim(text="The Broncos won [1].", citations=[1], supported=True, score=0.8),
            Claim(text="They scored 24 [2].", citations=[2], supported=False, score=0.2),
        ],
    )
    row = score_answer(EvalQuestion(id="q", question="Who won?", answers=("Denver Broncos",)), "quorum", answer, 3.0)
    assert row.claim_scores == [0.8, 0.2] and row.flagged and row.claims_supported == 1
    # "broncos won they scored 24" against "denver broncos": precision 1/5, recall 1/2
    assert row.holds_gold is False and row.f1 == pytest.approx(2 * (1 / 5) * (1 / 2) / (1 / 5 + 1 / 2))


def test_one_run_tells_the_answered_rate_at_every_decline_threshold():
    rows = [
        generated(decline_probability=0.05),
        generated(decline_probability=0.35),
        generated(outcome="model_declined", decline_probability=0.25),  # greedy declined, yet answers at t > 0.25
        generated(outcome="gate", seconds=0.0),  # withheld by the gate at every t
        generated(category="unanswerable", decline_probability=0.15),
        generated(category="unanswerable", outcome="model_declined", decline_probability=0.75),
    ]
    curve = answer_metrics(rows)["answered_rate_if_declined_at"]
    assert curve["0.1"] == {"answerable": 0.25, "unanswerable": 0.0, "out_of_corpus": None}
    assert curve["0.3"] == {"answerable": 0.5, "unanswerable": 0.5, "out_of_corpus": None}
    assert curve["0.5"] == curve["0.7"] == {"answerable": 0.75, "unanswerable": 0.5, "out_of_corpus": None}
    assert curve["0.8"]["unanswerable"] == 1.0
    # a backend that reports no decline probability (Ollama) gives no curve
    assert answer_metrics([generated(), generated(category="unanswerable")])["answered_rate_if_declined_at"] is None


def test_an_uncited_answer_is_not_counted_as_citing_an_unshown_passage():
    rows = [generated(), generated(citations=0, citations_valid=None), generated(citations=2, citations_valid=False)]
    metrics = answer_metrics(rows)
    assert metrics["citations_valid"] == 0.5 and metrics["cites_unshown"] == 1
    assert metrics["uncited"] == pytest.approx(1 / 3)


def test_paired_f1_is_a_wilcoxon_test_on_the_same_answerable_questions():
    better = [generated(f1=1.0) for _ in range(12)] + [generated(category="unanswerable")]
    worse = [generated(f1=0.0) for _ in range(10)] + [generated(f1=1.0)] * 2 + [generated(category="unanswerable")]
    paired = paired_f1(better, worse)
    assert (paired["questions"], paired["wins"], paired["losses"], paired["ties"]) == (12, 10, 0, 2)
    assert paired["mean_difference"] == pytest.approx(10 / 12) and paired["p_value"] < 0.01
    assert paired_f1(better, better)["p_value"] is None


def test_the_questions_to_answer_are_drawn_reproducibly():
    assert draw(10, 20, seed=1) == list(range(10))
    picked = draw(100, 5, seed=1)
    assert picked == draw(100, 5, seed=1) == sorted(picked) and len(set(picked)) == 5 and picked != draw(100, 5, 2)


def test_paired_comparison_counts_the_questions_only_one_system_answers():
    from qrag_qdrant.eval.metrics import paired_comparison

    questions = [EvalQuestion(id=str(n), question="q", answers=("gold",)) for n in range(12)]
    right, wrong = SystemAnswer(units=[["the gold text"]]), SystemAnswer(units=[["nothing"]])
    first = [right] * 10 + [wrong] * 2
    second = [right] * 2 + [wrong] * 10
    paired = paired_comparison(questions, first, second, "qa")
    recall = paired["answer_recall"]
    assert (recall["wins"], recall["losses"], recall["ties"]) == (8, 0, 4)
    assert recall["mean_difference"] == pytest.approx(8 / 12)
    assert recall["p_value"] == pytest.approx(2 / 2**8)  # exact McNemar: 8 of 8 discordant one way
    assert paired["mrr"]["wins"] == 8 and paired["mrr"]["p_value"] < 0.05  # Wilcoxon on 1/rank
    assert paired_comparison(questions, first, first, "qa")["answer_recall"]["p_value"] is None


def test_gold_documents_in_the_context_per_kind_of_question():
    """MultiHop-RAG's layout: each question names its gold documents and its kind."""

    def passages(*sources: str) -> list[Passage]:
        return [Passage(citation=n, source=s, start=0, end=1, text="x") for n, s in enumerate(sources, 1)]

    questions = [
        EvalQuestion("1", "q", ("Yes",), relevant_docs=("a", "b"), question_kind="comparison_query"),
        EvalQuestion("2", "q", ("Trump",), relevant_docs=("c", "d", "e", "f"), question_kind="inference_query"),
        EvalQuestion("3", "q", (), unanswerable=True, question_kind="null_query"),
    ]
    answers = [
        SystemAnswer(units=[["x"]], docs=["a", "z", "b"], passages=passages("a", "b")),
        SystemAnswer(units=[["x"]], docs=["z", "y", "x", "w", "c", "d"], passages=passages("c", "z")),
        SystemAnswer(units=[]),
    ]
    found = qa_metrics(questions, answers)["evidence_docs"]
    assert found["all"]["coverage"] == pytest.approx((1.0 + 0.25) / 2)
    assert found["all"]["all_evidence"] == 0.5
    assert found["all"]["doc_recall@4"] == pytest.approx((1.0 + 0.0) / 2)
    assert found["all"]["doc_recall@10"] == pytest.approx((1.0 + 0.5) / 2)
    assert found["comparison_query"]["all_evidence"] == 1.0 and found["inference_query"]["all_evidence"] == 0.0
    assert found["null_query"]["coverage"] is None and found["null_query"]["abstain_rate"]["unanswerable"] == 1.0
    assert "evidence_docs" not in qa_metrics(questions[2:], answers[2:])  # no question names gold documents


def test_paired_comparison_of_questions_that_need_several_documents_counts_their_gold_documents():
    from qrag_qdrant.eval.metrics import paired_comparison

    def shown(*sources: str) -> SystemAnswer:
        passages = [Passage(citation=n, source=s, start=0, end=1, text="x") for n, s in enumerate(sources, 1)]
        return SystemAnswer(units=[["x"]], passages=passages)

    questions = [EvalQuestion(str(n), "q", ("Yes",), relevant_docs=("a", "b")) for n in range(8)]
    first = [shown("a", "b")] * 7 + [shown("a")]
    second = [shown("a")] * 6 + [shown("a", "b"), shown("z")]
    paired = paired_comparison(questions, first, second, "qa")
    every = paired["all_evidence"]
    assert (every["wins"], every["losses"], every["ties"]) == (6, 0, 2) and every["p_value"] == pytest.approx(2 / 2**6)
    coverage = paired["coverage"]
    assert (coverage["wins"], coverage["losses"]) == (7, 0) and coverage["mean_difference"] == pytest.approx(3.5 / 8)
    assert "coverage" not in paired_comparison(questions[:0], first[:0], second[:0], "qa")


def test_answer_accuracy_by_kind_is_scored_as_the_multihop_paper_scores_it():
    """The gold answer in the reply as whole words, case aside ("Yes" for "yes"); a question with
    no answer is right only when it is declined; beside it, what answering "yes" to all would score."""

    def reply(text: str | None, reason: str | None = None) -> Answer:
        return Answer(
            question="q",
            abstained=reason is not None,
            abstain_reason=reason,
            retrievers=4,
            clusters=[],
            timings_ms={},
            answer=text,
        )

    comparison = EvalQuestion(id="c", question="Did both?", answers=("Yes",), question_kind="comparison_query")
    temporal = EvalQuestion(id="t", question="Before?", answers=("no",), question_kind="temporal_query")
    inference = EvalQuestion(id="i", question="Who?", answers=("Google",), question_kind="inference_query")
    null = EvalQuestion(id="n", question="Who?", unanswerable=True, question_kind="null_query")
    rows = [
        score_answer(comparison, "quorum", reply("yes [1] [3]"), 1.0),
        score_answer(temporal, "quorum", reply("Not in the documents", "model_declined"), 1.0),
        score_answer(temporal, "quorum", reply("Nothing changed; No [2]"), 1.0),
        score_answer(inference, "quorum", reply("Googles [1]"), 1.0),  # whole words only
        score_answer(null, "quorum", reply(None, "part_missing"), 0.0),
        score_answer(null, "quorum", reply("Sundar Pichai [1]"), 1.0),
    ]
    assert [row.accurate for row in rows] == [True, False, True, False, True, False]
    assert [row.yes_holds for row in rows] == [True, False, False, False, False, False]
    shown = answer_metrics(rows)["accuracy_by_kind"]
    assert shown["all"] == {"questions": 6, "accuracy": 0.5, "constant_yes": pytest.approx(1 / 6)}
    assert shown["temporal_query"] == {"questions": 2, "accuracy": 0.5, "constant_yes": 0.0}
    assert shown["null_query"]["accuracy"] == 0.5 and shown["comparison_query"]["constant_yes"] == 1.0
    assert (
        answer_metrics([score_answer(EvalQuestion(id="s", question="?", answers=("a",)), "q", reply("a"), 1.0)])[
            "accuracy_by_kind"
        ]
        is None
    )
