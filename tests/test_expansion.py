"""Query expansions (retrieval.expansions): the model's rewrites and hypothetical answers are
searched beside the question, add rank but never support, and their failure changes nothing."""

from __future__ import annotations

import json
import threading

import pytest

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError, GenerationError
from qrag_qdrant.retrieval.clustering import greedy_clusters
from qrag_qdrant.retrieval.expansion import ExpansionFailed, ExpansionPlan, parse_passage, parse_rewrites
from qrag_qdrant.retrieval.fusion import RankedList, reciprocal_rank_fusion
from qrag_qdrant.retrieval.quorum import apply_quorum

from .cli_helpers import run
from .coordinator_helpers import hit
from .ollama_standin import ollama_standin

BEES = "How does a honeybee forager tell her sisters the direction of flowers?"
#: shares no word with the corpus: searched alone, no two retrievers agree on anything
OPAQUE = "Qxv zzorp wibble?"


class ScriptedModel:
    """A completer that replies from a script and records what it was asked."""

    def __init__(self, replies: dict[str, str] | None = None, error: Exception | None = None):
        self.replies, self.error = replies or {}, error
        self.prompts: list[tuple[str, str, int]] = []

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        self.prompts.append((system, prompt, max_tokens))
        if self.error:
            raise self.error
        kind = "multi_query" if "search queries" in system else "hyde"
        return self.replies.get(kind, "")


class StalledModel:
    """A completer that never answers until it is told to stop; records that it was."""

    def __init__(self) -> None:
        self.stopped = threading.Event()

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        cancelled.wait()
        self.stopped.set()
        return "- waggle dance direction of flowers"


def test_rewrites_lose_bullets_numbering_repeats_and_the_question():
    reply = (
        '- How do bees signal where flowers are?\n2. "Waggle dance meaning"\n\n* How do bees signal '
        "where flowers are?\nQuery 3: bee communication of food location\nok\n" + BEES
    )
    assert parse_rewrites(reply, 3, BEES) == [
        "How do bees signal where flowers are?",
        "Waggle dance meaning",
        "bee communication of food location",
    ]
    assert parse_rewrites(reply, 1, BEES) == ["How do bees signal where flowers are?"]
    with pytest.raises(ExpansionFailed, match="no rewrite"):
        parse_rewrites(f"- {BEES}\n-\nyes", 3, BEES)


def test_a_hypothetical_answer_is_one_passage_and_a_fragment_is_refused():
    assert parse_passage("Foragers   perform the\nwaggle dance.", 1, BEES) == ["Foragers perform the waggle dance."]
    with pytest.raises(ExpansionFailed, match="too short"):
        parse_passage("I don't know.", 1, BEES)
    with pytest.raises(ExpansionFailed, match="declined"):
        parse_passage("I'm sorry, but I can't answer questions about bees.", 1, BEES)


def test_expansions_are_checked_when_the_settings_are_read():
    with pytest.raises(ConfigError, match=r"expansion 'multi query'.*NAME:COUNT"):
        load_settings(retrieval={"expansions": ["multi query"]})
    with pytest.raises(ConfigError, match="each expansion at most once"):
        load_settings(retrieval={"expansions": ["hyde", "hyde:1"]})
    with pytest.raises(ConfigError, match="retrieval.expansions 'rewrite' is not registered; known: hyde, multi_query"):
        ExpansionPlan.from_settings(load_settings(retrieval={"expansions": ["rewrite"]}))
    with pytest.raises(ConfigError, match="hyde writes at most 1"):
        ExpansionPlan.from_settings(load_settings(retrieval={"expansions": ["hyde:2"]}))


def test_each_retriever_searches_its_own_expansions_or_the_shared_ones():
    settings = load_settings(
        retrieval={"expansions": ["multi_query:2", "hyde"]},
        retrievers=[
            {"kind": "dense", "size": 50, "overlap": 25},
            {"kind": "dense", "size": 100, "overlap": 50, "expansions": ["multi_query:3"]},
            {"kind": "bm25", "size": 100, "overlap": 50, "expansions": []},
        ],
    )
    plans = {plan.kind.name: plan for plan in ExpansionPlan.from_settings(settings)}
    assert plans["multi_query"].count == 3  # one call writes the most any retriever searches
    assert plans["multi_query"].retrievers == {"dense-c50": 2, "dense-c100": 3}
    assert plans["hyde"].retrievers == {"dense-c50": 1}
    assert ExpansionPlan.from_settings(load_settings()) == []  # off by default


def test_rewrites_add_rank_but_one_retriever_never_makes_a_quorum():
    """dense-c50 finds X for the question and for three rewrites: more RRF, still one vote."""
    x, y = hit("x"), hit("y", vector=(0.0, 1.0, 0.0), source="b.txt")
    lists = [
        RankedList("dense-c50", "c50", [x], "question"),
        *(RankedList("dense-c50", "c50", [x], f"multi_query {n}") for n in (1, 2, 3)),
        RankedList("dense-c50", "c50", [y]),
        RankedList("bm25-c50", "c50", [y]),
    ]
    candidates = {c.hit.id: c for c in reciprocal_rank_fusion(lists, k=2)}
    assert candidates["x"].ranks == {"dense-c50": 1}
    assert candidates["x"].rrf == pytest.approx(4 / 3)  # four lists, each 1 / (2 + 1)
    assert candidates["x"].queries == ["question", "multi_query 1", "multi_query 2", "multi_query 3"]
    clusters = apply_quorum(greedy_clusters(list(candidates.values()), 0.85), quorum=2)
    assert [c.leader.hit.id for c in clusters] == ["y"]  # x has one retriever's support, however many lists


