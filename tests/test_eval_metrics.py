"""The eval's metric plumbing on tiny hand-made cases with exact expected values."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant.errors import ConfigError
from qrag_qdrant.eval import DatasetError, EvalQuestion, load_dataset, parse_sweep
from qrag_qdrant.eval.metrics import (
    SystemAnswer,
    first_answer_rank,
    holds_answer,
    normalize_answer,
    qa_metrics,
    relevance_metrics,
    support_profile,
)


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
        SystemAnswer([["no"], ["the GOLD here"]], latency_ms=10),   # rank 2
        SystemAnswer([["gold first"], ["x y z"]], latency_ms=20),    # rank 1
        SystemAnswer([], latency_ms=30),                             # abstained
        SystemAnswer([], latency_ms=40),                             # abstained on an unanswerable one
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
    assert set(metrics) == {"answer_recall", "answered_recall", "mrr", "context_words", "abstain_rate", "aurc",
                            "risk_coverage", "p50_ms", "p95_ms"}


def test_out_of_corpus_and_gated_answers_count_as_abstentions_of_their_kind():
    questions = [q("1"), q("2"), EvalQuestion("3", "elsewhere?", out_of_corpus=True)]
    answers = [SystemAnswer([["gold"]], confidence=0.9), SystemAnswer([["gold"]], confidence=0.2, gated=True),
               SystemAnswer([["something"]], confidence=0.1, gated=True)]
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
    questions = [EvalQuestion("q1", "x", relevant_docs=("d1.txt",)),
                 EvalQuestion("q2", "y", relevant_docs=("d2.txt", "d3.txt"))]
    answers = [SystemAnswer([["t"]], docs=["d9.txt", "d1.txt"]), SystemAnswer([], docs=[])]
    metrics = relevance_metrics(questions, answers)
    # q1: relevant at rank 2 -> nDCG 1/log2(3); q2: nothing retrieved -> 0
    assert metrics["ndcg@10"] == pytest.approx((1 / 1.584962500721156) / 2)
    assert metrics["recall@100"] == pytest.approx(0.5)
    assert metrics["abstain_rate"] == {"answerable": 0.5, "unanswerable": None, "out_of_corpus": None}


def test_support_profile_tells_how_often_the_top_cluster_is_right():
    questions = [q("1"), q("2"), q("3"), q("4", answers=(), unanswerable=True)]
    answers = [SystemAnswer([["gold"]], support=4), SystemAnswer([["no"]], support=4),
               SystemAnswer([["gold"]], support=2), SystemAnswer([["gold"]], support=3)]
    assert support_profile(questions, answers, "qa") == {
        "2": {"questions": 1, "top_cluster_right": 1.0, "unanswerable": 0},
        "3": {"questions": 0, "top_cluster_right": None, "unanswerable": 1},
        "4": {"questions": 2, "top_cluster_right": 0.5, "unanswerable": 0}}


def test_sweep_grid():
    assert parse_sweep(["quorum=1,2", "rrf_k=10,60"]) == [
        {"quorum": 1, "rrf_k": 10}, {"quorum": 1, "rrf_k": 60}, {"quorum": 2, "rrf_k": 10}, {"quorum": 2, "rrf_k": 60}]
    assert parse_sweep(["cluster_threshold=0.75"]) == [{"cluster_threshold": 0.75}]
    with pytest.raises(ConfigError, match="NAME one of"):
        parse_sweep(["quorom=1"])
    with pytest.raises(ConfigError, match="are not int values"):
        parse_sweep(["quorum=x"])


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
