"""``llm.decline_threshold``: the model's probability of "not in the documents", from its first
token, decides between declining and answering. A scripted llama.cpp server stands in for the
model, so each branch is exercised with known probabilities."""

from __future__ import annotations

import math
from typing import Any

import pytest

from qrag_qdrant.config.settings import LlmSettings
from qrag_qdrant.generation.backends.embedded import EmbeddedGenerator
from qrag_qdrant.generation.base import GenerationResult
from qrag_qdrant.generation.prompt import NOT_IN_DOCUMENTS, begins_decline, decline_probability
from qrag_qdrant.results import Passage

PASSAGES = [Passage(citation=1, source="a.txt", start=0, end=30, text="The bridge opened in 1932.")]


#: the log-probability the scripted server gives every token after the first
LATER_TOKEN = math.log(0.9)


class ScriptedServer:
    """Streams a fixed reply; the first token carries the given alternatives, and every token
    its own log-probability (LATER_TOKEN after the first). A request that ends with an
    assistant message (a prefill) gets ``continuation``."""

    def __init__(self, reply: list[str], alternatives: list[tuple[str, float]], continuation: list[str]):
        self.reply, self.alternatives, self.continuation = reply, alternatives, continuation
        self.requests: list[dict[str, Any]] = []

    def handle_chat_completions(self, request: dict[str, Any], on_chunk: Any) -> None:
        self.requests.append(request)
        prefilled = request["messages"][-1]["role"] == "assistant"
        for index, token in enumerate(self.continuation if prefilled else self.reply):
            choice: dict[str, Any] = {"index": 0, "delta": {"content": token}}
            if request.get("logprobs"):
                first = index == 0 and not prefilled
                choice["logprobs"] = {
                    "content": [
                        {
                            "token": token,
                            "logprob": self.alternatives[0][1] if first else LATER_TOKEN,
                            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in self.alternatives]
                            if first
                            else [],
                        }
                    ]
                }
            if on_chunk({"choices": [choice]}):
                return


def generator(server: ScriptedServer, threshold: float | None) -> EmbeddedGenerator:
    backend = object.__new__(EmbeddedGenerator)
    backend.settings, backend.answer_format = LlmSettings(decline_threshold=threshold), "short"
    backend._transport = lambda request, on_chunk, halted: server.handle_chat_completions(request, on_chunk)
    return backend


DECLINES = ["not", " in", " the", " documents"]
ANSWERS = ["Joseph", " Strauss", " [1]"]


def test_the_decline_probability_sums_the_first_tokens_that_begin_the_reply():
    alternatives = [
        ("not", math.log(0.3)),
        ("Not", math.log(0.1)),
        ('"not', math.log(0.05)),
        ("The", math.log(0.5)),
        ("no", math.log(0.05)),
    ]
    assert decline_probability(alternatives) == pytest.approx(0.45)
    assert [begins_decline(t) for t in ("not", " Not", "'not", "no", "n", "Note", "The")] == [
        True,
        True,
        True,
        False,
        False,
        False,
        False,
    ]


@pytest.mark.parametrize("threshold", [None, 0.9])
def test_without_a_threshold_or_below_it_the_greedy_answer_streams_unchanged(threshold):
    server = ScriptedServer(ANSWERS, [("Joseph", math.log(0.7)), ("not", math.log(0.2))], [])
    backend, reported = generator(server, threshold), GenerationResult()
    assert list(backend.stream("Who built it?", PASSAGES, reported)) == ANSWERS
    assert reported.decline_probability == pytest.approx(0.2)
    assert len(server.requests) == 1 and server.requests[0]["logprobs"]
    # every token of the answer, with its own log-probability (the answer's confidence)
    assert reported.answer_logprobs == [("Joseph", math.log(0.7)), (" Strauss", LATER_TOKEN), (" [1]", LATER_TOKEN)]


def test_at_the_threshold_an_answer_becomes_a_decline_and_the_model_stops():
    server = ScriptedServer(ANSWERS, [("Joseph", math.log(0.55)), ("not", math.log(0.4))], [])
    assert list(generator(server, 0.4).stream("Who built it?", PASSAGES, GenerationResult())) == [NOT_IN_DOCUMENTS]
    assert len(server.requests) == 1


def test_below_the_threshold_a_greedy_decline_becomes_the_likeliest_other_answer():
    server = ScriptedServer(
        DECLINES, [("not", math.log(0.35)), ("Joseph", math.log(0.3)), ("The", math.log(0.2))], [" Strauss", " [1]"]
    )
    backend, reported = generator(server, 0.5), GenerationResult()
    assert "".join(backend.stream("Who built it?", PASSAGES, reported)) == "Joseph Strauss [1]"
    prefill = server.requests[1]["messages"][-1]
    assert prefill == {"role": "assistant", "content": "Joseph"} and "top_logprobs" not in server.requests[1]
    assert reported.decline_probability == pytest.approx(0.35)
    # the answer's tokens: the chosen first token at its own probability, then the continuation's
    assert reported.answer_logprobs == [("Joseph", math.log(0.3)), (" Strauss", LATER_TOKEN), (" [1]", LATER_TOKEN)]


def test_a_greedy_decline_above_the_threshold_stays_a_decline():
    server = ScriptedServer(DECLINES, [("not", math.log(0.8)), ("Joseph", math.log(0.1))], [])
    assert "".join(generator(server, 0.5).stream("Who built it?", PASSAGES, GenerationResult())) == NOT_IN_DOCUMENTS
    assert len(server.requests) == 1
