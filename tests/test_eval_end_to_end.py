"""The eval command end to end on tiny data sets the test writes itself."""

from __future__ import annotations

import json
import math

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.retrieval.gate import QUORUM_FEATURES, GateModel

from .cli_helpers import assert_clean_error, run
from .ollama_standin import ollama_standin
from .sample_corpus import DOCUMENTS

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

QA = [
    {
        "id": "bees",
        "question": "What dance do honeybee foragers perform to show where flowers are?",
        "answers": ["waggle dance"],
    },
    {"id": "vesuvius", "question": "Which Roman towns did Mount Vesuvius bury in the year 79?", "answers": ["Pompeii"]},
    {
        "id": "fresnel",
        "question": "Who invented the lens that bends lighthouse light into a narrow beam?",
        "answers": ["Augustin Fresnel"],
    },
    {"id": "deep-blue", "question": "Which IBM machine defeated Garry Kasparov in 1997?", "answers": ["Deep Blue"]},
    {"id": "mongolia", "question": "What is the capital of Mongolia?", "answers": [], "unanswerable": True},
]
#: two to three questions written on each sample document, for a split by document
QA_BY_DOC = {
    "honeybees.txt": [
        ("What dance do honeybee foragers perform?", "waggle dance"),
        ("Who decoded the bee dance language?", "Karl von Frisch"),
        ("What do varroa mites threaten?", "colony"),
    ],
    "volcanoes.md": [
        ("Which volcano is the largest active one by volume?", "Mauna Loa"),
        ("Which towns did Vesuvius bury?", "Pompeii"),
    ],
    "sourdough.txt": [
        ("What leavens sourdough bread?", "starter"),
        ("Which bacterium is named after San Francisco?", "Lactobacillus sanfranciscensis"),
    ],
    "chess.txt": [("Which machine defeated Kasparov in 1997?", "Deep Blue")],
    "lighthouses.txt": [("Who invented the lighthouse lens in 1822?", "Augustin Fresnel")],
}
#: ``QA_BY_DOC`` as a data set's question rows, each naming its document
QA_BY_DOC_ROWS = [
    {"id": f"{doc}-{n}", "question": question, "answers": [answer], "doc": doc}
    for doc, qa in QA_BY_DOC.items()
    for n, (question, answer) in enumerate(qa)
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
    result = run(
        "eval",
        str(tiny_qa),
        "--json-out",
        str(out),
        "--report",
        str(report),
        "--sweep",
        "quorum=1,2",
        "cluster_threshold=0.85",
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    assert data["dataset"] == "tiny-qa" and data["questions"] == 5
    assert data["config"]["namespace"] == "eval-tiny-qa"
    assert list(data["systems"]) == [
        "dense-c50",
        "dense-c100",
        "bm25-c50",
        "bm25-c100",
        "qdrant-hybrid",
        "rrf-all",
        "quorum",
    ]
    for metrics in data["systems"].values():
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
    quorum, _hybrid = data["systems"]["quorum"], data["systems"]["qdrant-hybrid"]
    assert quorum["answer_recall"] == 1.0 and quorum["mrr"] == 1.0 and quorum["answered_recall"] == 1.0
    # the off-topic question: the quorum abstains; Qdrant's hybrid query returns chunks, which only its
    # own gate (on its top score and score gap) may withhold
    assert quorum["abstain_rate"] == {"answerable": 0.0, "unanswerable": 1.0, "out_of_corpus": None}
    # the four answerable questions come first, the one without evidence last: risks 0, 0, 0, 0, 1/5
    assert quorum["aurc"] == pytest.approx(0.04) and quorum["risk_coverage"][-1] == [1.0, 0.2]
    assert [(p["quorum"], p["cluster_threshold"]) for p in data["sweep"]] == [(1, 0.85), (2, 0.85)]
    assert data["sweep"][1]["answer_recall"] == quorum["answer_recall"]
    assert sum(row["questions"] for row in data["quorum_support"].values()) == 4
    assert (report / "report.md").is_file() and (report / "recall_by_support.png").stat().st_size > 1000
    assert (report / "risk_coverage.png").stat().st_size > 1000
    assert "| quorum |" in (report / "report.md").read_text()
    assert "abstain (ans / unans)" in (report / "report.md").read_text()
    assert "quorum" in result.stdout  # the terminal table

    again = run("eval", str(tiny_qa), "--systems", "quorum,bm25-c100", "--json-out", str(out))
    assert again.exit_code == 0
    assert list(json.loads(out.read_text())["systems"]) == ["quorum", "bm25-c100"]


def test_eval_generate_scores_each_systems_answers_from_the_same_model(tiny_qa, tmp_path):
    out, lines = tmp_path / "result.json", tmp_path / "answers.jsonl"
    alternatives = [("Foragers", math.log(0.65)), ("not", math.log(0.35))]
    with ollama_standin(
        tokens=["Foragers ", "perform ", "the waggle dance ", "[1]."], first_alternatives=alternatives
    ) as ollama:
        result = run(
            "eval",
            str(tiny_qa),
            "--systems",
            "quorum,qdrant-hybrid",
            "--generate",
            "5",
            "--json-out",
            str(out),
            "--answers-out",
            str(lines),
            env={"QRAG_GENERATION_BACKEND": "ollama", "QRAG_OLLAMA_HOST": ollama.host},
        )
        asked = len(ollama.requests)
    assert result.exit_code == 0, result.stderr
    generation = json.loads(out.read_text())["generation"]
    assert generation["questions"] == 5 and generation["model"] == "ollama:mistral"
    rows = generation["rows"]
    written = [json.loads(line) for line in lines.read_text().splitlines()]  # in the order they were scored
    key = lambda row: (row["id"], row["system"])  # noqa: E731
    assert len(rows) == 10 and sorted(written, key=key) == sorted(rows, key=key)
    # both gates withhold the off-topic question's context, so the model is not asked about it
    assert asked == sum(row["outcome"] != "gate" for row in rows) == 8
    quorum, hybrid = generation["systems"]["quorum"], generation["systems"]["qdrant-hybrid"]
    assert quorum["outcomes"] == {"answered": 4, "gate": 1} and quorum["answered_rate"]["unanswerable"] == 0.0
    assert hybrid["outcomes"] == {"answered": 4, "gate": 1} and hybrid["answered_rate"]["unanswerable"] == 0.0
    # the stand-in always says the waggle dance: right for the bees question only, of four answerable ones;
    # SQuAD's F1 of "foragers perform waggle dance" against "waggle dance" is 2 * 1/2 * 1 / (1/2 + 1)
    bees = next(row for row in rows if row["id"] == "bees" and row["system"] == "quorum")
    assert bees["holds_gold"] and not bees["em"] and bees["f1"] == pytest.approx(2 * (2 / 4) * 1 / (2 / 4 + 1))
    assert quorum["holds_gold"] == 0.25 and quorum["em"] == 0.0
    assert quorum["citations_valid"] == 1.0 and quorum["cites_unshown"] == 0 and quorum["uncited"] == 0.0
    assert quorum["claims_supported"] is None  # Ollama is no judge
    assert quorum["prompt_tokens"] > 100 and quorum["tokens_per_second"] == pytest.approx(500)
    paired = generation["paired_f1"]
    assert paired["systems"] == ["quorum", "qdrant-hybrid"] and paired["questions"] == 4
    assert paired["wins"] == paired["losses"] == 0 and paired["p_value"] is None  # the same answer everywhere
    assert "answers: 5 questions" in result.stdout and "Wilcoxon" in result.stdout
    # every answer began "not" with probability 0.35: below a threshold of 0.4 it would be declined
    assert {row["decline_probability"] for row in rows if row["outcome"] != "gate"} == {0.35}
    # each row keeps its gate's confidence in the context (to choose generation.min_evidence_confidence)
    assert all(0.0 <= row["confidence"] <= 1.0 for row in rows) and bees["confidence"] > 0.5
    curve = quorum["answered_rate_if_declined_at"]
    assert curve["0.3"]["answerable"] == 0.0 and curve["0.4"]["answerable"] == 1.0
    assert "answered rate by decline threshold" in result.stdout


def test_eval_generate_can_draw_only_some_kinds_of_question(tiny_qa, tmp_path):
    out = tmp_path / "result.json"
    with ollama_standin(tokens=["waggle dance ", "[1]"]) as ollama:
        env = {"QRAG_GENERATION_BACKEND": "ollama", "QRAG_OLLAMA_HOST": ollama.host}
        result = run(
            "eval",
            str(tiny_qa),
            "--systems",
            "quorum",
            "--generate",
            "5",
            "--generate-kinds",
            "unanswerable",
            "--json-out",
            str(out),
            env=env,
        )
        assert result.exit_code == 0, result.stderr
        rows = json.loads(out.read_text())["generation"]["rows"]
        assert [(row["id"], row["category"]) for row in rows] == [("mongolia", "unanswerable")]
        assert_clean_error(
            run("eval", str(tiny_qa), "--generate", "5", "--generate-kinds", "tricky", env=env),
            1,
            "--generate-kinds tricky",
        )


def test_eval_compares_query_expansions_with_quorum_and_reuses_what_the_model_wrote(tiny_qa, tmp_path):
    out, cache = tmp_path / "result.json", tmp_path / "expansions.jsonl"
    args = (
        "eval",
        str(tiny_qa),
        "--systems",
        "quorum,quorum+mq,quorum+hyde",
        "--json-out",
        str(out),
        "--expansions-cache",
        str(cache),
    )
    reply = ["- which dance do bee foragers perform\n", "- the Fresnel lens of lighthouses"]
    with ollama_standin(tokens=reply) as ollama:
        env = {"QRAG_GENERATION_BACKEND": "ollama", "QRAG_OLLAMA_HOST": ollama.host}
        result = run(*args, env=env)
        first_run = len(ollama.requests)
        again = run(*args, env=env)
        second_run = len(ollama.requests) - first_run
    assert result.exit_code == again.exit_code == 0, result.stderr
    assert first_run == 10 and second_run == 0  # 5 questions x 2 expansions, then all from the cache
    assert len(cache.read_text().splitlines()) == 10
    systems = json.loads(out.read_text())["systems"]
    assert list(systems) == ["quorum", "quorum+mq", "quorum+hyde"]
    mq, hyde = systems["quorum+mq"], systems["quorum+hyde"]
    assert mq["expansion"]["failed"] == 0 and mq["expansion"]["texts_mean"] == 2.0
    assert hyde["expansion"]["texts_mean"] == 1.0
    assert set(mq["vs_quorum"]) == {"answer_recall", "mrr"}
    paired = mq["vs_quorum"]["answer_recall"]
    assert paired["questions"] == 4
    assert paired["wins"] + paired["losses"] + paired["ties"] == 4
    assert mq["answer_recall"] - systems["quorum"]["answer_recall"] == pytest.approx(paired["mean_difference"])
    assert "query expansions against quorum" in again.stdout


def test_eval_relevance_set(tmp_path):
    dataset = write_dataset(tmp_path, "tiny-rel", RELEVANCE)
    out = tmp_path / "result.json"
    result = run("eval", str(dataset), "--json-out", str(out))
    assert result.exit_code == 0, result.stderr
    systems = json.loads(out.read_text())["systems"]
    assert set(systems["quorum"]) == {
        "ndcg@10",
        "recall@100",
        "context_words",
        "abstain_rate",
        "aurc",
        "risk_coverage",
        "p50_ms",
        "p95_ms",
    }
    assert systems["quorum"]["ndcg@10"] == 1.0 and systems["quorum"]["recall@100"] == 1.0


def test_held_out_documents_make_out_of_corpus_questions_and_rows_train_a_gate(tmp_path):
    dataset = write_dataset(tmp_path, "tiny-split", QA_BY_DOC_ROWS)
    out, rows_out = tmp_path / "result.json", tmp_path / "rows.jsonl"
    result = run(
        "eval",
        str(dataset),
        "--hold-out",
        "0.4",
        "--split-seed",
        "3",
        "--json-out",
        str(out),
        "--rows-out",
        str(rows_out),
        "--foreign",
        str(write_dataset(tmp_path, "tiny-rel", RELEVANCE)),
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(out.read_text())
    held = data["held_out_docs"]
    assert len(held) == 2 and data["config"]["namespace"] == "eval-tiny-split-held-2-s3"
    on_held = sum(len(QA_BY_DOC[doc]) for doc in held)
    # a foreign question on a document this index holds is no out-of-corpus question: it is left out
    foreign = sum(all(doc in held for doc in row["relevant_docs"]) for row in RELEVANCE)
    assert data["categories"] == {
        "answerable": len(QA_BY_DOC_ROWS) - on_held,
        "unanswerable": 0,
        "out_of_corpus": on_held + foreign,
    }
    assert "abstain (ans / ooc)" in result.stdout
    table = [json.loads(line) for line in rows_out.read_text().splitlines()]
    assert len(table) == 7 * (len(QA_BY_DOC_ROWS) + foreign)  # every system, every question
    quorum_rows = [r for r in table if r["system"] == "quorum"]
    assert all(not r["label"] for r in quorum_rows if r["category"] == "out_of_corpus")
    assert {r["group"] for r in quorum_rows if not r["id"].startswith("foreign:")} == set(QA_BY_DOC)
    assert all(set(r["features"]) == set(QUORUM_FEATURES) for r in quorum_rows if r["features"])

    model_path = tmp_path / "gate.json"
    trained = run(
        "gate", "train", str(rows_out), "--out", str(model_path), "--test-share", "0.4", "--target-abstain", "0.0"
    )
    assert trained.exit_code == 0, trained.stderr
    model = GateModel.load(model_path)
    assert set(model.systems) >= {"quorum", "qdrant-hybrid", "rrf-all"}
    assert list(model.systems["quorum"].features) == list(QUORUM_FEATURES)
    assert model.info["trained_on"]["rows"] == [str(rows_out)]
    assert "retrieval.gate_model" in trained.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--systems", "quorum,splade"], "unknown systems splade"),
        (["--sweep", "qorum=1"], "NAME one of"),
        (["quorum=1"], "did you mean --sweep"),
    ],
)
def test_eval_bad_options(tiny_qa, args, message):
    result = run("eval", str(tiny_qa), *args)
    assert result.exit_code != 0 and message in result.stderr + result.stdout


def test_a_gate_is_trained_for_a_namespace_of_other_retrievers_and_answers_with_them(tmp_path):
    """Three voters (one chunking's dense and BM25 vectors, and the other chunking's BM25): the rows
    of ``eval`` train a gate for them, and a query on the namespace is gated by it."""
    config = tmp_path / "three.toml"
    config.write_text(
        "retrievers = [\n"
        '  { kind = "dense", size = 50, overlap = 25 },\n'
        '  { kind = "bm25", size = 50, overlap = 25 },\n'
        '  { kind = "bm25", size = 100, overlap = 50 },\n'
        "]\n"
    )
    rows_out, model_path = tmp_path / "rows.jsonl", tmp_path / "gate.json"
    store, dataset = tmp_path / "store", write_dataset(tmp_path, "tiny-three", QA_BY_DOC_ROWS)
    evaluated = run(
        "eval", str(dataset), "--config", str(config), "--store", str(store),
        "--systems", "quorum", "--hold-out", "0.4", "--split-seed", "3", "--rows-out", str(rows_out),
    )  # fmt: skip
    assert evaluated.exit_code == 0, evaluated.stderr
    trained = run("gate", "train", str(rows_out), "--out", str(model_path), "--test-share", "0.4")
    assert trained.exit_code == 0, trained.stderr
    gate = GateModel.load(model_path)

    question, namespace = "How do honeybees tell each other where flowers are?", "eval-tiny-three-held-2-s3"
    found = {}
    for name, model in (("shipped", None), ("own", model_path)):
        with QuorumRAG.from_config(config, store=store, namespace=namespace, retrieval={"gate_model": model}) as rag:
            found[name] = rag.retrieve(question)
    shipped, own = found["shipped"], found["own"]
    assert own.retrievers == 3 and own.clusters == shipped.clusters and own.gate_features == shipped.gate_features
    assert own.confidence == pytest.approx(gate.confidence("quorum", own.gate_features), abs=5e-4)  # 3 digits
    assert own.confidence != pytest.approx(shipped.confidence, abs=1e-3)
