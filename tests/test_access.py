"""Keys and tokens for a shared server, listing every namespace, and retried writes."""

from __future__ import annotations

import json
import time

import httpx
import jwt
import pytest
from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import UnexpectedResponse

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import QdrantSettings, load_settings
from qrag_qdrant.embedding import SparseVec
from qrag_qdrant.errors import StoreError
from qrag_qdrant.store import ChunkPayload, ChunkPoint
from qrag_qdrant.store.server import ServerStore
from qrag_qdrant.store.tokens import mint_token

from .backends import server_api_key, unique_namespace
from .cli_helpers import assert_clean_error, run

ADMIN_KEY = "test-admin-key-0123456789abcdef0123456789"
ALIASES = ["team-a-c50-o25", "team-a-c100-o50"]


@pytest.mark.parametrize("read_only, access", [(False, "rw"), (True, "r")])
def test_token_grants_exactly_the_namespaces_aliases_until_it_expires(read_only, access):
    flags = ["--read-only"] if read_only else []
    before = int(time.time())
    result = run("token", "--namespace", "team-a", "--ttl", "12h", *flags, env={"QRAG_QDRANT_API_KEY": ADMIN_KEY})
    assert result.exit_code == 0, result.stderr
    claims = jwt.decode(result.stdout.strip(), ADMIN_KEY, algorithms=["HS256"])  # signed with the server's key
    assert claims["access"] == [{"collection": name, "access": access} for name in ALIASES]
    assert before + 12 * 3600 <= claims["exp"] <= int(time.time()) + 12 * 3600
    with pytest.raises(jwt.InvalidSignatureError):
        jwt.decode(result.stdout.strip(), "another-key-0123456789abcdefghij", algorithms=["HS256"])


def test_token_json_and_an_expired_token_is_rejected_by_its_claims():
    result = run("token", "--namespace", "team-b", "--json", env={"QRAG_QDRANT_API_KEY": ADMIN_KEY})
    payload = json.loads(result.stdout)
    assert payload["namespace"] == "team-b" and {a["collection"] for a in payload["access"]} == {
        name.replace("team-a", "team-b") for name in ALIASES
    }
    assert abs(payload["exp"] - (time.time() + 30 * 86400)) < 60  # the default lifetime: 30 days
    expired = mint_token(ADMIN_KEY, ALIASES, read_only=True, ttl_seconds=60, now=time.time() - 3600).token
    with pytest.raises(jwt.ExpiredSignatureError):
        jwt.decode(expired, ADMIN_KEY, algorithms=["HS256"])


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--ttl", "30"], {"QRAG_QDRANT_API_KEY": ADMIN_KEY}, "--ttl '30': use a positive number and a unit"),
        (["--ttl", "0d"], {"QRAG_QDRANT_API_KEY": ADMIN_KEY}, "use a positive number"),
        ([], {}, "set QRAG_QDRANT_API_KEY to the server's API key"),
        ([], {"QRAG_QDRANT_API_KEY": mint_token(ADMIN_KEY, ALIASES, False, 60).token}, "not with a token"),
        (["--namespace", "Team A"], {"QRAG_QDRANT_API_KEY": ADMIN_KEY}, "namespace 'Team A'"),
    ],
)
def test_token_refuses_bad_input_in_one_line(args, env, message):
    assert_clean_error(run("token", *args, env=env), 1, message)


@pytest.mark.slow
def test_collections_all_lists_every_namespace_of_an_embedded_store(tmp_path, corpus):
    store = str(tmp_path / "store")
    for namespace in ("team-a", "team-b"):
        assert run("ingest", str(corpus), "--store", store, "--namespace", namespace).exit_code == 0
    own = json.loads(run("collections", "--store", store, "--namespace", "team-a", "--json").stdout)
    assert own["count"] == 2 and {c["namespace"] for c in own["collections"]} == {"team-a"}
    every = json.loads(run("collections", "--all", "--store", store, "--namespace", "team-a", "--json").stdout)
    assert every["count"] == 4 and every["namespaces"] == 2
    assert all(c["points"] > 0 and c["collection"] == c["name"] + "-v1" for c in every["collections"])
    table = run("collections", "--all", "--store", store)
    assert "4 collections in every namespace" in table.stdout


def test_collections_all_needs_more_than_a_namespace_token():
    token = mint_token(ADMIN_KEY, ALIASES, read_only=True, ttl_seconds=600).token
    result = run(
        "collections",
        "--all",
        "--namespace",
        "team-a",
        env={"QRAG_QDRANT_URL": "http://127.0.0.1:9", "QRAG_QDRANT_API_KEY": token},
    )
    assert_clean_error(result, 1, "listing every namespace needs the server's API key")


def point(n: int) -> ChunkPoint:
    return ChunkPoint(
        f"00000000-0000-0000-0000-{n:012d}",
        [1.0, 0.0],
        SparseVec([1], [1.0]),
        ChunkPayload(
            source="a.txt", doc_hash="h", chunk_index=n, word_start=0, word_end=1, start=0, end=1, text="x", version=0
        ),
    )


@pytest.fixture
def flaky_store(tmp_path, monkeypatch):
    """A local-mode store whose upserts fail with the given HTTP statuses before going through."""
    client = QdrantClient(path=str(tmp_path / "local"))
    client.create_collection(
        "c",
        vectors_config={"dense": models.VectorParams(size=2, distance="Cosine")},
        sparse_vectors_config={"bm25": models.SparseVectorParams()},
    )
    store = ServerStore(client, "local", QdrantSettings(retries=2, backoff=0.01))
    real_upsert, failures, calls = client.upsert, [], []

    def upsert(*args, **kwargs):
        calls.append(1)
        if failures:
            status = failures.pop(0)
            raise UnexpectedResponse(
                status, "Service Unavailable", b'{"status":{"error":"not enough replicas"}}', httpx.Headers()
            )
        return real_upsert(*args, **kwargs)

    monkeypatch.setattr(client, "upsert", upsert)
    yield store, failures, calls
    client.close()


