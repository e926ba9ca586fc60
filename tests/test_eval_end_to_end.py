"""The eval command end to end on tiny data sets the test writes itself."""

from __future__ import annotations

import json

import pytest


from .cli_helpers import run
from .sample_corpus import DOCUMENTS

QA = [
    {"id": "bees", "question": "What dance do honeybee foragers perform to show where flowers are?",
     "answers": ["waggle dance"]},
    {"id": "vesuvius", "question": "Which Roman towns did Mount Vesuvius bury in the year 79?",
     "answers": ["Pompeii"]},
    {"id": "fresnel", "question": "Who invented the lens that bends lighthouse light into a narrow beam?",
     "answers": ["Augustin Fresnel"]},
    {"id": "deep-blue", "question": "Which IBM machine defeated Garry Kasparov in 1997?", "answers": ["Deep Blue"]},
    {"id": "mongolia", "question": "What is the capital of Mongolia?", "answers": [], "unanswerable": True},
]
RELEVANCE = [
    {"id": "1", "question": "bees communicate the location of food with a dance", "relevant_docs": ["honeybees.txt"]},
    {"id": "2", "question": "steam and scoring help a loaf rise in the oven", "relevant_docs": ["sourdough.txt"]},
]


def write_dataset(root, name, rows):
    folder = root / name
    (folder / "corpus").mkdir(parents=True)
    for source, text in DOCUMENTS.items():  # flat: relevance judgements name plain file names
        (folder / "corpus" / source.split("/")[-1]).write_text(text)
    questions = "questions.jsonl" if "answers" in rows[0] else "queries.jsonl"
    (folder / questions).write_text("\n".join(json.dumps(row) for row in rows))
    return folder


@pytest.fixture
def tiny_qa(tmp_path):
    return write_dataset(tmp_path, "tiny-qa", QA)


def test_eval_qa_compares_every_system_on_the_same_questions(tiny_qa, tmp_path):
    out = tmp_path / "result.json"
    report = tmp_path / "report"
    result = run("eval", str(tiny_qa), "--json-out", str(out), "--report", str(report),
                 "--sweep", "quorum=1,2", "cluster_threshold=0.85")
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["dataset"] == "tiny-qa" and data["questions"] == 5
    assert data["config"]["namespace"] == "eval-tiny-qa"
    assert list(data["systems"]) == ["dense-c50", "dense-c100", "dense-c200", "bm25-c50", "bm25-c100",
                                     "qdrant-hybrid", "rrf-all", "quorum"]
    for metrics in data["systems"].values():
        assert set(metrics) == {"answer_recall", "mrr", "context_words", "abstain_rate", "p50_ms", "p95_ms"}
    quorum, hybrid = data["systems"]["quorum"], data["systems"]["qdrant-hybrid"]
    assert quorum["answer_recall"] == 1.0 and quorum["mrr"] == 1.0
    # the off-topic question: the quorum abstains, Qdrant's hybrid query always returns something
    assert quorum["abstain_rate"] == {"answerable": 0.0, "unanswerable": 1.0}
    assert hybrid["abstain_rate"]["unanswerable"] == 0.0
    assert [(p["quorum"], p["cluster_threshold"]) for p in data["sweep"]] == [(1, 0.85), (2, 0.85)]
    assert data["sweep"][1]["answer_recall"] == quorum["answer_recall"]
    assert sum(row["questions"] for row in data["quorum_support"].values()) == 4
    assert (report / "report.md").is_file() and (report / "recall_by_support.png").stat().st_size > 1000
    assert "| quorum |" in (report / "report.md").read_text()
    assert "quorum" in result.stdout  # the terminal table

    again = run("eval", str(tiny_qa), "--systems", "quorum,bm25-c100", "--json-out", str(out))
    assert again.exit_code == 0
    assert list(json.loads(out.read_text())["systems"]) == ["quorum", "bm25-c100"]


def test_eval_relevance_set(tmp_path):
    dataset = write_dataset(tmp_path, "tiny-rel", RELEVANCE)
    out = tmp_path / "result.json"
    result = run("eval", str(dataset), "--json-out", str(out))
    assert result.exit_code == 0, result.stderr
    systems = json.loads(out.read_text())["systems"]
    assert set(systems["quorum"]) == {"ndcg@10", "recall@100", "context_words", "abstain_rate", "p50_ms", "p95_ms"}
    assert systems["quorum"]["ndcg@10"] == 1.0 and systems["quorum"]["recall@100"] == 1.0


@pytest.mark.parametrize(("args", "message"), [
    (["--systems", "quorum,splade"], "unknown systems splade"),
    (["--sweep", "qorum=1"], "NAME one of"),
    (["quorum=1"], "did you mean --sweep"),
])
def test_eval_bad_options(tiny_qa, args, message):
    result = run("eval", str(tiny_qa), *args)
    assert result.exit_code != 0 and message in result.stderr + result.stdout
