"""The evidence gate: its features, its model file, its decision, and abstention end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.eval.dataset import EvalQuestion
from qrag_qdrant.eval.metrics import SystemAnswer, risk_coverage
from qrag_qdrant.retrieval.gate import (
    DEFAULT_MODEL,
    QUORUM_FEATURES,
    GateModel,
    LogisticGate,
    decide,
    list_features,
)
from qrag_qdrant.store.edge import EdgeStore

from .abstention_cases import IN_CORPUS, OUT_OF_CORPUS
from .cli_helpers import assert_clean_error, run


def test_decide_names_the_reason():
    assert decide(0, None, 0.5) == "no_quorum"
    assert decide(0, 0.9, 0.0) == "no_quorum"  # no evidence is never answered, gate or not
    assert decide(3, 0.2, 0.5) == "low_confidence"
    assert decide(3, 0.7, 0.5) is None
    assert decide(3, 0.2, 0.0) is None  # 0 turns the gate off


def test_logistic_gate_is_a_standardised_sigmoid():
    gate = LogisticGate(("a", "b"), np.array([1.0, 0.0]), np.array([2.0, 1.0]), np.array([1.0, -1.0]), 0.5, 0.3)
    z = (3.0 - 1.0) / 2.0 * 1.0 + (2.0 - 0.0) / 1.0 * -1.0 + 0.5
    assert gate.confidence({"a": 3.0, "b": 2.0, "ignored": 9.0}) == pytest.approx(1 / (1 + np.exp(-z)))
    assert LogisticGate.from_dict(gate.as_dict()).as_dict() == gate.as_dict()


def test_the_shipped_model_covers_every_feature_and_says_what_it_was_trained_on():
    model = GateModel.load()
    quorum = model.systems["quorum"]
    assert list(quorum.features) == list(QUORUM_FEATURES)
    assert 0.0 < quorum.threshold < 1.0
    assert model.info["version"] == "v2" and model.info["trained_on"]["train_articles"]
    assert {"squad-dev", "squad2-dev", "scifact"} <= set(model.info["indexes"].values())  # fitted on a mix
    assert not set(model.info["trained_on"]["train_articles"]) & set(model.info["trained_on"]["test_articles"])
    for name in ("qdrant-hybrid", "rrf-all"):  # the baselines' gates, on their own lists
        assert list(model.systems[name].features) == ["top_score", "score_gap"]


def test_a_bad_model_file_is_one_config_error(tmp_path):
    with pytest.raises(ConfigError, match="gate model not found"):
        GateModel.load(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"systems": {"quorum": {"features": ["a"]}}}')
    with pytest.raises(ConfigError, match="not a qrag-qdrant gate file"):
        GateModel.load(broken)


def test_list_features():
    assert list_features([0.9, 0.6, 0.5]) == {"top_score": 0.9, "score_gap": pytest.approx(0.3)}
    assert list_features([0.4]) == {"top_score": 0.4, "score_gap": 0.4}
    assert list_features([]) == {"top_score": 0.0, "score_gap": 0.0}


def test_risk_coverage_answers_the_most_confident_first():
    questions = [EvalQuestion(str(i), "q", answers=("yes",)) for i in range(4)]
    right, wrong = [["yes"]], [["no"]]
    answers = [
        SystemAnswer(right, confidence=0.9),
        SystemAnswer(wrong, confidence=0.8),
        SystemAnswer(right, confidence=0.7),
        SystemAnswer([], confidence=None),
    ]
    result = risk_coverage(questions, answers, "qa")
    # order 0, 1, 2 then the one without evidence: risks 0/1, 1/2, 1/3, 2/4
    assert result["aurc"] == pytest.approx(np.mean([0, 1 / 2, 1 / 3, 2 / 4]))
    assert result["curve"][-1] == [1.0, 0.5]
    ungated = risk_coverage(questions, [SystemAnswer(a.units) for a in answers], "qa")
    assert ungated["aurc"] == pytest.approx(0.5)  # no gate: flat at the error rate


@pytest.fixture
def sample_rag(tmp_path, corpus, embedder):
    settings = load_settings(store=tmp_path / "store")
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        yield rag


def test_abstention_cases(sample_rag):
    """In-corpus questions are answered from the right source; out-of-corpus ones abstained on.
    A change that breaks abstention fails here."""
    for question, source in IN_CORPUS:
        evidence = sample_rag.retrieve(question)
        assert not evidence.abstained, (question, evidence.confidence)
        assert evidence.clusters[0].passages[0].source == source, question
    abstained = {question: sample_rag.retrieve(question) for question in OUT_OF_CORPUS}
    missed = [(q, e.confidence) for q, e in abstained.items() if not e.abstained]
    assert len(missed) <= len(OUT_OF_CORPUS) // 5, missed  # the target: at least 80% abstained
    assert {e.abstain_reason for e in abstained.values() if e.abstained} <= {"no_quorum", "low_confidence"}


def test_the_gate_can_be_turned_off(tmp_path, corpus, embedder):
    settings = load_settings(store=tmp_path / "store", retrieval={"min_confidence": 0})
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        results = [rag.retrieve(question) for question in OUT_OF_CORPUS]
    assert not any(e.abstain_reason == "low_confidence" for e in results)
    assert all(e.confidence is not None for e in results)


@pytest.mark.slow
def test_query_json_and_text_say_why_it_abstained(corpus, tmp_path):
    store = str(tmp_path / "store")
    assert run("ingest", str(corpus), "--store", store).exit_code == 0
    weak = "How many eyes does a jumping spider have?"
    answered = run("query", "--no-generate", "--json", IN_CORPUS[0][0], "--store", store)
    data = json.loads(answered.stdout)
    assert data["abstained"] is False and data["abstain_reason"] is None and 0 < data["confidence"] <= 1
    strict = run(
        "query", "--no-generate", "--json", weak, "--store", store, env={"QRAG_RETRIEVAL_MIN_CONFIDENCE": "0.999"}
    )
    data = json.loads(strict.stdout)
    assert data["abstained"] is True and data["abstain_reason"] == "low_confidence"
    assert data["clusters"], "the weak evidence is still shown"
    text = run("query", "--no-generate", weak, "--store", store, env={"QRAG_RETRIEVAL_MIN_CONFIDENCE": "0.999"})
    assert "too weak to answer from" in text.stdout and "below the gate's 0.999" in text.stdout
    assert "Weak evidence" in text.stdout
    unrelated = run("query", "--no-generate", "--json", "zzzz qqqq xxxx", "--store", store)
    assert json.loads(unrelated.stdout)["abstain_reason"] in {"no_quorum", "low_confidence"}


def test_a_bad_min_confidence_is_one_line(corpus, tmp_path):
    result = run(
        "query",
        "--no-generate",
        "bees?",
        "--store",
        str(tmp_path / "store"),
        env={"QRAG_RETRIEVAL_MIN_CONFIDENCE": "1.5"},
    )
    assert_clean_error(result, 1, "retrieval.min_confidence")


def test_a_custom_gate_model_is_used(tmp_path, corpus, embedder):
    model = GateModel.load(DEFAULT_MODEL)
    always = {
        **model.systems,
        "quorum": LogisticGate(
            model.systems["quorum"].features,
            model.systems["quorum"].mean,
            model.systems["quorum"].scale,
            np.zeros(len(QUORUM_FEATURES)),
            -5.0,
            0.5,
        ),
    }
    path = tmp_path / "never.json"
    GateModel(always, model.info).save(path)
    settings = load_settings(store=tmp_path / "store", retrieval={"gate_model": path})
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        evidence = rag.retrieve(IN_CORPUS[0][0])
    assert evidence.abstain_reason == "low_confidence" and evidence.confidence < 0.01
