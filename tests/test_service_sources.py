"""The service's sources: declared in its config, synced on their schedule and when an admin key
asks, refused outside what the operator allows, and shown to each team as its keys may see them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from qrag_qdrant.config.service import ServiceSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.config.sources import SourceSpec
from qrag_qdrant.ingest.sources.register import SourceRegister, SyncResult

from .service_helpers import finished, metric_value
from .waiting import wait_until

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
from qrag_qdrant.service.sources import SourceSchedule, refusal

OWLS = "Barn owls hunt at night and find mice by sound alone, in complete darkness."


def synced(client, headers: dict, name: str, after: str | None = None) -> dict:
    """The source's record once a sync that began after ``after`` has ended."""

    def ended() -> dict | None:
        found = {s["spec"]["name"]: s for s in client.get("/v1/sources", headers=headers).json()["sources"]}
        last = found.get(name, {}).get("last")
        return found[name] if last and (after is None or last["started_at"] > after) else None

    return wait_until(ended, f"source {name} synced")


def wildlife(tmp_path) -> tuple[Path, dict]:
    """Team a's folder of one document, declared as its source ``wildlife``, and the service's settings."""
    folder = tmp_path / "roots" / "team-a" / "wildlife"
    folder.mkdir(parents=True)
    (folder / "owls.txt").write_text(OWLS)
    declared = {"namespace": "team-a", "name": "wildlife", "kind": "folder", "location": str(folder), "every": 3600}
    return folder, {"ingest_roots": {"team-a": [str(tmp_path / "roots" / "team-a")]}, "sources": [declared]}


def test_a_declared_source_is_synced_at_start_and_again_when_an_admin_asks(teams, tmp_path):
    start, auth = teams
    folder, service = wildlife(tmp_path)
    with start(service=service) as client:
        first = synced(client, auth["a-admin"], "wildlife")
        assert first["last"]["added"] == 1 and first["last"]["error"] is None
        assert first["spec"]["location"] == str(folder)  # an admin key sees the server's folder
        answer = client.post(
            "/v1/query", json={"question": "How do barn owls find mice?", "generate": False}, headers=auth["a"]
        ).json()
        assert "wildlife/owls.txt" in {p["source"] for c in answer["clusters"] for p in c["passages"]}
        seen = client.get("/v1/sources", headers=auth["a"]).json()["sources"][0]
        assert seen["spec"]["location"] == "(a folder on the server)" and str(tmp_path) not in str(seen)
        assert client.get("/v1/sources", headers=auth["b"]).json() == {"sources": []}  # another team's

        (folder / "owls.txt").write_text(OWLS.replace("mice", "voles"))
        refused = client.post("/v1/sources/wildlife/sync", headers=auth["a"])
        assert refused.status_code == 403 and "admin" in refused.json()["message"]
        assert client.post("/v1/sources/nope/sync", headers=auth["a-admin"]).status_code == 404
        asked = client.post("/v1/sources/wildlife/sync", headers=auth["a-admin"])
        assert asked.status_code == 202
        job = finished(client, asked.json(), auth["a-admin"])
        assert job["state"] == "done" and job["report"]["changed"] == 1 and job["source"] == "sync of source 'wildlife'"
        metrics = client.get("/metrics").text
        assert metric_value(metrics, "qrag_source_syncs_total", outcome="ok") == 2
        assert metric_value(metrics, "qrag_source_sync_documents_total", change="changed") == 1


def test_the_sources_routes_give_a_hostile_client_nothing(teams, tmp_path):
    from .test_service_hardening import call_asgi, endless

    start, auth = teams
    _, service = wildlife(tmp_path)
    with start(service=service) as client:
        synced(client, auth["a-admin"], "wildlife")
        for headers in ({}, {"Authorization": "Bearer qrag_not-a-key"}):
            assert client.get("/v1/sources", headers=headers).status_code == 401
            assert client.post("/v1/sources/wildlife/sync", headers=headers).status_code == 401
        status, _, pulled = call_asgi(client.app, "/v1/sources/wildlife/sync", {}, endless())
        assert status == 401 and pulled == 0  # refused before a byte of the body is read
        admin = {k.lower(): v for k, v in auth["a-admin"].items()}
        status, _, pulled = call_asgi(client.app, "/v1/sources/wildlife/sync", admin, endless())
        assert status == 413 and pulled <= 200_000 // (64 * 1024) + 1  # cut off at service.max_body_bytes
        assert client.post("/v1/sources/wildlife/sync", headers=auth["b"]).status_code == 403  # a read key
        for name in ("x" * 5000, "..%2F..%2Fetc%2Fpasswd", "wildlife%00", "%2E%2E"):
            refused = client.post(f"/v1/sources/{name}/sync", headers=auth["a-admin"])
            assert refused.status_code in (404, 405) and len(refused.text) < 400
            assert str(tmp_path) not in refused.text
        listed = client.get("/v1/sources?name=../../etc&limit=99999999", headers=auth["a"])
        assert listed.status_code == 200 and str(tmp_path) not in listed.text


