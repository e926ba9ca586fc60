"""What a hostile client found in the service, each closed: a body sent a byte at a time, ambiguous
headers, loose request types, an upload read past its quota, one team filling the model's queue, a
key in the access log, refusals the audit log could not attribute, markup in the audit view; and
what an operator needs to see into it: metrics, streams that stay open and end when their client
leaves, logs with the request id, bounded state."""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from qrag_qdrant.cli.logs import JsonFormatter, RequestIdFilter, WithoutQueryString, uvicorn_log_config
from qrag_qdrant.generation import BackendDefaults, register_backend
from qrag_qdrant.service.auth.guard import RateLimits
from qrag_qdrant.service.auth.keys import KeyFile
from qrag_qdrant.service.jobs import IngestJob, IngestJobs, JobRecords
from qrag_qdrant.store.files import SERVE_RECORD

from .cli_helpers import run
from .live_server import live_server
from .ollama_standin import ollama_standin
from .service_helpers import BEES, events, metric_value

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")

#: how long a socket waits for the service's answer: far more than any deadline under test
PATIENCE_S = 60


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def exchange(url: str, head: bytes, body: bytes = b"") -> bytes:
    """Send raw bytes, then read the reply until the service closes the connection."""
    with socket.create_connection(address(url), timeout=PATIENCE_S) as connection:
        connection.sendall(head + body)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
        return reply


@pytest.mark.slow
def test_a_body_sent_a_byte_at_a_time_gets_408_and_frees_its_connection(teams):
    """The probe: 50 connections sending their body one byte at a time held every slot."""
    start, auth = teams
    app = start(service={"body_timeout": 1.0, "body_min_rate": 1000}).app
    with live_server(app) as url:
        head = (
            b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n"
            + f"Authorization: {auth['a']['Authorization']}\r\n\r\n".encode()
        )
        with socket.create_connection(address(url), timeout=PATIENCE_S) as slow:
            slow.sendall(head + b"{")  # one byte, then nothing: the deadline passes
            reply = b""
            while chunk := slow.recv(65536):  # the service answers and closes: an observable end
                reply += chunk
        assert reply.startswith(b"HTTP/1.1 408") and b'"code":"body_timeout"' in reply
        served = httpx.post(f"{url}/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
        assert served.status_code == 200


@pytest.mark.slow
def test_an_upload_over_the_ingest_quota_is_refused_before_its_body_is_read(teams, tmp_path):
    """The probe: 7.5 MB were read and saved against a 2 MB daily quota before the refusal."""
    start, auth = teams
    service = {"usage_db": tmp_path / "usage.db", "quotas": {"team-a": {"ingest_bytes_per_day": 2_000_000}}}
    with live_server(start(service=service).app) as url:
        head = (
            b"POST /v1/ingest HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=xx\r\n"
            + b"Content-Length: 7500000\r\n"
            + f"Authorization: {auth['a']['Authorization']}\r\n\r\n".encode()
        )
        reply = exchange(url, head)  # the headers alone: the refusal comes without a byte of the body
    assert reply.startswith(b"HTTP/1.1 429") and b"ingest_bytes_per_day" in reply
    assert not any(p.is_file() for p in (tmp_path / "store" / ".uploads").rglob("*"))


@pytest.mark.slow
def test_ambiguous_headers_are_refused(teams):
    start, auth = teams
    with live_server(start().app) as url:
        other = "Bearer qrag_not-a-key"
        two_keys = exchange(
            url,
            b"GET /v1/collections HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + f"Authorization: {other}\r\nAuthorization: {auth['a']['Authorization']}\r\n\r\n".encode(),
        )
        smuggled = exchange(
            url,
            b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
            + b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"
            + f"Authorization: {auth['a']['Authorization']}\r\n\r\n".encode(),
            b"0\r\n\r\n",
        )
    assert two_keys.startswith(b"HTTP/1.1 400") and b"one Authorization header" in two_keys
    assert smuggled.startswith(b"HTTP/1.1 400"), smuggled[:200]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"question": BEES, "generate": "yes"}, 422, "generate"),
        ({"question": BEES, "stream": "true"}, 422, "stream"),
        ({"question": BEES, "generate": 1}, 422, "generate"),
        ({"question": "\x00\x00\x00"}, 400, "control character"),
        ({"question": "What\x1b[31m is it?"}, 400, "control character"),
    ],
)
@pytest.mark.slow
def test_request_fields_take_their_own_type_and_questions_are_text(service, body, status, says):
    client, auth = service
    response = client.post("/v1/query", json=body, headers=auth["a"])
    assert response.status_code == status and says in response.text


