"""The audit log: a line per query, answer, ingest, removal, key change and refusal, with the
request id the response carries; never a key; written off the request path, so a log that
cannot be written never fails a request."""

from __future__ import annotations

import json
import logging

import pytest

from .cli_helpers import assert_clean_error, run
from .ollama_standin import ollama_standin
from .service_helpers import BEES

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_every_kind_of_event_is_one_line_with_the_request_id_and_no_key(teams, tmp_path):
    start, auth = teams
    log = tmp_path / "audit.jsonl"
    service = {"audit_log": log, "rate_feedback": "1/minute"}
    with ollama_standin(tokens=["the waggle ", "dance ", "[1]"]) as ollama:
        with start(service=service, ollama={"host": ollama.host}, generation={"backend": "ollama"}) as client:
            asked = client.post("/v1/query", json={"question": BEES}, headers={**auth["a"], "X-Request-ID": "trace-42"})
            evidence = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"])
            no_key = client.post("/v1/query", json={"question": BEES})
            read_only = client.post("/v1/ingest", files=[("files", ("x.txt", b"text"))], headers=auth["b"])
            upload = client.post(
                "/v1/ingest", files=[("files", ("owls.txt", b"Barn owls hunt by ear."))], headers=auth["a"]
            )
            removed = client.delete("/v1/documents/games/chess.txt", headers=auth["a"])
            rated = [
                client.post("/v1/feedback", json={"query_id": "0" * 32, "rating": "up"}, headers=auth["a"])
                for _ in range(2)
            ]
    # the service has stopped: every queued line is written
    written = lines(log)
    by_id = {line["request_id"]: line for line in written if line["event"] != "answer"}
    assert asked.headers["x-request-id"] == "trace-42" and len(evidence.headers["x-request-id"]) == 32
    query = by_id["trace-42"]
    assert (query["event"], query["outcome"], query["namespace"], query["generate"]) == ("query", "ok", "team-a", True)
    assert len(query["question_sha256"]) == 64 and "question" not in query and query["client"]
    (answer,) = [line for line in written if line["event"] == "answer"]
    assert (answer["request_id"], answer["outcome"]) == ("trace-42", "answered") and answer["completion_tokens"] == 3
    assert by_id[evidence.headers["x-request-id"]]["namespace"] == "team-b"
    refusal = by_id[no_key.headers["x-request-id"]]
    assert (refusal["event"], refusal["status"], refusal["key"], refusal["path"]) == ("refused", 401, None, "/v1/query")
    assert by_id[read_only.headers["x-request-id"]]["status"] == 403
    assert (
        by_id[upload.headers["x-request-id"]]["event"] == "ingest"
        and by_id[upload.headers["x-request-id"]]["files"] == 1
    )
    remove = by_id[removed.headers["x-request-id"]]
    assert (remove["event"], remove["source"], remove["namespace"]) == ("remove", "games/chess.txt", "team-a")
    assert remove["points"] > 0
    assert [r.status_code for r in rated] == [404, 429] and by_id[rated[1].headers["x-request-id"]]["status"] == 429
    assert rated[0].headers["x-request-id"] not in by_id  # a plain 404 on feedback is no event
    text = log.read_text()
    for header in auth.values():
        assert header["Authorization"].split()[1] not in text  # never a key
    assert "Bearer" not in text


def test_the_question_text_is_kept_only_when_asked_for(teams, tmp_path):
    start, auth = teams
    log = tmp_path / "audit.jsonl"
    with start(service={"audit_log": log, "audit_questions": True}) as client:
        client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
    (line,) = lines(log)
    assert line["question"] == BEES


def test_a_log_that_cannot_be_written_never_fails_a_request(teams, tmp_path, caplog):
    start, auth = teams
    unwritable = tmp_path / "a-folder"
    unwritable.mkdir()  # a folder where the file should be: every write fails, as on a full disk
    with caplog.at_level(logging.WARNING, logger="qrag_qdrant.service.audit"):
        with start(service={"audit_log": unwritable}) as client:
            responses = [
                client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
                for _ in range(3)
            ]
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [r.message for r in caplog.records].count(
        f"the audit log cannot be written ({unwritable}); lines are being dropped"
    ) == 1


