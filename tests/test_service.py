"""The HTTP service through HTTP: two teams confined to their namespaces, the query contract
with and without streaming, and bad requests answered with one JSON error, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.calibration.fitting import SystemRows
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.ingest import loaders
from qrag_qdrant.ingest.loaders import TextBlock
from qrag_qdrant.retrieval.gate import QUORUM_FEATURES
from qrag_qdrant.version import __version__

from .cli_helpers import assert_clean_error, run
from .ollama_standin import ollama_standin
from .sample_corpus import DOCUMENTS
from .service_helpers import BEES, events, finished, free_port, metric_value, sources
from .waiting import wait_until

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")

from qrag_qdrant.service.auth.keys import KeyFile, Principal


@pytest.mark.slow
def test_each_team_sees_only_its_own_namespace(service):
    client, auth = service
    mine = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
    assert mine.status_code == 200 and not mine.json()["abstained"]
    assert "honeybees.txt" in sources(mine.json()) and sources(mine.json()) <= set(DOCUMENTS)
    theirs = client.post(
        "/v1/query",
        json={"question": "What did the Antikythera mechanism model?", "generate": False},
        headers=auth["b"],
    )
    assert theirs.status_code == 200 and sources(theirs.json()) == {"gears.txt"}
    # team b asking about team a's bees never gets team a's text
    probe = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"])
    assert probe.status_code == 200 and sources(probe.json()) <= {"gears.txt"}

    names = {team: {c["name"] for c in client.get("/v1/collections", headers=auth[team]).json()} for team in auth}
    assert names["a"] and all(name.startswith("team-a-") for name in names["a"])
    assert names["b"] and all(name.startswith("team-b-") for name in names["b"])
    assert "team-b" not in client.get("/v1/collections", headers=auth["a"]).text  # not even its names


@pytest.mark.parametrize("header", [None, "Bearer nope", "Basic abc", "Bearer "])
@pytest.mark.slow
def test_a_missing_or_unknown_key_is_401(service, header):
    client, _ = service
    headers = {"Authorization": header} if header else {}
    response = client.post("/v1/query", json={"question": BEES}, headers=headers)
    assert response.status_code == 401 and response.json()["code"] == "unauthorized"
    assert client.get("/v1/collections", headers=headers).status_code == 401


def test_the_key_file_holds_hashes_not_keys(tmp_path):
    keys = KeyFile.load(tmp_path / "keys.toml")
    key = keys.add("team-a", "read")
    assert key not in (tmp_path / "keys.toml").read_text()
    assert KeyFile.load(tmp_path / "keys.toml").principal(key).namespace == "team-a"
    assert KeyFile.load(tmp_path / "keys.toml").principal(key + "x") is None


@pytest.mark.slow
def test_streams_evidence_then_tokens_then_the_checked_answer(teams):
    start, auth = teams
    with ollama_standin(tokens=["Foragers ", "perform ", "the waggle dance ", "[1]."]) as ollama:
        with start(ollama={"host": ollama.host}, generation={"backend": "ollama", "judge": False}) as client:
            streamed = client.post("/v1/query", json={"question": BEES, "stream": True}, headers=auth["a"])
            plain = client.post("/v1/query", json={"question": BEES}, headers=auth["a"])  # the cached answer
            asked = len(ollama.requests)
    assert asked == 1 and "cache_hit" in plain.json()["timings_ms"]
    assert plain.status_code == 200 and plain.json()["answer"] == "Foragers perform the waggle dance [1]."
    assert streamed.status_code == 200 and streamed.headers["content-type"].startswith("text/event-stream")
    received = events(streamed)
    assert [name for name, _ in received] == ["evidence", "token", "token", "token", "token", "done"]
    assert "".join(data["text"] for name, data in received if name == "token") == received[-1][1]["answer"]
    evidence, done = received[0][1], received[-1][1]
    assert sources(evidence) == sources(done) and done["claims"][0]["citations"] == [1]
    assert done["query_id"] == evidence["query_id"] != plain.json()["query_id"]  # one id per query, for feedback
    same = lambda answer: {k: v for k, v in answer.items() if k in evidence and k not in ("timings_ms", "query_id")}  # noqa: E731
    assert same(done) == same(plain.json())  # the same contract, streamed or not


BAD_BODIES = [
    ('{"question": ', "invalid_request"),  # malformed JSON
    ('{"question": "Why?", "colour": "red"}', "invalid_request"),  # unknown field
    ('{"generate": false}', "invalid_request"),  # no question
    ('{"question": "   ", "generate": false}', "bad_question"),  # empty question
    (json.dumps({"question": "why " * 25_000, "generate": False}), "bad_question"),  # a 100 KB question
]


@pytest.mark.parametrize("body,code", BAD_BODIES)
@pytest.mark.slow
def test_bad_requests_get_one_json_error_and_never_a_500(service, body, code):
    client, auth = service
    response = client.post("/v1/query", content=body, headers={**auth["a"], "Content-Type": "application/json"})
    assert 400 <= response.status_code < 500 and response.json()["code"] == code, response.text
    assert "Traceback" not in response.text and "\n" not in response.json()["message"]


@pytest.mark.slow
def test_an_oversized_body_is_413(service):
    client, auth = service
    response = client.post(
        "/v1/query",
        content=json.dumps({"question": "x" * 300_000}),
        headers={**auth["a"], "Content-Type": "application/json"},
    )
    assert response.status_code == 413 and response.json()["code"] == "body_too_large"


@pytest.mark.slow
def test_health_and_readiness_and_the_answer_models_own(teams):
    """Ready to search once the embedder and the store are; ready to answer (``?answers=true``) only
    once the answer model is in: the embedded model loads on the first answer, or at start with
    ``serve --preload``; a model server is its own."""
    start, _ = teams
    embedded = {"generation": {"backend": "embedded"}, "llm": {"gguf": None, "model": "not-loaded-here"}}
    with start(**embedded) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz")
        assert ready.status_code == 200
        assert ready.json() == {"ready": True, "embedder": True, "store": True, "model": False}
        assert client.get("/readyz", params={"answers": "true"}).status_code == 503
        openapi = client.get("/openapi.json").json()
        assert client.get("/docs").status_code == 200 and openapi["paths"]["/v1/query"]
        assert openapi["info"]["version"] == __version__  # the package's, not FastAPI's default
    with ollama_standin() as ollama, start(ollama={"host": ollama.host}, generation={"backend": "ollama"}) as client:
        answering = client.get("/readyz", params={"answers": "true"})
        assert answering.status_code == 200 and answering.json()["model"] is True


def test_key_add_prints_the_key_once_and_stores_its_hash(tmp_path):
    keys = tmp_path / "keys.toml"
    result = run("key", "add", "--namespace", "team-a", "--read-only", env={"QRAG_SERVICE_KEYS": str(keys)})
    assert result.exit_code == 0, result.stderr
    key = result.stdout.strip()
    assert key.startswith("qrag_") and key not in keys.read_text()
    assert KeyFile.load(keys).principal(key) == Principal("team-a", "read")
    assert_clean_error(run("key", "add", "--namespace", "Team A", env={"QRAG_SERVICE_KEYS": str(keys)}), 1, "namespace")
    admin = run("key", "add", "--namespace", "team-a", "--admin", env={"QRAG_SERVICE_KEYS": str(keys)})
    assert KeyFile.load(keys).principal(admin.stdout.strip()) == Principal("team-a", "admin")
    assert_clean_error(
        run("key", "add", "--namespace", "team-a", "--admin", "--read-only", env={"QRAG_SERVICE_KEYS": str(keys)}),
        1,
        "exclude each other",
    )


@pytest.mark.slow
def test_a_client_that_leaves_mid_stream_does_not_break_the_service(teams):
    start, auth = teams
    hold = threading.Event()
    with (
        ollama_standin(hold=hold) as ollama,
        start(ollama={"host": ollama.host}, generation={"backend": "ollama", "judge": False}) as client,
    ):
        with client.stream("POST", "/v1/query", json={"question": BEES, "stream": True}, headers=auth["a"]) as r:
            first = next(r.iter_lines())
            assert first == "event: evidence" and ollama.first_token_sent.wait(60)
        hold.set()  # the abandoned answer finishes in the background
        after = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
        assert after.status_code == 200 and not after.json()["abstained"]


@pytest.mark.slow
def test_sigterm_lets_the_answer_in_flight_finish(tmp_path, corpus, embedder):
    store, keys = tmp_path / "store", tmp_path / "keys.toml"
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        rag.ingest(corpus)
    key = KeyFile.load(keys).add("default", "read")
    hold, port = threading.Event(), free_port()
    with ollama_standin(hold=hold) as ollama:
        env = {
            **os.environ,
            "QRAG_STORE": str(store),
            "QRAG_SERVICE_KEYS": str(keys),
            "QRAG_OLLAMA_HOST": ollama.host,
            "QRAG_GENERATION_BACKEND": "ollama",
            "QRAG_GENERATION_JUDGE": "false",
        }
        command = [str(Path(sys.executable).parent / "qrag-qdrant"), "serve", "--port", str(port)]
        server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            base = f"http://127.0.0.1:{port}"

            def ready_or_gone() -> bool:
                if server.poll() is not None:
                    return True
                try:
                    return httpx.get(f"{base}/readyz").status_code == 200
                except httpx.TransportError:
                    return False

            wait_until(ready_or_gone, "the service answered /readyz", poll=0.2)
            assert server.poll() is None, server.stdout.read()
            received: list[str] = []

            def ask() -> None:
                with httpx.stream(
                    "POST",
                    f"{base}/v1/query",
                    json={"question": BEES, "stream": True},
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=120,
                ) as response:
                    received.extend(response.iter_lines())

            client = threading.Thread(target=ask)
            client.start()
            assert ollama.first_token_sent.wait(120)  # the answer is in flight
            server.send_signal(signal.SIGTERM)
            hold.set()
            client.join(120)
            # uvicorn finishes what is in flight, then re-raises the signal: killed by SIGTERM, after the answer
            assert server.wait(120) in (0, -signal.SIGTERM)
        finally:
            if server.poll() is None:
                server.kill()
    done = [
        json.loads(line.removeprefix("data: "))
        for line, before in zip(received[1:], received)
        if before == "event: done"
    ]
    assert done and done[0]["answer"] == "Foragers perform the waggle dance [1]."


def metric(client, name: str) -> int:
    result = {"hits": "hit", "misses": "miss", "stale": "stale"}[name]
    return int(metric_value(client.get("/metrics").text, "qrag_cache_lookups_total", result=result) or 0)


def test_a_repeated_question_is_answered_from_the_cache_until_the_index_changes(service, tmp_path):
    client, auth = service
    ask = lambda question, team="a": client.post(  # noqa: E731
        "/v1/query", json={"question": question, "generate": False}, headers=auth[team]
    ).json()
    first = ask(BEES)
    assert "cache_miss" in first["timings_ms"] and len(first["timings_ms"]) > 1  # and the stages it ran
    again = ask("  how do HONEYBEE foragers tell their sisters where the flowers are?")
    assert set(again["timings_ms"]) == {"cache_hit"} and again["clusters"] == first["clusters"]
    assert (metric(client, "hits"), metric(client, "misses")) == (1, 1)
    assert "cache_miss" in ask(BEES, team="b")["timings_ms"]  # another namespace, another entry

    more = tmp_path / "more"
    more.mkdir()
    (more / "owls.txt").write_text("Barn owls hunt at night and find mice by sound alone. " * 5)
    client.app.state.namespaces.rag("team-a").ingest(more)  # any ingest stamps the index
    after = ask(BEES)
    assert "cache_miss" in after["timings_ms"] and metric(client, "stale") == 1
    assert "cache_hit" in ask(BEES)["timings_ms"]


def test_feedback_on_a_cached_answer_keeps_the_gates_features(teams, tmp_path):
    """A repeated question is answered from the cache; the cached answer must still carry the
    gate's features (not part of the JSON), or its feedback exports an empty training row."""
    start, auth = teams
    with (
        ollama_standin(tokens=["waggle dance ", "[1]"]) as ollama,
        start(ollama={"host": ollama.host}, generation={"backend": "ollama"}) as client,
    ):
        first = client.post("/v1/query", json={"question": BEES}, headers=auth["a"]).json()
        again = client.post("/v1/query", json={"question": BEES}, headers=auth["a"]).json()
        assert "cache_hit" in again["timings_ms"] and again["answer"] == first["answer"] == "waggle dance [1]"
        assert again["short_answer"] == "waggle dance" and again["claims"][0]["grounded"] is True
        rated = client.post("/v1/feedback", json={"query_id": again["query_id"], "rating": "up"}, headers=auth["a"])
        assert rated.status_code == 201, rated.text
    out = tmp_path / "rows.jsonl"
    result = run("feedback", "export", "--store", str(tmp_path / "store"), "--namespace", "team-a", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(row["features"]) == len(QUORUM_FEATURES) and row["confidence"] == first["confidence"]


@pytest.mark.slow
def test_feedback_is_kept_per_namespace_and_exported_as_gate_rows(service, tmp_path):
    client, auth = service
    asked = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"]).json()
    query_id = asked["query_id"]
    given = client.post(
        "/v1/feedback", json={"query_id": query_id, "rating": "up", "comment": "spot on"}, headers=auth["a"]
    )
    assert given.status_code == 201, given.text
    # another team cannot rate, or learn of, team a's query; nor can anyone rate a query never asked
    for body, team in (({"query_id": query_id, "rating": "down"}, "b"), ({"query_id": "0" * 32, "rating": "up"}, "a")):
        refused = client.post("/v1/feedback", json=body, headers=auth[team])
        assert refused.status_code == 404 and refused.json()["code"] == "unknown_query"
    bad = client.post("/v1/feedback", json={"query_id": query_id, "rating": "meh"}, headers=auth["a"])
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_request"

    store = tmp_path / "store"
    assert not (store / "feedback-team-b.jsonl").exists()
    out = tmp_path / "rows.jsonl"
    result = run("feedback", "export", "--store", str(store), "--namespace", "team-a", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["label"] is True and row["group"] == "honeybees.txt" and row["confidence"] == asked["confidence"]
    assert len(row["features"]) == len(QUORUM_FEATURES)  # the gate's inputs, as `gate train` reads them
    assert SystemRows.of([row]).x.shape == (1, len(QUORUM_FEATURES))
    assert_clean_error(
        run("feedback", "export", "--store", str(store), "--namespace", "team-b", "--out", str(out)), 1, "no feedback"
    )


OWLS = "Barn owls hunt at night and find mice in total darkness by sound alone. " * 4


@pytest.mark.slow
def test_uploaded_files_are_ingested_by_a_job_the_team_can_follow(service):
    client, auth = service
    files = [
        ("files", ("birds/owls.txt", OWLS.encode(), "text/plain")),
        ("files", ("photo.png", b"\x89PNG\r\n", "image/png")),
    ]
    started = client.post("/v1/ingest", files=files, headers=auth["a"])
    assert started.status_code == 202, started.text
    assert started.headers["location"] == f"/v1/jobs/{started.json()['id']}"
    job = finished(client, started.json(), auth["a"])
    assert job["state"] == "done" and job["error"] is None, job
    assert (job["files_total"], job["files_done"], job["files_skipped"]) == (2, 2, 1) and job["chunks_embedded"] > 0
    assert job["report"]["skipped"] == [{"source": "photo.png", "reason": "unsupported format (.png)"}]
    assert job["report"]["root"] == "(uploaded files)"  # not the server's temporary folder
    owls = client.post(
        "/v1/query", json={"question": "How do barn owls find mice?", "generate": False}, headers=auth["a"]
    ).json()
    assert "birds/owls.txt" in sources(owls)
    # another team cannot follow the job, and a read-only key cannot ingest
    assert client.get(f"/v1/jobs/{job['id']}", headers=auth["b"]).json()["code"] == "unknown_job"
    refused = client.post("/v1/ingest", files=files, headers=auth["b"])
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert "birds/owls.txt" not in {
        s
        for c in client.post(
            "/v1/query", json={"question": "How do barn owls find mice?", "generate": False}, headers=auth["b"]
        ).json()["clusters"]
        for s in (p["source"] for p in c["passages"])
    }


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", ".hidden.txt", "a/../../b.txt", ""])
@pytest.mark.slow
def test_an_upload_name_outside_the_job_folder_is_refused(service, name):
    client, auth = service
    response = client.post("/v1/ingest", files=[("files", (name, b"text", "text/plain"))], headers=auth["a"])
    assert response.status_code == 422 and response.json()["code"] == "invalid_request", response.text


@pytest.mark.slow
def test_a_server_path_needs_an_admin_key_and_a_folder_the_namespace_may_ingest_from(teams, tmp_path):
    start, auth = teams
    roots = tmp_path / "roots"
    folder = roots / "team-a" / "server-docs"
    folder.mkdir(parents=True)
    (folder / "owls.txt").write_text(OWLS)
    body = {"path": str(folder)}
    every_document = {
        "Authorization": f"Bearer {KeyFile.load(tmp_path / 'keys.toml').add('team-a', 'read', groups=['*'])}"
    }
    with start(service={"ingest_roots": {"team-a": [str(roots / "team-a")]}}) as client:
        refused = client.post("/v1/ingest", json=body, headers=auth["a"])
        assert refused.status_code == 403 and "admin" in refused.json()["message"]
        job = finished(client, client.post("/v1/ingest", json=body, headers=auth["a-admin"]).json(), auth["a-admin"])
        assert job["state"] == "done" and job["report"]["documents"] == 1 and job["source"] == str(folder)
        # another key of the team finds the job only if it reads every document (a file's name may be
        # a secret of its readers), and even then reads no path on the server anywhere in it
        assert client.get(f"/v1/jobs/{job['id']}", headers=auth["a"]).status_code == 404
        seen = client.get(f"/v1/jobs/{job['id']}", headers=every_document)
        assert seen.status_code == 200 and seen.json()["state"] == "done" and str(tmp_path) not in seen.text
        assert seen.json()["source"] == "(a folder on the server)" and seen.json()["report"]["documents"] == 1
        assert folder.joinpath("owls.txt").exists()  # a server folder is never removed
        missing = client.post("/v1/ingest", json={"path": str(folder / "nope")}, headers=auth["a-admin"])
        assert missing.status_code == 400 and missing.json()["code"] == "bad_corpus"
        unknown = client.post("/v1/ingest", json={"path": str(folder), "colour": "red"}, headers=auth["a-admin"])
        assert unknown.status_code == 422 and unknown.json()["code"] == "invalid_request"
        neither = client.post("/v1/ingest", content=b"path", headers={**auth["a"], "Content-Type": "text/plain"})
        assert neither.status_code == 415 and neither.json()["code"] == "unsupported_media_type"


def test_an_admin_key_ingests_nothing_outside_its_namespaces_roots(teams, tmp_path):
    """The probe's cross-team leak: team a's admin key asked for team b's source folder."""
    start, auth = teams
    roots = tmp_path / "roots"
    (roots / "team-a").mkdir(parents=True)
    team_b_docs = roots / "team-b"
    team_b_docs.mkdir()
    (team_b_docs / "canary.txt").write_text("The canary of team b sings the word zymurgy-4417 at dawn. " * 5)
    (roots / "team-a" / "link").symlink_to(team_b_docs)  # a link inside team a's root, to team b's folder
    outside = [
        str(team_b_docs),
        str(roots / "team-a" / ".." / "team-b"),
        str(roots / "team-a" / "link"),
        "/etc",
        "relative/path",
    ]
    with start() as client:  # no roots at all: server paths are off
        off = client.post("/v1/ingest", json={"path": str(roots / "team-a")}, headers=auth["a-admin"])
        assert off.status_code == 403 and "service.ingest_roots" in off.json()["message"]
    roots_setting = {"team-a": [str(roots / "team-a")], "team-b": [str(team_b_docs)]}
    with start(service={"ingest_roots": roots_setting}) as client:
        for path in outside:
            refused = client.post("/v1/ingest", json={"path": path}, headers=auth["a-admin"])
            assert refused.status_code == 403, (path, refused.text)
            assert str(tmp_path) not in refused.text
        # nothing of team b's reached team a's namespace
        found = client.post(
            "/v1/query", json={"question": "What does the canary sing?", "generate": False}, headers=auth["a"]
        ).json()
        assert "zymurgy" not in json.dumps(found)
    with start(service={"ingest_roots": {"*": [str(roots)]}}) as client:  # a root for every namespace
        accepted = client.post("/v1/ingest", json={"path": str(roots / "team-a")}, headers=auth["a-admin"])
        assert accepted.status_code == 202


def test_a_job_that_finds_nothing_readable_fails_with_the_reason(service):
    client, auth = service
    started = client.post(
        "/v1/ingest", files=[("files", ("blob.txt", bytes(range(256)) * 8, "text/plain"))], headers=auth["a"]
    )
    job = finished(client, started.json(), auth["a"])
    assert job["state"] == "failed" and job["error"]["code"] == "bad_corpus"
    assert "blob.txt: binary file" in job["error"]["message"]


class HeldLoader:
    """Reads .held files only when the test lets it: an ingest that stays in flight on cue."""

    suffixes = (".held",)

    def __init__(self):
        self.entered, self.release = threading.Event(), threading.Event()

    def sniff(self, head: bytes) -> bool:
        return False

    def blocks(self, path: Path):
        self.entered.set()
        assert self.release.wait(300), "the test never released the ingest"
        yield TextBlock(path.read_text())


@pytest.mark.slow
def test_queries_go_on_during_an_ingest_and_a_second_ingest_waits(service, monkeypatch):
    client, auth = service
    held = HeldLoader()
    monkeypatch.setitem(loaders.LOADERS.local, "held", held)

    def ask():
        return client.post(
            "/v1/query",
            json={
                "question": "How do barn owls find mice?",
                "generate": False,
            },
            headers=auth["a"],
        )

    before = ask().json()
    first = client.post(
        "/v1/ingest", files=[("files", ("owls.held", OWLS.encode(), "text/plain"))], headers=auth["a"]
    ).json()
    assert held.entered.wait(300)  # the first job is inside its ingest now
    second = client.post(
        "/v1/ingest", files=[("files", ("more.txt", BEES.encode(), "text/plain"))], headers=auth["a"]
    ).json()
    during = [ask() for _ in range(3)]
    assert all(r.status_code == 200 for r in during)
    assert all(sources(r.json()) == sources(before) for r in during)  # the old index, served meanwhile
    assert client.get(f"/v1/jobs/{first['id']}", headers=auth["a"]).json()["state"] == "running"
    assert client.get(f"/v1/jobs/{second['id']}", headers=auth["a"]).json()["state"] == "queued"
    other = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"])
    assert other.status_code == 200  # another namespace is not held up either
    held.release.set()
    assert finished(client, first, auth["a"])["state"] == "done"
    assert finished(client, second, auth["a"])["state"] == "done"
    assert "owls.held" in sources(ask().json())