@pytest.mark.slow
def test_a_json_body_that_names_a_key_twice_is_refused(service):
    client, auth = service
    body = b'{"question": "What is it?", "generate": false, "generate": true}'
    for path in ("/v1/query", "/v1/chat/completions"):
        response = client.post(path, content=body, headers={**auth["a"], "Content-Type": "application/json"})
        assert response.status_code == 400 and "'generate' twice" in response.text
    chat = {"model": "quorum", "messages": [{"role": "user", "content": BEES}], "stream": "yes"}
    loose = client.post("/v1/chat/completions", json=chat, headers=auth["a"])  # OpenAI's shape: a 400
    assert loose.status_code == 400 and loose.json()["error"]["param"] == "stream"


def test_a_key_in_the_query_string_never_reaches_the_access_log():
    record = logging.makeLogRecord(
        {
            "name": "uvicorn.access",
            "msg": '%s - "%s %s HTTP/%s" %d',
            "args": ("127.0.0.1:5", "GET", "/v1/collections?key=qrag_secret-value", "1.1", 401),
        }
    )
    assert WithoutQueryString().filter(record) and "qrag_secret" not in record.getMessage()
    assert "/v1/collections?…" in record.getMessage()
    config = uvicorn_log_config("json")
    assert "no_query" in config["handlers"]["access"]["filters"]


def test_json_log_lines_carry_the_request_id_and_the_traceback():
    from qrag_qdrant.service.audit import REQUEST

    token = REQUEST.set("req-7")
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            record = logging.getLogger("qrag_qdrant.test").makeRecord(
                "qrag_qdrant.test", logging.ERROR, __file__, 1, "it failed: %s", ("x",), sys.exc_info()
            )
        RequestIdFilter().filter(record)
    finally:
        REQUEST.reset(token)
    line = json.loads(JsonFormatter().format(record))
    assert line["request_id"] == "req-7" and line["message"] == "it failed: x" and line["level"] == "error"
    assert "ValueError: boom" in line["exception"] and line["time"].endswith("Z")


@pytest.mark.slow
def test_the_cli_takes_verbosity_after_the_command_and_writes_json_logs(ingested):
    plain = run("query", "--no-generate", "How do bees dance?")
    verbose = run("query", "--no-generate", "How do bees dance?", "-v")
    detailed = run("query", "--no-generate", "-vv", "--log-format", "json", "How do bees dance?")
    assert plain.exit_code == verbose.exit_code == detailed.exit_code == 0, detailed.stderr
    assert "retrieve:" not in plain.stderr and "qrag_qdrant.retrieval.pipeline: retrieve:" in verbose.stderr
    lines = [json.loads(line) for line in detailed.stderr.splitlines() if line.startswith("{")]
    assert any(line["level"] == "debug" and "gate confidence" in line["message"] for line in lines)
    assert any(line["level"] == "info" and line["message"].startswith("retrieve:") for line in lines)
    assert "gate confidence" not in verbose.stderr  # -v and -vv differ


@pytest.mark.slow
def test_refusals_in_the_audit_log_say_who_and_why(teams, tmp_path):
    """The probe: a revoked key's 401 had "key": null, and a 429 did not say rate or quota."""
    start, auth = teams
    log = tmp_path / "audit.jsonl"
    keys = KeyFile(tmp_path / "keys.toml")
    gone = keys.add("team-a", "read", name="leaver")
    revoked = keys.revoke("leaver")
    service = {
        "audit_log": log,
        "rate_feedback": "1/minute",
        "usage_db": tmp_path / "usage.db",
        "quotas": {"team-b": {"queries_per_day": 1}},
    }
    with start(service=service) as client:
        assert client.get("/v1/collections", headers={"Authorization": f"Bearer {gone}"}).status_code == 401
        for _ in range(2):
            client.post("/v1/feedback", json={"query_id": "0" * 32, "rating": "up"}, headers=auth["a"])
        for _ in range(2):
            client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"])
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    refused = [line for line in lines if line["event"] == "refused"]
    assert {(line["status"], line.get("key"), line.get("reason")) for line in refused} >= {
        (401, revoked.id, "no valid key or token"),
    }
    reasons = {line["reason"] for line in refused if line["status"] == 429}
    assert reasons == {"rate_limited", "quota_exceeded"}


