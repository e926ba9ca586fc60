"""The OpenAI-compatible endpoint, called with the official ``openai`` SDK: its client sends
through the app's TestClient (an httpx client), so every byte goes through the real app."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.results import Answer, Claim

from .live_server import live_server
from .ollama_standin import ollama_standin
from .service_helpers import BEES
from .test_embedded import needs_model

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
openai = pytest.importorskip("openai", reason="the test extra brings the openai SDK")
from qrag_qdrant.service.app import create_app  # noqa: E402
from qrag_qdrant.service.auth.keys import KeyFile  # noqa: E402
from qrag_qdrant.service.routes.openai import with_notes  # noqa: E402

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

TOKENS = ["the waggle ", "dance ", "[1]"]


def sdk(client, headers) -> openai.OpenAI:
    key = headers["Authorization"].split()[1]
    return openai.OpenAI(base_url=f"{client.base_url}/v1", api_key=key, http_client=client, max_retries=0)


@pytest.fixture
def answering(teams):
    start, auth = teams
    with (
        ollama_standin(tokens=TOKENS) as ollama,
        start(ollama={"host": ollama.host}, generation={"backend": "ollama"}) as client,
    ):
        yield client, auth


def test_models_lists_quorum_and_quorum_evidence(service):
    client, auth = service
    assert [m.id for m in sdk(client, auth["b"]).models.list()] == ["quorum", "quorum-evidence"]


def test_a_chat_completion_answers_with_citations_and_carries_the_evidence(answering):
    client, auth = answering
    reply = sdk(client, auth["a"]).chat.completions.create(
        model="quorum",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Who are you?"},
            {"role": "assistant", "content": "A helper."},
            {"role": "user", "content": BEES},
        ],
    )
    choice = reply.choices[0]
    assert choice.message.role == "assistant" and choice.message.content == "".join(TOKENS)
    assert choice.finish_reason == "stop" and reply.model == "quorum"
    evidence = reply.model_extra["qrag"]
    assert evidence["question"] == BEES and evidence["short_answer"] == "the waggle dance"
    assert evidence["clusters"][0]["passages"][0]["source"] == "honeybees.txt" and evidence["confidence"] > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_a_streamed_chat_completion_sends_the_answer_then_the_evidence(answering):
    client, auth = answering
    stream = sdk(client, auth["a"]).chat.completions.create(
        model="quorum", messages=[{"role": "user", "content": BEES}], stream=True
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == "".join(TOKENS)
    assert [c.choices[0].finish_reason for c in chunks][-1] == "stop"
    assert chunks[-1].model_extra["qrag"]["clusters"] and not chunks[-1].model_extra["qrag"]["abstained"]


def test_quorum_evidence_returns_the_evidence_without_a_model(service):
    client, auth = service
    reply = sdk(client, auth["a"]).chat.completions.create(
        model="quorum-evidence", messages=[{"role": "user", "content": [{"type": "text", "text": BEES}]}]
    )
    content = reply.choices[0].message.content
    assert content.startswith("Evidence (confidence") and "[1] honeybees.txt" in content and "waggle" in content
    assert reply.usage.total_tokens == 0 and reply.model_extra["qrag"]["answer"] is None


def test_an_abstention_is_an_ordinary_message_that_says_why(service):
    client, auth = service
    for stream in (False, True):
        reply = sdk(client, auth["a"]).chat.completions.create(
            model="quorum",
            messages=[{"role": "user", "content": "What is the airspeed of an unladen swallow?"}],
            stream=stream,
        )
        chunks = list(reply) if stream else None
        content = (
            "".join(c.choices[0].delta.content or "" for c in chunks) if stream else reply.choices[0].message.content
        )
        extra = (chunks[-1] if stream else reply).model_extra["qrag"]
        assert (
            content.startswith("No answer:")
            and extra["abstained"]
            and extra["abstain_reason"] in ("no_quorum", "low_confidence")
        )


@pytest.mark.parametrize(
    ("request_body", "status", "param"),
    [
        ({"model": "quorum", "messages": []}, 400, "messages"),
        ({"model": "quorum", "messages": [{"role": "system", "content": "hi"}]}, 400, "messages"),
        ({"model": "quorum", "messages": [{"role": "user", "content": BEES}], "n": 2}, 400, "n"),
        (
            {
                "model": "quorum",
                "messages": [{"role": "user", "content": BEES}],
                "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
            },
            400,
            "tools",
        ),
        ({"model": "gpt-4o", "messages": [{"role": "user", "content": BEES}]}, 404, "model"),
    ],
)
def test_requests_it_cannot_honour_are_refused_in_openais_error_shape(service, request_body, status, param):
    client, auth = service
    with pytest.raises(openai.APIStatusError) as raised:
        sdk(client, auth["a"]).chat.completions.create(**request_body)
    error = raised.value
    assert error.status_code == status and error.body["param"] == param and error.body["message"], error.body


def test_a_bad_key_is_a_401_in_openais_shape(service):
    client, _ = service
    with pytest.raises(openai.AuthenticationError) as raised:
        sdk(client, {"Authorization": "Bearer qrag_wrong"}).chat.completions.create(
            model="quorum", messages=[{"role": "user", "content": BEES}]
        )
    assert raised.value.body["code"] == "invalid_api_key"
    raw = client.get("/v1/models")
    assert raw.status_code == 401 and set(json.loads(raw.text)["error"]) == {"message", "type", "param", "code"}


def test_a_request_without_a_model_is_a_400_naming_the_field(service):
    client, auth = service  # (the SDK refuses to send it: sent as it is)
    raw = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": BEES}]}, headers=auth["a"])
    assert raw.status_code == 400 and raw.json()["error"]["param"] == "model", raw.text


@needs_model
def test_the_openai_sdk_gets_a_real_answer_from_the_packaged_model(tmp_path, corpus, embedder):
    """A running service on a real port, the embedded backend, the SDK as a team would use it."""
    store, key_file = tmp_path / "store", tmp_path / "keys.toml"
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        rag.ingest(corpus)
    key = KeyFile.load(key_file).add("default", "read")
    settings = load_settings(store=store, service={"keys": key_file}, generation={"backend": "embedded"})
    with live_server(create_app(settings, embedder=embedder)) as base:
        client = openai.OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0, timeout=600)
        question = [{"role": "user", "content": "What dance do honeybee foragers perform?"}]
        reply = client.chat.completions.create(model="quorum", messages=question)
        streamed = list(client.chat.completions.create(model="quorum", messages=question, stream=True))
    assert "waggle" in reply.choices[0].message.content.lower() and reply.usage.completion_tokens > 0
    assert reply.model_extra["qrag"]["claims"][0]["grounded"], reply.model_extra["qrag"]["claims"]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed)
    assert text == reply.choices[0].message.content  # greedy: the same answer, streamed


def test_a_chat_client_that_shows_only_the_text_is_told_an_answer_is_not_supported(teams):
    """A plain chat client (Open WebUI, LibreChat) shows the message text alone: an answer the
    passages do not support reads as such there, by default; a supported one reads as itself."""
    start, auth = teams
    question = [{"role": "user", "content": BEES}]
    with ollama_standin(tokens=["a swarm of locusts ", "[1]"]) as ollama:
        for setting, marked in ((None, True), (False, False)):
            service = {} if setting is None else {"openai_mark_in_text": setting}
            backend = {"ollama": {"host": ollama.host}, "generation": {"backend": "ollama"}, "service": service}
            with start(**backend) as client:
                reply = sdk(client, auth["a"]).chat.completions.create(model="quorum", messages=question)
            content = reply.choices[0].message.content
            assert reply.model_extra["qrag"]["mark"] == "not supported"
            assert content.startswith("a swarm of locusts [1]")
            assert ("\n\nNot supported: " in content) is marked, content


def test_a_chat_client_that_shows_only_the_text_is_told_how_a_computed_answer_was_computed():
    """A comparison or time order answered from the documents reads "No [1][2]" alone; the line
    under it says which values or dates gave it, as the CLI and the web page do."""
    computed = Answer(
        question="Did release 2.1 and release 2.2 set the same upload limit per file?",
        abstained=False,
        retrievers=4,
        clusters=[],
        timings_ms={},
        answer="No [1][2]",
        computed="from the values the passages state: [1] 200 MB, [2] 500 MB",
        claims=[Claim(text="No [1][2]", citations=[1, 2], grounded=True, supported=True)],
    )
    assert with_notes("No [1][2]", computed, True) == (
        "No [1][2]\n\nComputed from the values the passages state: [1] 200 MB, [2] 500 MB."
    )
    assert with_notes("No [1][2]", computed, False) == "No [1][2]"
    assert with_notes("Yes [1]", Answer.from_evidence(computed, computed=None), True).endswith("Yes [1]")
