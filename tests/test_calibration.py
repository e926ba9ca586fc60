"""``gate calibrate``: questions from the namespace's own passages, held-out documents out of the
index, a threshold kept with the collections and used by every query of that namespace."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

import pytest

from qrag_qdrant.calibration.namespace import (
    PROMPT_VERSION,
    QuestionCache,
    blend_weight,
    blended,
    calibrate,
    question_writer,
    save,
    sentence_question,
)
from qrag_qdrant.errors import QragError
from qrag_qdrant.retrieval.gate import DEFAULT_MODEL, GateModel
from qrag_qdrant.store.base import CALIBRATED_GATE
from qrag_qdrant.text.terms import terms

from .cli_helpers import assert_clean_error, run

SHIPPED_THRESHOLD = GateModel.load(DEFAULT_MODEL).systems["quorum"].threshold


class CountingCompleter:
    """A model that writes a question naming the passage's first word, and counts its calls."""

    def __init__(self):
        self.calls = 0

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        self.calls += 1
        passage = prompt.split("Passage:\n", 1)[1]
        return f"Question: What does the text say about {passage.split()[0]}?\n"


@pytest.mark.slow
def test_calibrate_keeps_a_threshold_every_query_of_the_namespace_uses(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    _, write = question_writer(rag.settings, lambda: None, "sentences", 0, QuestionCache(Path("unused.jsonl")))
    result = calibrate(rag.settings, rag.store, rag.pipeline, write, "sentences", passages=40, hold_out=0.3)
    categories = {row["category"] for row in result.rows}
    assert categories == {"answerable", "out_of_corpus"}
    # a held-out document's question never finds its own passage: no search returns that document
    assert not any(row["label"] for row in result.rows if row["category"] == "out_of_corpus")
    assert any(row["label"] for row in result.rows if row["category"] == "answerable")
    threshold = result.gate.systems["quorum"].threshold
    assert threshold != SHIPPED_THRESHOLD
    save(rag.store, [spec.name for spec in rag.settings.collections], result.gate)

    fresh = open_rag()  # a new pipeline on the same namespace finds it
    assert fresh.retrieve("How do honeybees communicate?").gate_threshold == threshold
    assert fresh.coordinator.gate.info["calibrated_on"]["questions"] == "sentences"
    assert len(result.risk_coverage) > 1 and result.risk_coverage[0]["abstain_answerable"] == 0.0


@pytest.mark.slow
def test_held_out_sources_are_never_returned(open_rag, corpus):
    rag = open_rag(retrieval={"exclude_sources": ["honeybees.txt"]})
    rag.ingest(corpus)
    evidence = rag.retrieve("How does a honeybee forager tell her sisters the direction of flowers?")
    assert all(p.source != "honeybees.txt" for p in evidence.passages)
    assert rag.coordinator.views.term_stats.frequencies(terms("forager")).tolist() == [0]  # its words are out too


@pytest.mark.slow
def test_model_questions_are_cached_so_a_rerun_asks_nothing(open_rag, corpus, tmp_path):
    rag = open_rag()
    rag.ingest(corpus)
    model = CountingCompleter()
    cache_file = tmp_path / "cache" / "questions.jsonl"
    name, write = question_writer(rag.settings, lambda: model, "auto", 0, QuestionCache(cache_file))
    assert name.startswith("model:") and name.endswith(f"prompt-{PROMPT_VERSION}")  # a new prompt, new questions
    first = calibrate(rag.settings, rag.store, rag.pipeline, write, name, passages=12)
    asked = model.calls
    assert asked == len(first.rows) > 0
    assert all(row["id"].startswith("What does the text say about") for row in first.rows)
    _, again = question_writer(rag.settings, lambda: model, "auto", 0, QuestionCache(cache_file))
    second = calibrate(rag.settings, rag.store, rag.pipeline, again, name, passages=12)
    assert model.calls == asked and [r["id"] for r in second.rows] == [r["id"] for r in first.rows]


def test_without_a_model_auto_falls_back_to_sentences_and_model_says_why(settings):
    def no_model():
        raise QragError("no model installed")

    assert question_writer(settings, no_model, "auto", 0, QuestionCache(Path("x.jsonl")))[0] == "sentences"
    with pytest.raises(QragError, match="no model installed"):
        question_writer(settings, no_model, "model", 0, QuestionCache(Path("x.jsonl")))
    words = [
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
    ]
    query = sentence_question("Short one. " + " ".join(words) + ".", seed=1)
    assert len(query.split()) == 12 and query in " ".join(words) + "."


@pytest.mark.slow
def test_cli_calibrate_then_rebuild_keeps_it_and_remove_drops_it(corpus):
    assert run("ingest", str(corpus)).exit_code == 0
    result = run("gate", "calibrate", "--passages", "30", "--questions", "sentences", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["calibration"]["passages"] > 0 and report["risk_coverage"]
    assert report["calibration"]["blend"] == 0.1  # the shipped gate's weight for questions cut from sentences
    threshold = report["threshold"]

    def query_threshold() -> float:
        answer = run("query", "How do honeybees communicate?", "--no-generate", "--json")
        assert answer.exit_code == 0, answer.stderr
        return json.loads(answer.stdout)["gate_threshold"]

    assert query_threshold() == threshold
    assert run("ingest", str(corpus), "--rebuild").exit_code == 0
    assert query_threshold() == threshold  # the rebuilt collections kept it
    assert run("gate", "calibrate", "--remove").exit_code == 0
    assert query_threshold() == SHIPPED_THRESHOLD


def test_cli_calibrate_refuses_bad_input_in_one_line(corpus, tmp_path):
    usage = run("gate", "calibrate", "--questions", "poems")
    assert usage.exit_code == 2 and "poems" in usage.stderr and "Traceback" not in usage.stderr
    usage = run("gate", "calibrate", "--blend", "1.5")
    assert usage.exit_code == 2 and "--blend" in usage.stderr and "Traceback" not in usage.stderr
    assert_clean_error(run("gate", "calibrate", "--store", str(tmp_path / "empty")), 1, "ingest")


@pytest.mark.slow
def test_the_calibration_is_an_attachment_of_each_collection(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    names = [spec.name for spec in rag.settings.collections]
    save(rag.store, names, GateModel.load(DEFAULT_MODEL))
    assert all(rag.store.attachment(name, CALIBRATED_GATE) for name in names)
    save(rag.store, names, None)
    assert not any(rag.store.attachment(name, CALIBRATED_GATE) for name in names)


def logit(p: float) -> float:
    return math.log(p / (1 - p))


@pytest.mark.slow
def test_the_kept_threshold_moves_the_measured_share_of_the_way_from_the_shipped_one(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    _, write = question_writer(rag.settings, lambda: None, "sentences", 0, QuestionCache(Path("unused.jsonl")))
    measured = calibrate(rag.settings, rag.store, rag.pipeline, write, "sentences", passages=40, hold_out=0.3)
    info = measured.gate.info["calibrated_on"]
    synthetic, kept = info["synthetic_threshold"], measured.gate.systems["quorum"].threshold
    assert info["shipped_threshold"] == SHIPPED_THRESHOLD and info["blend"] == 0.1
    assert synthetic != SHIPPED_THRESHOLD and min(synthetic, SHIPPED_THRESHOLD) < kept < max(
        synthetic, SHIPPED_THRESHOLD
    )
    assert logit(kept) == pytest.approx(0.9 * logit(SHIPPED_THRESHOLD) + 0.1 * logit(synthetic), abs=1e-3)
    all_the_way = calibrate(
        rag.settings, rag.store, rag.pipeline, write, "sentences", passages=40, hold_out=0.3, blend=1.0
    )
    assert all_the_way.gate.systems["quorum"].threshold == synthetic  # the same questions, the same cut


def test_blending_thresholds_in_logits():
    assert blended(0.2, 0.8, 0.5) == 0.5
    assert blended(0.13, 0.44, 0.0) == 0.13 and blended(0.13, 0.44, 1.0) == 0.44
    assert 0.0 < blended(0.13, 0.0, 0.73) < 0.13  # a cut of 0 (abstain on nothing) stays a number
    assert 0.13 < blended(0.13, 0.44, 0.73) < 0.44
    assert blend_weight(GateModel.load(DEFAULT_MODEL), "model:packaged:prompt-1") == 0.65
    assert blend_weight(GateModel({}, {}), "model:packaged:prompt-1") == 1.0  # a gate file that measured none