@pytest.mark.slow
def test_metrics_are_prometheus_histograms_and_counters_and_can_be_off(teams):
    start, auth = teams
    with ollama_standin(tokens=["the waggle ", "dance ", "[1]"]) as ollama:
        model = {"ollama": {"host": ollama.host}, "generation": {"backend": "ollama"}}
        with start(**model) as client:
            client.post("/v1/query", json={"question": BEES}, headers=auth["a"])
            client.post("/v1/query", json={"question": BEES + " Where?", "generate": False}, headers=auth["b"])
            client.get("/v1/collections")  # a refusal: no key
            response = client.get("/metrics")
        with start(service={"metrics": False}) as client:
            off = client.get("/metrics")
    text = response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    assert metric_value(text, "qrag_retrieval_seconds_count") == 2
    assert metric_value(text, "qrag_generation_seconds_count") == 1
    assert metric_value(text, "qrag_queue_wait_seconds_count") == 1
    assert metric_value(text, "qrag_time_to_first_token_seconds_count") == 1
    assert metric_value(text, "qrag_refused_requests_total", status="401", code="unauthorized") == 1
    assert metric_value(text, "process_resident_memory_bytes") > 0
    assert "team-a" not in text and "team-b" not in text  # no namespace in any label
    assert off.status_code == 404


class SilentReader(BackendDefaults):
    """A backend that reads its prompt for as long as it is told: it writes no token until ``go`` is
    set (then its answer) or the answer is cancelled, as llama.cpp reading a long prompt writes none."""

    reading = threading.Event()
    go = threading.Event()
    stopped = threading.Event()

    def __init__(self, settings=None):
        self.model_name, self.server, self.context_tokens = "reader", "in-process", 4096

    @classmethod
    def reset(cls) -> None:
        for event in (cls.reading, cls.go, cls.stopped):
            event.clear()

    def stream(self, question, passages, result):
        SilentReader.reading.set()
        while not (SilentReader.go.is_set() or result.cancelled.is_set()):
            SilentReader.go.wait(0.05)
        SilentReader.stopped.set()
        if SilentReader.go.is_set() and not result.cancelled.is_set():
            yield "the waggle dance [1]"


register_backend("silent-reader", SilentReader)


@pytest.mark.slow
def test_a_stream_whose_client_leaves_before_the_first_token_frees_the_model(teams):
    """The probe: a stream dropped after 2 s held the model about 14 s more: nothing was written
    while the prompt was read, so nothing noticed the client was gone (uvicorn's ASGI 2.4 has a
    write fail only when something is written)."""
    from .test_service_hardening import call_asgi

    start, auth = teams
    SilentReader.reset()
    with start(generation={"backend": "silent-reader"}) as client:
        headers = {"content-type": "application/json", **{k.lower(): v for k, v in auth["a"].items()}}
        for path, request in (
            ("/v1/query", {"question": BEES}),
            ("/v1/chat/completions", {"model": "quorum", "messages": [{"role": "user", "content": BEES}]}),
        ):
            SilentReader.reset()
            body = json.dumps({**request, "stream": True}).encode()
            call_asgi(client.app, path, headers, [body], disconnect_when=SilentReader.reading, spec="2.4")
            assert SilentReader.stopped.wait(PATIENCE_S) and not SilentReader.go.is_set()


@pytest.mark.slow
def test_a_waiting_stream_sends_keep_alive_comments_then_the_answer(teams):
    """While an answer waits for the model, the stream is not silent: proxies cut idle streams."""
    start, auth = teams
    SilentReader.reset()
    with start(service={"stream_ping_seconds": 0.2}, generation={"backend": "silent-reader"}) as client:
        question = {"question": BEES, "stream": True}
        with client.stream("POST", "/v1/query", json=question, headers=auth["a"]) as streamed:
            lines = streamed.iter_lines()
            assert next(line for line in lines if line.startswith(":")).startswith(": ping")
            SilentReader.go.set()  # the prompt is read: the model answers
            rest = "\n".join(lines)
    assert "event: done" in rest and "the waggle dance [1]" in rest


