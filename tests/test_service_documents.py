"""The documents API, as teams and a hostile client use it: each key sees and changes only its own
namespace's documents, and only a read-write key removes one."""

from __future__ import annotations

import pytest

from .sample_corpus import DOCUMENTS
from .service_helpers import BEES

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")


def sources(response) -> list[str]:
    return [d["source"] for d in response.json()["documents"]]


def test_a_team_lists_shows_and_removes_its_own_documents(service):
    client, auth = service
    listed = client.get("/v1/documents", headers=auth["a"])
    assert listed.status_code == 200 and listed.json()["total"] == 5 and listed.json()["can_remove"] is True
    assert sources(listed) == sorted(DOCUMENTS)
    paged = client.get("/v1/documents", params={"offset": 1, "limit": 2}, headers=auth["a"])
    assert sources(paged) == sorted(DOCUMENTS)[1:3] and paged.json()["total"] == 5

    shown = client.get("/v1/documents/games/chess.txt", headers=auth["a"]).json()
    assert shown["source"] == "games/chess.txt" and all(shown["locations"].values())
    before = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"]).json()
    assert "honeybees.txt" in {p["source"] for c in before["clusters"] for p in c["passages"]}

    bees = client.get("/v1/documents/honeybees.txt", headers=auth["a"]).json()
    removed = client.delete("/v1/documents/honeybees.txt", headers=auth["a"])
    assert removed.status_code == 200 and removed.json()["removed"] == bees["chunks"]
    after = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"]).json()
    assert "cache_hit" not in after["timings_ms"]  # the index changed: no stale answer
    assert "honeybees.txt" not in {p["source"] for c in after["clusters"] for p in c["passages"]}
    assert "honeybees.txt" not in sources(client.get("/v1/documents", headers=auth["a"]))
    again = client.delete("/v1/documents/honeybees.txt", headers=auth["a"])
    assert again.status_code == 404 and again.json()["code"] == "unknown_document"


def test_a_team_never_sees_or_touches_another_teams_documents(service):
    client, auth = service
    team_b = client.get("/v1/documents", headers=auth["b"])
    assert sources(team_b) == ["gears.txt"] and team_b.json()["can_remove"] is False
    for method in ("get", "delete"):
        response = getattr(client, method)("/v1/documents/gears.txt", headers=auth["a"])
        assert response.status_code == 404 and response.json()["code"] == "unknown_document"
        response = getattr(client, method)("/v1/documents/games/chess.txt", headers=auth["b"])
        assert response.status_code in (403, 404)
    refused = client.delete("/v1/documents/gears.txt", headers=auth["b"])  # its own, but a read-only key
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert sources(client.get("/v1/documents", headers=auth["b"])) == ["gears.txt"]
    assert client.get("/v1/documents").status_code == 401


@pytest.mark.parametrize(
    "method,path,params,status",
    [
        ("delete", "/v1/documents/..%2F..%2Fetc%2Fpasswd", None, 404),
        ("get", "/v1/documents/../../etc/passwd", None, 404),
        ("get", "/v1/documents/" + "x" * 1001, None, 400),
        ("get", "/v1/documents", {"offset": -1}, 422),
        ("get", "/v1/documents", {"limit": 1001}, 422),
        ("get", "/v1/documents", {"limit": "many"}, 422),
    ],
)
def test_hostile_document_requests_get_a_4xx(service, method, path, params, status):
    client, auth = service
    response = getattr(client, method)(path, params=params, headers=auth["a"])
    assert response.status_code == status, response.text
    assert sources(client.get("/v1/documents", headers=auth["a"])) == sorted(DOCUMENTS)


def test_an_upload_under_the_same_name_replaces_the_document_and_names_the_key(service, tmp_path):
    from qrag_qdrant.service.auth.keys import KeyFile

    from .service_helpers import finished

    client, auth = service
    for text in ("Barn owls hunt mice by sound alone.\n", "Barn owls swallow mice whole and cough up pellets.\n"):
        started = client.post("/v1/ingest", files=[("files", ("owls.txt", text.encode()))], headers=auth["a"])
        assert finished(client, started.json(), auth["a"])["state"] == "done"
        owls = client.get("/v1/documents/owls.txt", headers=auth["a"]).json()
        assert owls["size"] == len(text.strip()) and set(owls["chunks"].values()) == {1}
    entries = KeyFile.load(tmp_path / "keys.toml").entries()
    key = next(e for e in entries if e.namespace == "team-a" and e.role == "read-write")
    assert owls["ingested_by"] == key.id
    asked = client.post(
        "/v1/query", json={"question": "What do barn owls cough up?", "generate": False}, headers=auth["a"]
    )
    texts = [p["text"] for c in asked.json()["clusters"] for p in c["passages"] if p["source"] == "owls.txt"]
    assert texts and all("pellets" in t for t in texts)  # only the new version is searched
