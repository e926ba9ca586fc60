"""Usage per namespace and key, kept across restarts, and the quotas on it: exact under fifty
requests at once, with a 429 that says when the quota resets, or the evidence alone when the
operator chose so."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from qrag_qdrant.service.auth.keys import KeyFile
from qrag_qdrant.service.routes.query import OVER_QUOTA

from .cli_helpers import run
from .live_server import live_server
from .ollama_standin import ollama_standin
from .service_helpers import BEES, metric_value

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")


@pytest.mark.slow
def test_a_quota_stays_exact_under_fifty_requests_at_once(teams, tmp_path, embedder):
    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.service.app import create_app

    _, auth = teams
    service = {"keys": tmp_path / "keys.toml", "usage_db": tmp_path / "usage.db", "cache_entries": 0}
    settings = load_settings(
        store=tmp_path / "store", service={**service, "quotas": {"team-a": {"queries_per_day": 10}}}
    )
    body = {"question": BEES, "generate": False}
    with live_server(create_app(settings, embedder=embedder)) as base, ThreadPoolExecutor(50) as pool:
        with httpx.Client(base_url=base, timeout=120) as client:
            statuses = list(pool.map(lambda _: client.post("/v1/query", json=body, headers=auth["a"]), range(50)))
            other_team = client.post("/v1/query", json=body, headers=auth["b"])
    codes = [r.status_code for r in statuses]
    assert codes.count(200) == 10 and codes.count(429) == 40, codes
    refused = next(r for r in statuses if r.status_code == 429)
    assert refused.json()["code"] == "quota_exceeded" and 0 < int(refused.headers["Retry-After"]) <= 86_400
    assert "queries_per_day (10)" in refused.json()["message"]
    assert other_team.status_code == 200  # another namespace has its own
    config = tmp_path / "q.toml"
    config.write_text(f'[service]\nusage_db = "{tmp_path / "usage.db"}"\n')
    rows = json.loads(run("usage", "--config", str(config), "--json").stdout)
    assert {r["namespace"]: r["queries"] for r in rows} == {"team-a": 10, "team-b": 1}


@pytest.mark.slow
def test_answers_and_tokens_are_counted_kept_across_a_restart_and_capped(teams, tmp_path):
    start, auth = teams
    service = {"usage_db": tmp_path / "usage.db", "quotas": {"team-a": {"answers_per_day": 1}}}
    with ollama_standin(tokens=["the waggle ", "dance ", "[1]"]) as ollama:
        model = {"ollama": {"host": ollama.host}, "generation": {"backend": "ollama", "judge": False}}
        with start(service=service, **model) as client:
            first = client.post("/v1/query", json={"question": BEES}, headers=auth["a"])
            again = client.post("/v1/query", json={"question": "Who decoded the waggle dance?"}, headers=auth["a"])
            evidence = client.post(
                "/v1/query", json={"question": "Who decoded it?", "generate": False}, headers=auth["a"]
            )
        with start(service={**service, "quota_fallback": "evidence"}, **model) as client:  # a restart
            fallback = client.post("/v1/query", json={"question": "Who decoded the waggle dance?"}, headers=auth["a"])
    assert first.status_code == 200 and first.json()["answer"] == "the waggle dance [1]"
    assert again.status_code == 429 and "answers_per_day (1)" in again.json()["message"]
    assert evidence.status_code == 200  # evidence-only questions go on
    assert fallback.status_code == 200 and fallback.json()["answer"] is None
    assert fallback.json()["warnings"] == [OVER_QUOTA] and fallback.json()["clusters"]
    config = tmp_path / "q.toml"
    config.write_text(f'[service]\nusage_db = "{tmp_path / "usage.db"}"\n')
    (row,) = json.loads(run("usage", "--config", str(config), "--json").stdout)
    assert (row["namespace"], row["queries"], row["answers"]) == ("team-a", 4, 1)  # kept across the restart
    assert row["completion_tokens"] == 3 and row["prompt_tokens"] > 0
    keys = KeyFile.load(tmp_path / "keys.toml").entries()
    by_key = json.loads(run("usage", "--config", str(config), "--by-key", "--json").stdout)
    assert [r["key"] for r in by_key] == [
        next(k.id for k in keys if k.namespace == "team-a" and k.role == "read-write")
    ]
    table = run("usage", "--config", str(config))
    assert "team-a" in table.stdout and "completion tokens" in table.stdout


def test_an_upload_over_the_ingest_quota_is_refused_and_leaves_nothing(teams, tmp_path):
    start, auth = teams
    service = {"usage_db": tmp_path / "usage.db", "quotas": {"team-a": {"ingest_bytes_per_day": 2000}}}
    with start(service=service) as client:
        small = client.post("/v1/ingest", files=[("files", ("a.txt", b"owls " * 100))], headers=auth["a"])
        large = client.post("/v1/ingest", files=[("files", ("b.txt", b"owls " * 400))], headers=auth["a"])
    assert small.status_code == 202
    assert large.status_code == 429 and large.json()["code"] == "quota_exceeded"
    assert "ingest_bytes_per_day (2000)" in large.json()["message"]
    uploads = tmp_path / "store" / ".uploads"
    assert not any(p.is_file() for p in uploads.rglob("b.txt"))  # the refused upload's folder is gone


@pytest.mark.slow
def test_a_key_quota_caps_one_key_and_mcp_calls_count_too(teams, tmp_path):
    pytest.importorskip("mcp", reason="the service extra brings the mcp SDK")
    import asyncio

    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from qrag_qdrant.config.settings import load_settings
    from qrag_qdrant.service.app import create_app

    from .test_mcp import structured

    _, auth = teams
    key = next(k.id for k in KeyFile.load(tmp_path / "keys.toml").entries() if k.role == "read-write")
    quotas = {f"key:{key}": {"queries_per_day": 2}}
    service = {"keys": tmp_path / "keys.toml", "usage_db": tmp_path / "usage.db", "quotas": quotas}
    settings = load_settings(store=tmp_path / "store", service=service)
    with live_server(create_app(settings)) as base:

        async def session(headers: dict[str, str]) -> list:
            async with (
                httpx2.AsyncClient(headers=headers, timeout=120) as http,
                Client(streamable_http_client(f"{base}/v1/mcp/", http_client=http)) as client,
            ):
                return [await client.call_tool("search_evidence", {"question": BEES}) for _ in range(3)]

        calls = asyncio.run(session(auth["a"]))
        admin = asyncio.run(session(auth["a-admin"]))  # the same namespace, another key: not capped
    assert [c.is_error for c in calls] == [False, False, True]
    assert f"key {key} has used its queries_per_day (2)" in calls[2].content[0].text
    assert not any(c.is_error for c in admin) and structured(admin[0])["clusters"]


def test_metrics_give_usage_per_namespace_only_when_the_operator_asks(teams, tmp_path):
    start, auth = teams
    for per_namespace in (False, True):
        service = {"usage_db": tmp_path / f"usage-{per_namespace}.db", "metrics_per_namespace": per_namespace}
        with start(service=service) as client:
            client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["b"])
            exposition = client.get("/metrics").text
        assert (metric_value(exposition, "qrag_usage_queries_today", namespace="team-b") == 1) is per_namespace
        assert ("team-b" in exposition) is per_namespace
