"""benchmarks/prepare_data.py turns the official files' shapes into the layout eval reads."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from qrag_qdrant.eval import load_dataset

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "prepare_data.py"


def prepare():
    spec = importlib.util.spec_from_file_location("prepare_data", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_squad_2_file_becomes_a_qa_set_eval_reads(tmp_path):
    official = {
        "version": "v2.0",
        "data": [
            {
                "title": "Super_Bowl_50",
                "paragraphs": [
                    {
                        "context": "Super Bowl 50 was won by the Denver Broncos.",
                        "qas": [
                            {
                                "id": "q1",
                                "question": "Who won Super Bowl 50?",
                                "is_impossible": False,
                                "answers": [
                                    {"text": "Denver Broncos", "answer_start": 28},
                                    {"text": "Denver Broncos", "answer_start": 28},
                                ],
                            },
                        ],
                    },
                    {
                        "context": "The game was played in Santa Clara.",
                        "qas": [{"id": "q2", "question": "Who sang the anthem?", "is_impossible": True, "answers": []}],
                    },
                ],
            },
            {"title": "Normans", "paragraphs": [{"context": "Normandy is in France.", "qas": []}]},
        ],
    }
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(official))
    assert prepare().main(["squad", str(tmp_path / "dev-v2.0.json"), str(tmp_path / "set")]) == 0
    text = (tmp_path / "set" / "corpus" / "super-bowl-50.txt").read_text()
    assert text.split("\n\n") == ["Super Bowl 50 was won by the Denver Broncos.", "The game was played in Santa Clara."]
    dataset = load_dataset(tmp_path / "set")
    second, first = sorted(dataset.questions, key=lambda q: q.question)  # "Who sang" before "Who won"
    assert tuple(first.answers) == ("Denver Broncos",) and first.answerable
    assert not second.answerable
    assert sorted(p.name for p in (tmp_path / "set" / "corpus").iterdir()) == ["normans.txt", "super-bowl-50.txt"]


def test_a_beir_folder_becomes_a_relevance_set_with_the_test_queries_only(tmp_path):
    source = tmp_path / "scifact"
    (source / "qrels").mkdir(parents=True)
    (source / "corpus.jsonl").write_text(
        json.dumps({"_id": "101", "title": "Bees", "text": "Bees dance."})
        + "\n"
        + json.dumps({"_id": "202", "title": "", "text": "Ants march."})
        + "\n"
    )
    (source / "queries.jsonl").write_text(
        json.dumps({"_id": "1", "text": "Bees dance to tell where food is."})
        + "\n"
        + json.dumps({"_id": "2", "text": "A training query."})
        + "\n"
    )
    (source / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\t101\t1\n")
    assert prepare().main(["beir", str(source), str(tmp_path / "set")]) == 0
    assert (tmp_path / "set" / "corpus" / "101.txt").read_text() == "Bees\n\nBees dance."
    assert (tmp_path / "set" / "corpus" / "202.txt").read_text() == "Ants march."
    [query] = load_dataset(tmp_path / "set").questions
    assert query.question == "Bees dance to tell where food is." and tuple(query.relevant_docs) == ("101.txt",)


def test_a_missing_or_wrong_file_is_one_line_and_exit_1(tmp_path, capsys):
    assert prepare().main(["squad", str(tmp_path / "none.json"), str(tmp_path / "set")]) == 1
    (tmp_path / "bad.json").write_text("{}")
    assert prepare().main(["squad", str(tmp_path / "bad.json"), str(tmp_path / "set")]) == 1
    assert capsys.readouterr().err.count("\n") == 2


def test_eval_finds_a_set_by_name_in_qrag_data(tmp_path, monkeypatch):
    from qrag_qdrant.cli.eval import in_data_folder

    (tmp_path / "data" / "squad-dev").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    assert in_data_folder(Path("squad-dev")) == Path("squad-dev")  # no QRAG_DATA: as given
    monkeypatch.setenv("QRAG_DATA", str(tmp_path / "data"))
    assert in_data_folder(Path("squad-dev")) == tmp_path / "data" / "squad-dev"
    (tmp_path / "squad-dev").mkdir()
    assert in_data_folder(Path("squad-dev")) == Path("squad-dev")  # a folder here wins
