"""``qrag-qdrant eval`` on a conversational data set, end to end: a small one written here, its
follow-ups read three ways, through the CLI users run."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant.eval.conversations import load_conversations
from qrag_qdrant.retrieval.conversation import REWRITE_SYSTEM

from .cli_helpers import run
from .conversation_cases import FIRST, FOLLOW_UP, STAND_ALONE
from .ollama_standin import ollama_standin
from .sample_corpus import DOCUMENTS

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

CHESS_FOLLOW_UP = "When did they gain those moves?"


def conversation(id_: str, turns: list[tuple[str, str | None, list[str], str]]) -> dict:
    return {
        "id": id_,
        "turns": [
            {"turn": n, "question": q, "rewrite": r, "evidence_docs": docs, "answer": a, "answerability": "ANSWERABLE"}
            for n, (q, r, docs, a) in enumerate(turns, 1)
        ],
    }


def test_eval_reads_each_follow_up_three_ways_and_reports_first_turns_apart(tmp_path):
    root = tmp_path / "talks"
    for name, text in DOCUMENTS.items():
        (root / "corpus" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "corpus" / name).write_text(text)
    talks = [
        conversation(
            "volcano",
            [
                (FIRST, FIRST, ["volcanoes.md"], "Mauna Loa"),
                (FOLLOW_UP, STAND_ALONE, ["volcanoes.md"], "a hot spot"),
            ],
        ),
        conversation(
            "chess",
            [
                (
                    "Which pieces gained long-range moves in modern chess?",
                    None,
                    ["games/chess.txt"],
                    "the queen and bishop",
                ),
                (CHESS_FOLLOW_UP, None, ["games/chess.txt"], "near the end of the fifteenth century"),
            ],
        ),
    ]
    (root / "conversations.jsonl").write_text("".join(json.dumps(t) + "\n" for t in talks))
    rewrites = {
        FOLLOW_UP: STAND_ALONE,
        CHESS_FOLLOW_UP: "When did the queen and the bishop gain their long-range moves?",
    }
    with ollama_standin(tokens=["a hot spot ", "[1]"], rewrites=rewrites) as ollama:
        env = {"QRAG_OLLAMA_HOST": ollama.host, "QRAG_GENERATION_BACKEND": "ollama", "QRAG_GENERATION_JUDGE": "false"}
        args = ["eval", str(root), "--store", str(tmp_path / "store"), "--generate", "2", "--seed", "1"]
        result = run(
            *args, "--json-out", str(tmp_path / "out.json"), "--answers-out", str(tmp_path / "rows.jsonl"), env=env
        )
    assert result.exit_code == 0, result.stdout + result.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    assert (report["conversations"], report["turns"], report["follow_ups"]) == (2, 4, 2)
    assert report["first_turns_searched_as_typed"] is True
    follow = report["results"]["all"]["follow_ups"]
    assert follow["rewrite"]["rewritten"] == 1.0 and follow["last"]["rewritten"] == 0.0
    assert follow["rewrite"]["gold_in_evidence"] == 1.0 and follow["rewrite"]["answered"] == 2
    assert follow["human"]["answerable"] == 2 and follow["rewrite"]["token_f1"] is not None
    # every typed content word is searched, and neither follow-up reads two ways
    assert follow["rewrite"]["dropped_a_typed_word"] == 0 and follow["rewrite"]["asked_back_answerable"] == 0.0
    assert set(report["results"]["all"]["paired_vs_last"]) == {"rewrite", "human"}
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["variant"] for r in rows} == {"last", "rewrite", "human"}
    searched = {(r["variant"], r["id"]): r["searched_for"] for r in rows}
    assert searched["rewrite", "volcano:2"] == searched["human", "volcano:2"] == STAND_ALONE
    assert searched["last", "volcano:2"] == FOLLOW_UP
    assert all(r["dropped"] == [] and r["asked_back"] is False for r in rows)
    # a turn each variant sent the model the same way was answered once, not once per variant
    answers = [r for r in ollama.requests if r["messages"][0]["content"] != REWRITE_SYSTEM]
    prompts = {json.dumps(r["messages"]) for r in answers}
    assert len(answers) == len(prompts) <= 4
    assert "follow ups" in result.stdout and "first turns" in result.stdout


def test_a_turn_where_the_data_sets_agent_asked_back_is_marked(tmp_path):
    """INSCIT marks the turns where its human agent asked a clarifying question: eval reports how
    often we ask on those."""
    turns = [
        {
            "turn": 1,
            "question": "Tell me about the carers' leave.",
            "answer": "Which carer?",
            "response_type": "clarification",
            "evidence_docs": [],
        },
        {
            "turn": 2,
            "question": "The secondary one.",
            "answer": "4 weeks, unpaid.",
            "response_type": "directAnswer",
            "evidence_docs": ["leave.txt"],
        },
    ]
    (tmp_path / "conversations.jsonl").write_text(json.dumps({"id": "leave", "turns": turns}) + "\n")
    loaded = load_conversations(tmp_path)
    assert [(t.agent_asked, t.answerable, t.follow_up) for t in loaded] == [(True, False, False), (False, True, True)]