def test_a_sync_starts_only_while_the_namespaces_ingest_quota_has_bytes_left(teams, tmp_path):
    start, auth = teams
    folder, service = wildlife(tmp_path)
    service["quotas"] = {"team-a": {"ingest_bytes_per_day": len(OWLS) // 2}}
    with start(service=service) as client:
        first = synced(client, auth["a-admin"], "wildlife")  # bytes were left: it ran, and read past them
        assert first["last"]["added"] == 1 and first["last"]["bytes_read"] == len(OWLS)
        (folder / "owls.txt").write_text(OWLS.replace("mice", "voles"))
        job = finished(
            client, client.post("/v1/sources/wildlife/sync", headers=auth["a-admin"]).json(), auth["a-admin"]
        )
        assert job["state"] == "failed" and job["error"]["code"] == "quota_exceeded"
        refused = synced(client, auth["a-admin"], "wildlife", after=first["last"]["started_at"])["last"]
        assert "ingest_bytes_per_day" in refused["error"] and refused["files_read"] == 0
        assert refused["error"] == job["error"]["message"]


def test_a_source_outside_the_ingest_roots_is_refused_and_its_refusal_recorded(teams, tmp_path):
    start, auth = teams
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "owls.txt").write_text(OWLS)
    declared = {"namespace": "team-a", "name": "stray", "kind": "folder", "location": str(outside), "every": 3600}
    with start(service={"sources": [declared]}) as client:
        record = synced(client, auth["a-admin"], "stray")
        assert "service.ingest_roots" in record["last"]["error"] and record["last_success"] is None
        job = finished(client, client.post("/v1/sources/stray/sync", headers=auth["a-admin"]).json(), auth["a-admin"])
        assert job["state"] == "failed" and job["error"]["code"] == "source_failed"
        docs = client.get("/v1/documents", headers=auth["a"]).json()["documents"]
        assert not any(d["source"].startswith("stray/") for d in docs)


def test_only_urls_the_operator_lists_may_be_fetched():
    service = ServiceSettings(source_urls=["https://git.example.org/"])
    assert (
        refusal(service, "team-a", SourceSpec(name="a", kind="git", location="https://git.example.org/h.git")) is None
    )
    for location in ("https://evil.example.org/h.git", "git@git.example.org:h.git", "file:///etc", "/srv/docs"):
        assert refusal(service, "team-a", SourceSpec(name="a", kind="git", location=location)) is not None


def test_a_source_is_due_every_seconds_after_its_last_sync_began(tmp_path):
    settings = load_settings(store=tmp_path / "store")
    register = SourceRegister(settings.store, "team-a")
    began = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    register.add(SourceSpec(name="hourly", kind="folder", location="/x", every=3600))
    register.add(SourceSpec(name="on-demand", kind="folder", location="/x"))
    register.add(SourceSpec(name="never-synced", kind="folder", location="/x", every=3600))
    register.note("hourly", SyncResult(started_at=began, error="a failed sync counts too"))
    schedule = SourceSchedule(settings, jobs=None, sync=None)  # type: ignore[arg-type]  # due() reads the records only
    due, wait = schedule.due(began + timedelta(minutes=59, seconds=30))
    assert due == [("team-a", "never-synced")] and wait == 30.0
    due, wait = schedule.due(began + timedelta(hours=1))
    assert set(due) == {("team-a", "never-synced"), ("team-a", "hourly")}
    assert wait == 60.0  # LONGEST_SLEEP; a due source's next sync is an hour away
    register.add(SourceSpec(name="often", kind="folder", location="/x", every=15))
    due, wait = schedule.due(began + timedelta(hours=1))
    assert ("team-a", "often") in due and wait == 15.0  # queued now: due again in 15 s, not at the next minute


def test_a_watched_folder_is_synced_when_it_changes(teams, tmp_path):
    pytest.importorskip("watchfiles", reason="the sources extra brings watchfiles")
    start, auth = teams
    root = tmp_path / "roots" / "team-a"
    folder = root / "notes"
    folder.mkdir(parents=True)
    (folder / "owls.txt").write_text(OWLS)  # before the service starts: synced once the folder is watched
    declared = {"namespace": "team-a", "name": "notes", "kind": "folder", "location": str(folder), "watch": True}
    with start(service={"ingest_roots": {"team-a": [str(root)]}, "sources": [declared]}) as client:
        schedule = client.app.state.service.sources
        assert schedule.watch_ready.wait(30), "the folder was not watched"

        def documents() -> set[str]:
            response = client.get("/v1/documents", headers=auth["a"])
            assert response.status_code == 200, response.text
            return {d["source"] for d in response.json()["documents"]}

        # asked four times a second: within the key's lookups a minute (service.rate_lookup) however
        # long a sync takes on a busy box
        often = 0.25
        wait_until(lambda: "notes/owls.txt" in documents(), "the file written before the start synced", poll=often)
        (folder / "bats.txt").write_text("Bats find insects in the dark by echolocation, calling and listening.")
        wait_until(lambda: "notes/bats.txt" in documents(), "a new file synced", poll=often)
        (folder / "owls.txt").unlink()
        wait_until(lambda: "notes/owls.txt" not in documents(), "a deleted file removed", poll=often)