@pytest.fixture
def rag_with(open_rag, corpus):
    """QuorumRAG over the sample corpus with the given completer and expansions."""

    def opened(model, expansions=("multi_query:2", "hyde"), **retrieval):
        rag = open_rag(generator=model, retrieval={"expansions": list(expansions), **retrieval})
        rag.ingest(corpus)
        return rag

    return opened


def same_evidence(first, second) -> bool:
    keep = {"clusters", "abstained", "abstain_reason", "confidence", "retrievers"}
    return first.model_dump(include=keep) == second.model_dump(include=keep)


@pytest.mark.parametrize(
    "model",
    [
        ScriptedModel(error=GenerationError("cannot reach Ollama at http://localhost:11434")),
        ScriptedModel({"multi_query": "- \n- " + BEES, "hyde": "No."}),  # garbage: nothing to search
        object(),  # a backend that cannot complete a prompt
    ],
    ids=["unavailable", "garbage", "incapable"],
)
@pytest.mark.slow
def test_a_failed_expansion_leaves_the_result_identical(rag_with, open_rag, model):
    expanded = rag_with(model).retrieve(BEES)
    assert same_evidence(expanded, open_rag().retrieve(BEES))
    assert [e.kind for e in expanded.expansions] == ["multi_query", "hyde"]
    assert all(e.error and not e.texts for e in expanded.expansions)
    assert not any(cluster.expansions for cluster in expanded.clusters)


@pytest.mark.slow
def test_a_model_past_the_timeout_is_stopped_and_the_question_searched_alone(rag_with, open_rag):
    model = StalledModel()
    expanded = rag_with(model, expansions=["multi_query:2"], expansion_timeout=0.05).retrieve(BEES)
    assert model.stopped.wait(timeout=60)  # the model was told to stop, not left running
    assert "longer than 0.05 s" in expanded.expansions[0].error
    assert same_evidence(expanded, open_rag().retrieve(BEES))


@pytest.mark.slow
def test_expansions_are_searched_and_can_find_what_the_question_alone_cannot(rag_with, open_rag):
    model = ScriptedModel(
        {
            "multi_query": "- How do foragers show the direction of flowers?\n- meaning of the bee waggle dance",
            "hyde": "A forager performs the waggle dance on the comb; the angle of the waggle run gives the "
            "direction of the flowers relative to the sun.",
        }
    )
    evidence = rag_with(model).retrieve(OPAQUE)
    assert open_rag().retrieve(OPAQUE).abstain_reason == "no_quorum"
    assert [(e.kind, e.labels, e.error) for e in evidence.expansions] == [
        ("multi_query", ["multi_query 1", "multi_query 2"], None),
        ("hyde", ["hyde"], None),
    ]
    assert evidence.clusters and "waggle" in evidence.clusters[0].passages[0].text
    assert set(evidence.clusters[0].expansions) <= {"multi_query 1", "multi_query 2", "hyde"}
    assert evidence.clusters[0].expansions
    assert [prompt for _, prompt, _ in model.prompts] == [OPAQUE, OPAQUE]  # one call per expansion kind
    assert "2 different search queries" in model.prompts[0][0]


@pytest.mark.slow
def test_query_json_shows_the_expansions_from_ollama(corpus, tmp_path):
    store = str(tmp_path / "store")
    assert run("ingest", str(corpus), "--store", store).exit_code == 0
    with ollama_standin(tokens=["- How do foragers show the way to flowers?\n", "- waggle dance angle"]) as ollama:
        result = run(
            "query",
            BEES,
            "--store",
            store,
            "--json",
            "--no-generate",
            env={"QRAG_OLLAMA_HOST": ollama.host, "QRAG_RETRIEVAL_EXPANSIONS": '["multi_query:2"]'},
        )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["expansions"] == [
        {
            "kind": "multi_query",
            "texts": ["How do foragers show the way to flowers?", "waggle dance angle"],
            "labels": ["multi_query 1", "multi_query 2"],
            "retrievers": ["bm25-c100", "bm25-c50", "dense-c100", "dense-c50"],
            "seconds": data["expansions"][0]["seconds"],
            "error": None,
        }
    ]
    request = ollama.requests[0]
    assert request["options"]["num_predict"] == 64 and request["messages"][1]["content"] == BEES
    shown = run(
        "query",
        BEES,
        "--store",
        store,
        "--no-generate",
        env={"QRAG_OLLAMA_HOST": "http://127.0.0.1:9", "QRAG_RETRIEVAL_EXPANSIONS": '["hyde"]'},
    )
    assert shown.exit_code == 0
    assert "hyde: not used: cannot reach Ollama at http://127.0.0.1:9" in shown.stdout


def test_eval_expansion_systems_leave_out_the_retrievers_that_opt_out():
    from qrag_qdrant.eval.runner import expanded_settings

    settings = load_settings(
        retrievers=[
            {"kind": "dense", "size": 50, "overlap": 25},
            {"kind": "dense", "size": 100, "overlap": 50, "expansions": ["hyde", "multi_query:2"]},
            {"kind": "bm25", "size": 100, "overlap": 50, "expansions": []},
        ]
    )
    (hyde,) = ExpansionPlan.from_settings(expanded_settings(settings, "hyde"))
    assert hyde.retrievers == {"dense-c50": 1, "dense-c100": 1}
    (rewrites,) = ExpansionPlan.from_settings(expanded_settings(settings, "multi_query:3"))
    assert rewrites.count == 3 and rewrites.retrievers == {"dense-c50": 3, "dense-c100": 2}
