"""The shared service against a careless or hostile client: bodies that never end, bad upload
names, keys that change while it runs, a client that leaves mid-answer, secrets in messages,
and requests past a key's rate. Each case sends the request through HTTP (TestClient) or, where
the bytes on the wire matter, straight to the ASGI app."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import threading
from datetime import UTC, datetime, timedelta
from typing import ClassVar

import httpx
import pytest

from qrag_qdrant.generation import BackendDefaults, register_backend

from .cli_helpers import assert_clean_error, run
from .service_helpers import BEES, finished, metric_value
from .test_generation import closed_port
from .waiting import wait_until

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
from qrag_qdrant.service.auth.guard import RateLimits
from qrag_qdrant.service.auth.keys import KeyFile

MB = 1 << 20


def call_asgi(
    app,
    path: str,
    headers: dict[str, str],
    chunks,
    disconnect_when: threading.Event | None = None,
    spec: str = "2.3",
    method: str = "POST",
):
    """One HTTP request straight to the ASGI app: the body as ``chunks`` (bytes, pulled one at a time
    and counted), no Content-Length. Returns (status, body, chunks pulled). After the body,
    ``receive`` answers ``http.disconnect`` once ``disconnect_when`` is set (else when the response ends).
    ``spec``: the ASGI HTTP spec the server claims (uvicorn: 2.4, where a response learns that its
    client left only from a failed write, unless it listens for the disconnect itself)."""
    pulled, sent, body = 0, [], []
    source = iter(chunks)
    upcoming = next(source, None)
    ended = asyncio.Event()

    async def receive():
        nonlocal pulled, upcoming
        if upcoming is not None:
            chunk, upcoming = upcoming, next(source, None)
            pulled += 1
            return {"type": "http.request", "body": chunk, "more_body": upcoming is not None}
        if disconnect_when is not None:
            await asyncio.get_running_loop().run_in_executor(None, disconnect_when.wait, 120)
        else:
            await ended.wait()
        return {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)
        if message["type"] == "http.response.body":
            body.append(message.get("body", b""))
            if not message.get("more_body"):
                ended.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": spec},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(body), pulled


def endless(size: int = 64 * 1024, total: int = 100 * MB):
    for _ in range(total // size):
        yield b"x" * size


BODY_PATHS = ["/v1/query", "/v1/feedback", "/v1/chat/completions", "/v1/mcp/", "PUT /v1/documents/a.txt/readers"]


def error_code(body: bytes) -> str:
    """The code of either error shape: the service's, or OpenAI's on its routes."""
    data = json.loads(body)
    return data["error"]["code"] if "error" in data else data["code"]


@pytest.mark.parametrize("path", BODY_PATHS)
@pytest.mark.slow
def test_an_unauthenticated_chunked_body_is_refused_before_it_is_read(service, path):
    client, _ = service
    method, _, path = path.rpartition(" ")
    headers = {"content-type": "application/json"}
    status, body, pulled = call_asgi(client.app, path, headers, endless(), method=method or "POST")
    assert status == 401 and error_code(body) in ("unauthorized", "invalid_api_key") and pulled == 0


@pytest.mark.parametrize("path", BODY_PATHS)
@pytest.mark.slow
def test_a_chunked_body_is_cut_off_at_the_limit(service, path):
    client, auth = service
    method, _, path = path.rpartition(" ")
    headers = {"content-type": "application/json", **{k.lower(): v for k, v in auth["a"].items()}}
    status, body, pulled = call_asgi(client.app, path, headers, endless(), method=method or "POST")
    assert status == 413 and error_code(body) == "body_too_large", (status, body)
    assert pulled * 64 * 1024 <= 200_000 + 64 * 1024  # the fixture's max_body_bytes, and one chunk more


def test_a_chunked_upload_over_the_upload_limit_is_refused_and_leaves_nothing(teams, tmp_path):
    start, auth = teams
    with start(service={"max_upload_bytes": 2 * MB}) as client:
        content_type, whole = multipart([(b"big.txt", b"word " * (600 * 1024))])  # 3 MB
        headers = {"content-type": content_type, **{k.lower(): v for k, v in auth["a"].items()}}
        chunks = [whole[i : i + 64 * 1024] for i in range(0, len(whole), 64 * 1024)]
        status, body, _ = call_asgi(client.app, "/v1/ingest", headers, chunks)
    assert status == 413 and json.loads(body)["code"] == "body_too_large"
    assert not list((tmp_path / "store" / ".uploads").glob("*/*"))


def multipart(files: list[tuple[bytes, bytes]]) -> tuple[str, bytes]:
    """A multipart/form-data body with the file names as raw bytes (an HTTP client would escape them)."""
    boundary = b"qrag-test-boundary"
    parts = [
        b"--"
        + boundary
        + b'\r\nContent-Disposition: form-data; name="files"; filename="'
        + name
        + b'"\r\nContent-Type: text/plain\r\n\r\n'
        + data
        + b"\r\n"
        for name, data in files
    ]
    return f"multipart/form-data; boundary={boundary.decode()}", b"".join(parts) + b"--" + boundary + b"--\r\n"


# (a name that is not UTF-8 is read as Latin-1 by Starlette: a legal, if odd, name)
@pytest.mark.parametrize(
    "name",
    [
        b"bad\x00name.txt",
        b"a/" + b"x" * 256 + b".txt",
        b"tab\there.txt",
        b"../up.txt",
        b"/etc/passwd",
        b"a\\..\\..\\win.txt",
    ],
)
@pytest.mark.slow
def test_every_bad_upload_name_is_a_422_and_leaves_nothing(service, tmp_path, name):
    client, auth = service
    content_type, body = multipart([(b"good.txt", b"fine text " * 20), (name, b"more text")])
    headers = {"content-type": content_type, **{k.lower(): v for k, v in auth["a"].items()}}
    status, response, _ = call_asgi(client.app, "/v1/ingest", headers, [body])
    assert status == 422 and json.loads(response)["code"] == "invalid_request", response
    assert not list((tmp_path / "store" / ".uploads").glob("*/*"))


def test_a_file_beside_a_folder_of_the_same_name_is_a_422(service, tmp_path):
    client, auth = service
    files = [
        ("files", ("clash", b"a file", "text/plain")),
        ("files", ("clash/inner.txt", b"in a folder", "text/plain")),
    ]
    response = client.post("/v1/ingest", files=files, headers=auth["a"])
    assert response.status_code == 422 and "both as a file and as a folder" in response.json()["message"]
    assert not list((tmp_path / "store" / ".uploads").glob("*/*"))


def test_uploads_left_by_a_killed_run_are_swept_at_start(teams, tmp_path):
    start, _ = teams
    left = tmp_path / "store" / ".uploads" / "job-killed"
    left.mkdir(parents=True)
    (left / "half.txt").write_text("half written")
    with start():
        assert not left.exists()


def test_a_namespace_cannot_queue_more_uploads_than_its_cap(teams, tmp_path):
    start, auth = teams
    with start(service={"max_queued_upload_bytes": 1000}) as client:
        files = [("files", ("big.txt", b"word " * 400, "text/plain"))]
        response = client.post("/v1/ingest", files=files, headers=auth["a"])
    assert response.status_code == 413 and response.json()["code"] == "upload_quota", response.text
    assert not list((tmp_path / "store" / ".uploads").glob("*/*"))


def test_an_upload_past_the_quota_stops_being_read_while_it_streams(teams):
    """The quota is checked as the body arrives: a big upload is refused long before its end is read,
    so no amount of parallel uploads can fill the disk with bodies waiting to be parsed. The app is
    called as a server calls it, so what it pulls from ``receive`` is what it read off the socket."""
    start, auth = teams
    boundary, chunk, chunks = "qragboundary", b"bees dance " * 6_000, 100  # 66 KB chunks, 6.6 MB in all
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="big.txt"\r\n'
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    pieces = [head, *([chunk] * chunks), f"\r\n--{boundary}--\r\n".encode()]
    read, replies = [], []

    async def receive():
        if len(read) == len(pieces):
            return {"type": "http.disconnect"}
        read.append(pieces[len(read)])
        return {"type": "http.request", "body": read[-1], "more_body": len(read) < len(pieces)}

    async def send(message):
        replies.append(message)

    headers = [
        (b"authorization", auth["a"]["Authorization"].encode()),
        (b"content-type", f"multipart/form-data; boundary={boundary}".encode()),
        (b"transfer-encoding", b"chunked"),
    ]
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/ingest",
        "raw_path": b"/v1/ingest",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    app = start(service={"max_queued_upload_bytes": 1_000_000, "max_upload_bytes": 50_000_000}).app
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in replies if m["type"] == "http.response.start")
    body = json.loads(b"".join(m.get("body", b"") for m in replies if m["type"] == "http.response.body"))
    assert status == 413 and body["code"] == "upload_quota", body
    assert sum(map(len, read)) < 1_200_000  # read up to the quota, not the 6.6 MB the client had to send


@pytest.mark.slow
def test_a_failed_jobs_error_shows_no_server_path(service, tmp_path):
    client, auth = service
    started = client.post(
        "/v1/ingest", files=[("files", ("blob.bin", bytes(range(256)) * 8, "application/x"))], headers=auth["a"]
    )
    job = finished(client, started.json(), auth["a"])
    assert job["state"] == "failed" and job["error"]["code"] == "bad_corpus", job
    assert str(tmp_path) not in json.dumps(job) and ".uploads" not in json.dumps(job)


@pytest.mark.slow
def test_keys_added_and_revoked_take_effect_on_the_running_service(service, tmp_path):
    client, auth = service
    keys = KeyFile(tmp_path / "keys.toml")
    new = keys.add("team-a", "read", name="late-joiner")
    assert client.get("/v1/collections", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    keys.revoke("late-joiner")
    assert client.get("/v1/collections", headers={"Authorization": f"Bearer {new}"}).status_code == 401
    assert client.get("/v1/collections", headers=auth["a"]).status_code == 200  # the others keep working


def test_key_list_revoke_and_rotate_through_the_cli(tmp_path):
    env = {"QRAG_SERVICE_KEYS": str(tmp_path / "keys.toml")}
    added = run("key", "add", "--namespace", "team-a", "--name", "ci-bot", "--expires", "30d", "--json", env=env)
    assert added.exit_code == 0, added.stderr
    first = json.loads(added.stdout)
    assert stat.S_IMODE((tmp_path / "keys.toml").stat().st_mode) == 0o600
    listed = json.loads(run("key", "list", "--json", env=env).stdout)
    assert [(k["name"], k["namespace"], k["role"]) for k in listed] == [("ci-bot", "team-a", "read-write")]
    assert first["key"] not in json.dumps(listed) and "sha256" not in json.dumps(listed)  # never a key or hash
    rotated = json.loads(run("key", "rotate", "ci-bot", "--json", env=env).stdout)
    keys = KeyFile.load(tmp_path / "keys.toml")
    assert keys.principal(first["key"]) is None and keys.principal(rotated["key"]).namespace == "team-a"
    assert rotated["expires"] is not None and rotated["id"] != first["id"]
    assert run("key", "revoke", rotated["id"], env=env).exit_code == 0
    assert KeyFile.load(tmp_path / "keys.toml").principal(rotated["key"]) is None
    assert_clean_error(run("key", "revoke", "nobody", env=env), 1, "no key with the id or name")
    assert_clean_error(run("key", "add", "--namespace", "team-a", "--name", 'x" role="admin', env=env), 1, "key name")


def test_an_expired_key_is_refused(tmp_path):
    keys = KeyFile(tmp_path / "keys.toml")
    key = keys.add("team-a", "read", ttl_seconds=3600)
    assert keys.principal(key) is not None
    assert keys.principal(key, now=datetime.now(UTC) + timedelta(hours=2)) is None


class EndlessBackend(BackendDefaults):
    """A plug-in backend whose answer never ends, and that records when it is stopped."""

    instances: ClassVar[list[EndlessBackend]] = []
    first_token = threading.Event()

    def __init__(self, settings):
        self.tokens, self.stopped = 0, threading.Event()
        EndlessBackend.instances.append(self)

    def stream(self, question, passages, result):
        try:
            while self.tokens < 1_000_000:
                self.tokens += 1
                EndlessBackend.first_token.set()
                yield "word "
        finally:
            self.stopped.set()


@pytest.mark.parametrize(
    ("path", "stream"),
    [("/v1/query", True), ("/v1/query", False), ("/v1/chat/completions", True), ("/v1/chat/completions", False)],
)
@pytest.mark.slow
def test_a_client_that_leaves_mid_answer_stops_the_model(teams, path, stream):
    start, auth = teams
    register_backend("endless", EndlessBackend)
    EndlessBackend.instances.clear()
    EndlessBackend.first_token.clear()
    with start(generation={"backend": "endless"}) as client:
        headers = {"content-type": "application/json", **{k.lower(): v for k, v in auth["a"].items()}}
        request = (
            {"question": BEES}
            if path == "/v1/query"
            else {"model": "quorum", "messages": [{"role": "user", "content": BEES}]}
        )
        body = json.dumps({**request, "stream": stream}).encode()
        # the client leaves once the model has written its first token
        call_asgi(client.app, path, headers, [body], disconnect_when=EndlessBackend.first_token)
        backend = EndlessBackend.instances[0]
        assert backend.stopped.wait(60) and backend.tokens < 1_000_000
        # the namespace is free at once: the next query is answered
        again = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
        assert again.status_code == 200


@pytest.mark.slow
def test_a_generation_failure_is_a_502_without_the_urls_credentials(teams):
    start, auth = teams
    host = f"http://admin:s3cret-pw@127.0.0.1:{closed_port()}"
    with start(ollama={"host": host}, generation={"backend": "ollama"}) as client:
        response = client.post(
            "/v1/query", json={"question": "What did the Antikythera mechanism model?"}, headers=auth["b"]
        )
    assert response.status_code == 502 and response.json()["code"] == "generation_failed", response.text
    assert "s3cret-pw" not in response.text and "***@127.0.0.1" in response.json()["message"]


@pytest.mark.slow
def test_a_lone_surrogate_is_a_400(service):
    client, auth = service
    response = client.post(
        "/v1/query",
        content=b'{"question": "\\ud800 volcano"}',
        headers={**auth["a"], "Content-Type": "application/json"},
    )
    assert response.status_code == 400 and response.json()["code"] == "bad_question", response.text


def test_every_response_carries_the_security_headers_and_docs_work_offline(service):
    client, _auth = service
    for response in (
        client.get("/"),
        client.get("/docs"),
        client.get("/healthz"),
        client.post("/v1/query", json={"question": BEES}, headers={"Authorization": "Bearer nope"}),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"
        assert response.headers["x-frame-options"] == "DENY" and response.headers["referrer-policy"] == "no-referrer"
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert "unsafe-inline" not in response.headers["content-security-policy"]
    docs = client.get("/docs").text
    assert "cdn" not in docs.lower() and "/swagger/swagger-ui-bundle.js" in docs and "<script>" not in docs
    assert client.get("/swagger/swagger-ui-bundle.js").status_code == 200
    assert "bearer" in json.dumps(client.get("/openapi.json").json()["components"]["securitySchemes"]).lower()


@pytest.mark.slow
def test_a_key_past_its_rate_gets_429_with_retry_after(teams, tmp_path):
    start, auth = teams
    with start(service={"rate_feedback": "2/minute"}) as client:
        asked = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"]).json()
        rate = [
            client.post("/v1/feedback", json={"query_id": asked["query_id"], "rating": "up"}, headers=auth["b"])
            for _ in range(3)
        ]
        assert [r.status_code for r in rate] == [201, 201, 429]
        assert rate[2].json()["code"] == "rate_limited" and int(rate[2].headers["retry-after"]) >= 1
        # another key has its own bucket
        other = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"]).json()
        assert (
            client.post(
                "/v1/feedback", json={"query_id": other["query_id"], "rating": "up"}, headers=auth["a"]
            ).status_code
            == 201
        )


def test_a_token_bucket_refills_at_its_rate():
    now = [0.0]
    limits = RateLimits({"query": (2, 1.0)}, clock=lambda: now[0])
    assert [limits.wait_seconds("query", "k") for _ in range(3)] == [0.0, 0.0, 1.0]
    now[0] = 0.5
    assert limits.wait_seconds("query", "k") == pytest.approx(0.5)
    now[0] = 1.0
    assert limits.wait_seconds("query", "k") == 0.0 and limits.wait_seconds("query", "other") == 0.0
    assert RateLimits({"query": None}).wait_seconds("query", "k") == 0.0


@pytest.mark.slow
def test_jobs_survive_a_restart_and_unfinished_ones_read_interrupted(teams, tmp_path):
    start, auth = teams
    with start() as client:
        started = client.post(
            "/v1/ingest",
            files=[("files", ("owls.txt", b"Barn owls hunt at night. " * 30, "text/plain"))],
            headers=auth["a"],
        )
        done = finished(client, started.json(), auth["a"])
    assert done["state"] == "done"
    # a record the last run left half way, as a kill would
    left = {**done, "id": "f" * 32, "state": "running", "finished": None, "report": None}
    (tmp_path / "store" / ".jobs" / f"{'f' * 32}.json").write_text(json.dumps(left))
    with start() as client:
        again = client.get(f"/v1/jobs/{done['id']}", headers=auth["a"]).json()
        killed = client.get(f"/v1/jobs/{'f' * 32}", headers=auth["a"]).json()
        assert client.get(f"/v1/jobs/{done['id']}", headers=auth["b"]).status_code == 404  # still team a's alone
    assert again == done
    assert killed["state"] == "failed" and killed["error"]["code"] == "interrupted" and killed["finished"]


def test_on_shutdown_jobs_past_the_drain_stop_and_read_interrupted(tmp_path):
    from qrag_qdrant.service.jobs import IngestJobs, JobRecords

    running = threading.Event()

    def run(namespace, path, progress, options):
        running.set()
        while True:  # a long ingest: it goes on until the service stops it at a progress step
            progress.file_read("a.txt")

    jobs = IngestJobs(run, lambda exc: ("error", str(exc)), JobRecords(tmp_path / ".jobs"))
    released = []
    first = jobs.submit("team-a", tmp_path / "a", "a.txt", release=released.append)
    second = jobs.submit("team-a", tmp_path / "b", "b.txt", release=released.append)
    assert running.wait(60)
    jobs.close(drain_seconds=0)
    assert [(j.state, j.error["code"]) for j in (first, second)] == [("failed", "interrupted")] * 2
    assert sorted(released) == [tmp_path / "a", tmp_path / "b"]  # upload folders handed back either way
    on_disk = {j.id: j.state for j in JobRecords(tmp_path / ".jobs").read_all()}
    assert on_disk == {first.id: "failed", second.id: "failed"}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a nice value per thread is Linux's")
def test_a_jobs_threads_run_below_the_questions_cpu_priority_and_the_service_does_not(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from qrag_qdrant.config.service import ServiceSettings
    from qrag_qdrant.service.jobs import IngestJobs, JobRecords

    def niceness() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def work(progress):
        with ThreadPoolExecutor(1) as writer:  # as the ingest's writer thread is started
            return {"job": niceness(), "writer": writer.submit(niceness).result()}

    questions = niceness()
    default = ServiceSettings().job_niceness
    jobs = IngestJobs(
        lambda *a: None, lambda exc: ("error", str(exc)), JobRecords(tmp_path / ".jobs"), niceness=default
    )
    job = jobs.submit_work("team-a", "source:notes", work)
    jobs.close(drain_seconds=60)
    assert job.state == "done" and default > 0
    assert job.report == {"job": min(19, questions + default), "writer": min(19, questions + default)}
    assert niceness() == questions  # the threads answering questions keep theirs


@pytest.mark.slow
def test_a_broken_chunked_body_on_an_authenticated_ingest_is_one_warning_and_no_traceback(teams):
    import logging
    import socket

    from .live_server import live_server

    start, auth = teams
    records: list[logging.LogRecord] = []
    ours = threading.Event()

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)
            if record.name.startswith("qrag_qdrant.service"):
                ours.set()

    handler = Collect(level=logging.INFO)
    watched = [logging.getLogger(name) for name in ("uvicorn.error", "qrag_qdrant")]
    levels = [logger.level for logger in watched]
    try:
        with live_server(start().app) as url:  # the app served once, on a real socket
            for logger in watched:  # after uvicorn has set up its loggers
                logger.addHandler(handler)
                logger.setLevel(logging.INFO)
            host, port = url.removeprefix("http://").split(":")
            with socket.create_connection((host, int(port)), timeout=60) as connection:
                connection.sendall(
                    b"POST /v1/ingest HTTP/1.1\r\nHost: x\r\n"
                    + f"Authorization: {auth['a']['Authorization']}\r\n".encode()
                    + b"Content-Type: multipart/form-data; boundary=xx\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + b"5\r\n--xx\r\nZZZZ\r\nnot-hex\r\n"
                )
                assert connection.recv(4096).startswith(b"HTTP/1.1 400")
            assert ours.wait(60), "the app never saw the body break off"
    finally:
        for logger, level in zip(watched, levels):
            logger.removeHandler(handler)
            logger.setLevel(level)
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "Invalid HTTP request" in warnings[0].getMessage()
    assert not any(r.exc_info for r in records), [r.getMessage() for r in records if r.exc_info]


@pytest.mark.slow
def test_connections_that_never_finish_their_headers_are_closed(teams, tmp_path):
    """A client that opens connections and never ends its headers cannot hold them: each is closed
    once service.header_timeout passes, while a client that sends whole requests is served."""
    import socket

    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.service.server import server_options

    from .live_server import live_server

    start, _ = teams
    options = server_options(load_settings(service={"header_timeout": 1.0}))
    with live_server(start().app, **options) as url:
        host, port = url.removeprefix("http://").split(":")
        stalled = [socket.create_connection((host, int(port)), timeout=60) for _ in range(200)]
        for connection in stalled:
            connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # no blank line: the headers never end
        served = httpx.get(f"{url}/healthz", timeout=60)
        closed = []
        for connection in stalled:
            with connection:
                closed.append(connection.recv(1) == b"")  # EOF: the server closed it (a timeout here fails)
        after = httpx.get(f"{url}/healthz", timeout=60)
    assert served.status_code == 200 and after.status_code == 200
    assert closed == [True] * len(stalled)


@pytest.mark.slow
def test_teams_wait_their_turn_for_the_model_and_a_full_queue_is_a_503(teams):
    """One model, many teams: while team a's answer holds it, team b's streamed question waits,
    told its place; with the queue full, a third answer is refused at once with Retry-After."""
    from .ollama_standin import ollama_standin
    from .service_helpers import events

    start, auth = teams
    gears = "What did the Antikythera mechanism model?"
    release = threading.Event()
    with ollama_standin(hold=release, hold_when=lambda body: BEES in body["messages"][-1]["content"]) as ollama:
        settings = {"ollama": {"host": ollama.host}, "generation": {"backend": "ollama"}}
        with start(service={"queue_capacity": 1}, **settings) as client:
            scheduler = client.app.state.service.scheduler
            replies = {}

            def ask(name, question, headers):
                replies[name] = client.post("/v1/query", json={"question": question, "stream": True}, headers=headers)

            first = threading.Thread(target=ask, args=("a", BEES, auth["a"]))
            first.start()
            assert ollama.first_token_sent.wait(60)  # team a's answer holds the model
            second = threading.Thread(target=ask, args=("b", gears, auth["b"]))
            second.start()
            wait_until(lambda: scheduler.stats.waiting, "team b's answer is in the queue")
            full = client.post(
                "/v1/query", json={"question": BEES + " Again?"}, headers=auth["a"]
            )  # a third, with one waiting: the queue is full
            metrics = client.get("/metrics").text
            release.set()
            first.join(60)
            second.join(60)
    assert full.status_code == 503 and full.json()["code"] == "model_busy" and int(full.headers["Retry-After"]) >= 1
    assert metric_value(metrics, "qrag_queue_waiting") == 1 and metric_value(metrics, "qrag_queue_refused_total") == 1
    received = events(replies["b"])
    names = [name for name, _ in received]
    assert names[:2] == ["evidence", "queued"] and received[1][1] == {"position": 1}
    assert names[-1] == "done" and received[-1][1]["answer"] and received[-1][1]["timings_ms"]["queue_wait"] > 0
    assert [name for name, _ in events(replies["a"])][-1] == "done"