@pytest.mark.slow
def test_the_log_rotates_and_the_audit_command_reads_it_whole(teams, tmp_path):
    start, auth = teams
    log = tmp_path / "audit.jsonl"
    config = tmp_path / "audit.toml"
    keys = tmp_path / "keys.toml"
    config.write_text(f'[service]\naudit_log = "{log}"\naudit_max_bytes = 700\naudit_backups = 20\nkeys = "{keys}"\n')
    with start(service={"audit_log": log, "audit_max_bytes": 700, "audit_backups": 20}) as client:
        for team in ("a", "b", "a", "b", "a"):
            client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth[team])
        client.post("/v1/query", json={"question": BEES})
    assert (tmp_path / "audit.jsonl.1").exists() and (tmp_path / "audit.jsonl.2").exists()
    every = json.loads(run("audit", "--config", str(config), "--json").stdout)
    assert [line["event"] for line in every] == ["query"] * 5 + ["refused"]
    assert [line["time"] for line in every] == sorted(line["time"] for line in every)  # oldest first
    team_a = json.loads(run("audit", "--config", str(config), "--namespace", "team-a", "--json").stdout)
    assert len(team_a) == 3 and {line["namespace"] for line in team_a} == {"team-a"}
    refused = json.loads(run("audit", "--config", str(config), "--event", "refused", "--since", "1h", "--json").stdout)
    assert len(refused) == 1 and refused[0]["status"] == 401
    assert json.loads(run("audit", "--config", str(config), "--until", "2000-01-01", "--json").stdout) == []
    table = run("audit", "--config", str(config), "--limit", "2")
    assert "2 audit lines" in table.stdout and "refused" in table.stdout
    assert_clean_error(run("audit", "--config", str(config), "--since", "yesterday"), 1, "--since 'yesterday'")


def test_the_audit_view_shows_markup_in_a_path_as_written(teams, tmp_path):
    """Unauthenticated paths land in the log as the client wrote them: ``/v1/[/]`` once made the
    view exit with a markup error, and ``[bold red]`` restyled it."""
    start, _ = teams
    log, config = tmp_path / "audit.jsonl", tmp_path / "audit.toml"
    config.write_text(f'[service]\naudit_log = "{log}"\n')
    hostile = ["/v1/%5B/%5D", "/v1/%5Bbold%20red%5Dalarm%5B/bold%20red%5D", "/v1/%5Blink=http://evil.example%5Dx"]
    with start(service={"audit_log": log}) as client:
        for path in hostile:
            assert client.get(path).status_code == 401
    shown = run("audit", "--config", str(config))
    assert shown.exit_code == 0, shown.stderr
    flat = "".join(shown.stdout.split())  # the table may wrap a cell
    for written in ("/v1/[/]", "/v1/[boldred]alarm[/boldred]", "/v1/[link=http://evil.example]x"):
        assert written in flat


def test_key_changes_are_audited_without_the_key(tmp_path):
    log, keys = tmp_path / "audit.jsonl", tmp_path / "keys.toml"
    config = tmp_path / "q.toml"
    config.write_text(f'[service]\naudit_log = "{log}"\nkeys = "{keys}"\n')
    added = run("key", "add", "--namespace", "team-a", "--name", "ci", "--config", str(config))
    rotated = run("key", "rotate", "ci", "--config", str(config))
    assert run("key", "revoke", "ci", "--config", str(config)).exit_code == 0
    written = lines(log)
    assert [(line["event"], line["action"]) for line in written] == [
        ("key", "added"),
        ("key", "rotated"),
        ("key", "revoked"),
    ]
    assert {line["namespace"] for line in written} == {"team-a"} and {line["name"] for line in written} == {"ci"}
    text = log.read_text()
    assert added.stdout.strip() not in text and rotated.stdout.strip() not in text
