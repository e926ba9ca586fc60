"""The answer checks and the backend registry, without a model: a scripted judge and backend."""

from __future__ import annotations

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.evidence import Answer, Passage
from qrag_qdrant.generation import backends, open_backend, register_backend
from qrag_qdrant.generation.prompt import fit_passages
from qrag_qdrant.generation.verify import check_answer, citations_in, declined, split_claims
from qrag_qdrant.store.edge import EdgeStore

PASSAGES = [Passage(citation=1, source="a.txt", start=0, end=40, text="The Denver Broncos won Super Bowl 50."),
            Passage(citation=2, source="b.txt", start=0, end=30, text="The game was played in Santa Clara.")]


class ScriptedJudge:
    """Says yes to claims that mention one of its words."""

    def __init__(self, *words: str):
        self.words, self.prompts = words, []

    def yes_probability(self, system: str, prompt: str) -> float:
        self.prompts.append(prompt)
        claim = prompt.split("Claim:")[1]
        return 0.9 if any(word in claim for word in self.words) else 0.1


def answer_of(text: str) -> Answer:
    return Answer(question="Who won?", abstained=False, retrievers=5, clusters=[], timings_ms={}, answer=text)


def test_claims_carry_their_citations():
    claims = split_claims("The Broncos won [1]. It was in Santa Clara [2][3]. Also this. [1, 2]", [1, 2])
    assert [c.text for c in claims] == ["The Broncos won [1].", "It was in Santa Clara [2][3].",
                                       "Also this. [1, 2]"]
    assert [c.citations for c in claims] == [[1], [2, 3], [1, 2]]
    assert [c.invalid_citations for c in claims] == [[], [3], []]
    assert citations_in("x [4; 5] y [6]") == [4, 5, 6]


@pytest.mark.parametrize(("text", "expected"), [
    ("not in the documents", True), ('"Not in the documents."', True), ("It is not in the documents.", True),
    ("The Broncos won [1].", False),
    ("The passages say a lot about football, but the winner is not in the documents at all, they only list "
     "the venue and the date and many other details of the game [2].", False),
])
def test_declined(text, expected):
    assert declined(text) is expected


def test_check_answer_judges_each_cited_claim():
    judge = ScriptedJudge("Broncos")
    answer = answer_of("The Broncos won [1]. The Panthers won [2].")
    check_answer(answer, PASSAGES, judge, "mark")
    assert [(c.supported, c.score) for c in answer.claims] == [(True, 0.9), (False, 0.1)]
    assert "1 of 2 claims are not supported" in answer.warnings[0]
    assert not answer.abstained
    assert "Denver Broncos won Super Bowl 50" in judge.prompts[0] and "Santa Clara" not in judge.prompts[0]

    refused = answer_of("The Panthers won [2].")
    check_answer(refused, PASSAGES, judge, "refuse")
    assert refused.abstained and refused.abstain_reason == "unsupported_answer"


def test_invalid_and_missing_citations_are_flagged():
    invalid = answer_of("The Broncos won [7].")
    check_answer(invalid, PASSAGES, None, "mark")
    assert invalid.claims[0].invalid_citations == [7]
    assert "cites passages that were not shown: [7]" in invalid.warnings[0]
    uncited = answer_of("The Broncos won.")
    check_answer(uncited, PASSAGES, None, "mark")
    assert uncited.warnings == ["the answer cites no passage: check it against the evidence"]


def test_a_decline_is_an_abstention():
    answer = answer_of("not in the documents.")
    check_answer(answer, PASSAGES, ScriptedJudge(), "mark")
    assert answer.abstained and answer.abstain_reason == "model_declined" and not answer.claims


def test_an_oversized_context_is_trimmed_from_the_lowest_ranked_passage():
    long = [Passage(citation=n, source="x.txt", start=0, end=3000, text="word " * 600) for n in (1, 2, 3)]
    kept, dropped = fit_passages("Q?", long, window=2600, answer_tokens=256)
    assert [p.citation for p in kept] == [1, 2] and [p.citation for p in dropped] == [3]
    assert fit_passages("Q?", long, window=None, answer_tokens=256) == (long, [])


class EchoBackend:
    """A plug-in backend: repeats the first passage, cited."""

    def __init__(self, settings):
        self.settings = settings

    def stream(self, question, passages):
        yield f"{passages[0].text} [{passages[0].citation}]"


def test_a_registered_backend_is_used_and_an_unknown_one_is_one_line(tmp_path, corpus, embedder):
    assert {"embedded", "ollama"} <= set(backends())  # the built-ins, through their entry points
    register_backend("echo", EchoBackend)
    settings = load_settings(store=tmp_path / "store", generation={"backend": "echo"})
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        answer = rag.answer("How does a honeybee forager tell her sisters the direction of flowers?")
    assert answer.error is None and answer.answer.endswith("[1]")
    assert answer.claims and answer.claims[-1].citations == [1] and answer.claims[-1].supported is None
    with pytest.raises(ConfigError, match="generation.backend 'nope' is not registered; known: .*echo"):
        open_backend(load_settings(generation={"backend": "nope"}))


class SilentBackend:
    def __init__(self, settings):
        pass

    def stream(self, question, passages):
        yield from ()


def test_an_empty_answer_is_one_error_after_the_evidence(tmp_path, corpus, embedder):
    register_backend("silent", SilentBackend)
    settings = load_settings(store=tmp_path / "store", generation={"backend": "silent"})
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        answer = rag.answer("How does a honeybee forager tell her sisters the direction of flowers?")
    assert answer.answer is None and answer.error == "the model returned an empty answer" and answer.clusters


def test_without_entry_points_the_error_names_the_reinstall(monkeypatch):
    import qrag_qdrant.generation as generation

    monkeypatch.setattr(generation, "entry_points", lambda group: [])
    monkeypatch.setattr(generation, "_REGISTRY", {})
    with pytest.raises(ConfigError, match=r"reinstall qrag-qdrant \(pip install -e \.\)"):
        open_backend(load_settings())