def test_a_write_too_few_replicas_acknowledged_is_retried_then_lands(flaky_store):
    store, failures, calls = flaky_store
    failures.extend([503, 500])
    store.upsert("c", [point(1)])
    assert len(calls) == 3 and store.count("c") == 1


def test_retries_back_off_exponentially_with_jitter_then_name_the_cause(flaky_store, monkeypatch):
    """Each wait is the backoff doubled per try plus up to as much again at random, so clients that
    failed together do not all come back together."""
    from qrag_qdrant.store import retries

    store, failures, _ = flaky_store
    waits: list[float] = []
    monkeypatch.setattr(retries, "pause", waits.append)
    store.backoff = 1.0
    runs = []
    for _ in range(5):
        failures.extend([503, 503, 503])
        with pytest.raises(StoreError, match=r"failed the upsert after 3 attempts: HTTP 503: .*not enough replicas"):
            store.upsert("c", [point(1)])
        runs.append(waits[-2:])
    assert all(1.0 <= first <= 2.0 and 2.0 <= second <= 3.0 for first, second in runs), runs
    assert len({first for first, _ in runs}) > 1  # not the same wait for every client


def test_a_write_that_keeps_failing_is_reported_not_dropped(flaky_store):
    store, failures, calls = flaky_store
    failures.extend([503] * 5)
    with pytest.raises(StoreError, match=r"failed the upsert after 3 attempts: HTTP 503: .*not enough replicas"):
        store.upsert("c", [point(1)])
    assert len(calls) == 3 and store.count("c") == 0


def test_a_refused_write_is_not_retried_and_names_the_key(flaky_store):
    store, failures, calls = flaky_store
    failures.append(403)
    with pytest.raises(StoreError, match=r"refused this upsert \(HTTP 403\): the key or token does not allow it"):
        store.upsert("c", [point(1)])
    assert len(calls) == 1


@pytest.mark.server
def test_collections_get_the_configured_shards_and_reads_ask_a_majority(server_url, corpus, embedder):
    settings = load_settings(
        namespace=unique_namespace(),
        qdrant={"url": server_url, "api_key": server_api_key(), "read_consistency": "majority", "shard_number": 2},
    )
    with QuorumRAG(settings, embedder=embedder) as rag:
        report = rag.ingest(corpus)
        for collection in report.collections.values():
            params = rag.store.client.get_collection(collection).config.params
            assert (params.shard_number, params.replication_factor) == (2, 1)
        assert not rag.retrieve("How do honeybees tell the direction of flowers?").abstained


@pytest.mark.server
def test_a_namespace_token_reads_its_namespace_only_and_writes_nothing_when_read_only(server_url, corpus, embedder):
    """Needs a server with JWT RBAC on and its admin key in QRAG_TEST_QDRANT_API_KEY."""
    admin_key = server_api_key()
    if not admin_key:
        pytest.skip("QRAG_TEST_QDRANT_API_KEY unset: the test server has no JWT RBAC to check")
    team_a, team_b = unique_namespace(), unique_namespace()
    for namespace in (team_a, team_b):
        with QuorumRAG(
            load_settings(namespace=namespace, qdrant={"url": server_url, "api_key": admin_key}), embedder=embedder
        ) as rag:
            rag.ingest(corpus)
    aliases = [spec.name for spec in load_settings(namespace=team_a).collections]
    token = mint_token(admin_key, aliases, read_only=True, ttl_seconds=600).token
    with QuorumRAG(
        load_settings(namespace=team_a, qdrant={"url": server_url, "api_key": token}), embedder=embedder
    ) as rag:
        assert not rag.retrieve("How do honeybees tell the direction of flowers?").abstained
        with pytest.raises(StoreError, match="HTTP 403"):
            rag.store.delete_sources(aliases[0], ["honeybees.txt"])
        with pytest.raises(StoreError, match="HTTP 403"):
            rag.store.count(f"{team_b}-c50-o25")
        with pytest.raises(StoreError, match="listing every namespace"):
            rag.collections(all_namespaces=True)


def test_the_embedded_store_refuses_server_side_bm25_in_one_line(tmp_path, corpus):
    result = run("ingest", str(corpus), "--store", str(tmp_path / "s"), env={"QRAG_QDRANT_BM25_SOURCE": "server"})
    assert_clean_error(result, 1, "qdrant.bm25_source must not be")


@pytest.mark.server
def test_server_side_bm25_is_recorded_and_used_for_the_collections_life(server_url, corpus, embedder):
    qdrant = {"url": server_url, "api_key": server_api_key()}
    namespace = unique_namespace()
    with QuorumRAG(
        load_settings(namespace=namespace, qdrant={**qdrant, "bm25_source": "server"}), embedder=embedder
    ) as rag:
        rag.ingest(corpus)
        assert {rag.store.manifest(s.name).bm25_source for s in rag.settings.collections} == {"server"}
    # a later run configured for client BM25 still uses the recorded server source
    with QuorumRAG(load_settings(namespace=namespace, qdrant=qdrant), embedder=embedder) as rag:
        evidence = rag.retrieve("waggle dance direction of flowers")
        assert evidence.clusters[0].passages[0].source == "honeybees.txt"
        assert "bm25-c50" in evidence.clusters[0].retrievers