def test_finished_jobs_and_idle_rate_buckets_are_forgotten(tmp_path):
    records = JobRecords(tmp_path / "jobs")
    jobs = IngestJobs(lambda *a: None, lambda exc: ("x", "y"), records, kept=3, kept_days=1.0)  # type: ignore[arg-type]
    now = datetime.now(UTC)

    def at(delta: timedelta) -> str:
        return (now - delta).isoformat(timespec="milliseconds")

    records.write(IngestJob("ancient", "team-a", "x", state="done", finished=at(timedelta(days=3))))
    for n in range(4):  # four recent ones, the oldest first
        records.write(IngestJob(f"recent{n}", "team-a", "x", state="done", finished=at(timedelta(minutes=10 - n))))
    records.write(IngestJob("running", "team-a", "x", state="running"))  # left by a crash: interrupted now
    jobs.restore()
    kept = {path.stem for path in (tmp_path / "jobs").glob("*.json")}
    assert kept == {"recent2", "recent3", "running"}
    assert jobs.get("running", "team-a").state == "failed" and jobs.get("ancient", "team-a") is None
    clock = [0.0]
    limits = RateLimits({"query": (2, 1.0)}, clock=lambda: clock[0])
    limits.SWEEP_EVERY = 4
    for key in range(3):
        limits.wait_seconds("query", f"key-{key}")
    assert len(limits) == 3
    clock[0] = 10.0  # every bucket has refilled: the same as none
    limits.wait_seconds("query", "key-new")
    assert len(limits) == 1


def test_a_command_refused_the_store_names_the_running_service(corpus, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / SERVE_RECORD).write_text(json.dumps({"url": "http://127.0.0.1:8123", "pid": __import__("os").getpid()}))
    from .cli_helpers import namespace_held_elsewhere

    with namespace_held_elsewhere(store):
        refused = run("query", "--store", str(store), "--no-generate", "How do bees dance?")
    assert refused.exit_code == 1
    assert "qrag-qdrant serve" in refused.stderr and "http://127.0.0.1:8123/v1/query" in refused.stderr


def test_a_groups_claim_shaped_as_an_object_grants_nothing():
    from qrag_qdrant.config.service import OidcSettings
    from qrag_qdrant.service.auth.oidc import OidcSignIn, SignInRefused

    settings = OidcSettings(issuer="https://id.example.com", audience="qrag", mapping={"team-a-readers": "team-a:read"})
    sign_in = OidcSignIn(settings)
    claims = {"sub": "mallory", "groups": {"team-a-readers": False}}
    with pytest.raises(SignInRefused) as refused:
        sign_in.principal(claims, None)
    assert refused.value.status == 403 and refused.value.who == {"subject": "oidc:mallory"}
    assert sign_in.principal({"sub": "ann", "groups": ["team-a-readers"]}, None).namespace == "team-a"


def test_concurrent_sign_ins_read_an_unreachable_provider_once(monkeypatch):
    from qrag_qdrant.config.service import OidcSettings
    from qrag_qdrant.service.auth import oidc

    reads = []
    keys = oidc.ProviderKeys(OidcSettings(issuer="https://id.example.com", audience="qrag"))

    def unreachable(self) -> None:
        reads.append(1)
        self._read_at = self.clock()
        raise oidc.SignInRefused(503, "the identity provider cannot be read (ConnectError)")

    monkeypatch.setattr(oidc.ProviderKeys, "_read", unreachable)
    outcomes = []

    def sign_in() -> None:
        try:
            keys.key("kid-1")
        except oidc.SignInRefused as refused:
            outcomes.append(refused.status)

    threads = [threading.Thread(target=sign_in) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(PATIENCE_S)
    assert outcomes == [503] * 8 and len(reads) == 1


def test_a_stream_says_it_waits_for_the_model_to_load(teams):
    """The first answer of a process waits for the embedded model (seconds to a minute): the
    stream says so before anything else, and the CLI does too."""
    start, auth = teams
    embedded = {"generation": {"backend": "embedded"}, "llm": {"model": "not-loaded-here"}}
    with start(**embedded) as client:
        streamed = client.post("/v1/query", json={"question": BEES, "stream": True}, headers=auth["a"])
    names = [name for name, _ in events(streamed)]
    assert names[:2] == ["evidence", "loading"] and names[-1] == "done"
    loading = dict(events(streamed))["loading"]
    assert loading["message"].startswith("assembling and loading the model")
