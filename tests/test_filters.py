"""Documents found by their source and date: a filter by publisher, author, publication date or
path prefix, in every interface, applied inside the search, so quorum counts only documents that
pass; a filter no document passes says so instead of answering from nothing."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import RequestError
from qrag_qdrant.service.auth.keys import KeyFile
from qrag_qdrant.store.filters import NoDocumentPasses

from .cli_helpers import assert_clean_error, run

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

ARTICLES = {
    "tech/artemis-delay.txt": (
        "NASA delayed the Artemis II crewed lunar flyby to September 2025, citing heat shield erosion found "
        "after the uncrewed Artemis I capsule returned. The four astronauts keep training in Houston."
    ),
    "tech/artemis-budget.txt": (
        "The Artemis programme will cost NASA about 93 billion dollars through 2025, an inspector general "
        "audit found, and each Space Launch System flight costs more than four billion dollars."
    ),
    "world/artemis-crew.txt": (
        "The Artemis II crew of four, including the first woman and the first Canadian to travel toward the "
        "Moon, will fly around the Moon and back on a ten day mission in the Orion capsule."
    ),
    "world/artemis-suits.txt": (
        "Axiom Space unveiled the spacesuit Artemis III astronauts will wear on the Moon's south pole, with "
        "more room to bend the knees and a longer life than the Apollo suits."
    ),
}
METADATA = [
    {"doc": "tech/artemis-delay.txt", "source": "TechCrunch", "author": "Ada Lee", "published_at": "2023-12-05"},
    {"doc": "tech/artemis-budget.txt", "source": "TechCrunch", "author": "Bo Chen", "published_at": "2023-08-11"},
    {"doc": "world/artemis-crew.txt", "source": "The Verge", "author": "Ada Lee", "published_at": "2023-04-03"},
    {"doc": "world/artemis-suits.txt", "source": "The Verge", "author": "Cy Diaz", "published_at": "2023-10-18"},
]
QUESTION = "What is happening with NASA's Artemis Moon missions?"


def found(evidence) -> set[str]:
    shown = evidence if isinstance(evidence, dict) else evidence.model_dump()
    return {p["source"] for c in shown["clusters"] for p in c["passages"]}


@pytest.fixture
def news(tmp_path, embedder):
    folder = tmp_path / "news"
    for name, text in ARTICLES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    sidecar = tmp_path / "news.jsonl"
    sidecar.write_text("\n".join(json.dumps(line) for line in METADATA) + "\n")
    store = tmp_path / "store"
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        rag.ingest(folder, metadata=sidecar)
    return store


@pytest.mark.parametrize(
    "where,allowed",
    [
        ({"publisher": "TechCrunch"}, {"tech/artemis-delay.txt", "tech/artemis-budget.txt"}),
        ({"publisher": ["The Verge"], "author": "Ada Lee"}, {"world/artemis-crew.txt"}),
        ({"publisher": "techcrunch"}, {"tech/artemis-delay.txt", "tech/artemis-budget.txt"}),  # as users type it
        ({"publisher": "THE VERGE", "author": "ada lee"}, {"world/artemis-crew.txt"}),
        ({"after": "2023-10-01"}, {"tech/artemis-delay.txt", "world/artemis-suits.txt"}),
        ({"after": "2023-05-01", "before": "2023-10-18T00:00:00Z"}, {"tech/artemis-budget.txt"}),
        ({"path": "world/"}, {"world/artemis-crew.txt", "world/artemis-suits.txt"}),
    ],
)
def test_a_filter_keeps_the_evidence_to_the_documents_that_pass(news, embedder, where, allowed):
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        narrowed = found(rag.retrieve(QUESTION, where=where))
    assert narrowed and narrowed <= allowed


def test_a_filter_finds_what_the_question_alone_would_not(news, embedder):
    """The control: the filter changes the evidence, it does not just pass the unfiltered one."""
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        everything = found(rag.retrieve(QUESTION))
        techcrunch = found(rag.retrieve(QUESTION, where={"publisher": "TechCrunch"}))
    assert everything and techcrunch and not everything & techcrunch


def test_a_filter_no_document_passes_is_said_and_a_bad_one_is_named(news, embedder):
    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        with pytest.raises(NoDocumentPasses, match=r"no document passes the filter \(publisher Reuters\)"):
            rag.retrieve(QUESTION, where={"publisher": "Reuters"})
        with pytest.raises(NoDocumentPasses, match="path under 'sport/'"):
            rag.retrieve(QUESTION, where={"path": "sport/"})
        with pytest.raises(NoDocumentPasses):  # hr's documents do not pass for a caller without hr
            rag.documents().set_readers("world/artemis-crew.txt", ["hr"])
            rag.retrieve(QUESTION, readers=[], where={"path": "world/artemis-crew"})
        with pytest.raises(RequestError, match="filter: after: Value error, 'soon' is not an ISO 8601"):
            rag.retrieve(QUESTION, where={"after": "soon"})
        with pytest.raises(RequestError, match="filter: topic"):
            rag.retrieve(QUESTION, where={"topic": "space"})

    options = ("--store", str(news), "--no-generate", "--json")
    shown = run("query", QUESTION, "--where", "publisher=TechCrunch", "--where", "author=Bo Chen", *options)
    assert shown.exit_code == 0 and found(json.loads(shown.stdout)) == {"tech/artemis-budget.txt"}
    none = run("query", QUESTION, "--after", "2030-01-01", *options)
    assert_clean_error(none, 1, "no document passes the filter (published from 2030-01-01T00:00:00Z)")
    bad = run("query", QUESTION, "--where", "colour=red", *options)
    assert_clean_error(bad, 1, "--where 'colour=red': write FIELD=VALUE, FIELD one of publisher, author, path")


def test_every_interface_takes_the_filter(news, tmp_path, embedder):
    pytest.importorskip("fastapi", reason="the service extra brings FastAPI")
    pytest.importorskip("mcp", reason="the service extra brings the mcp SDK")
    import httpx2
    from fastapi.testclient import TestClient
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from qrag_qdrant.service.app import create_app

    from .live_server import live_server

    key = KeyFile.load(tmp_path / "keys.toml").add("default", "read")
    headers = {"Authorization": f"Bearer {key}"}
    settings = load_settings(store=news, service={"keys": tmp_path / "keys.toml"})
    techcrunch = {"publisher": "TechCrunch"}
    tech = {"tech/artemis-delay.txt", "tech/artemis-budget.txt"}
    with TestClient(create_app(settings, embedder=embedder)) as client:
        plain = client.post("/v1/query", json={"question": QUESTION, "generate": False}, headers=headers).json()
        kept = client.post(
            "/v1/query", json={"question": QUESTION, "generate": False, "filter": techcrunch}, headers=headers
        ).json()
        nothing = client.post(
            "/v1/query", json={"question": QUESTION, "generate": False, "filter": {"author": "Nobody"}}, headers=headers
        )
        bad = client.post(
            "/v1/query", json={"question": QUESTION, "generate": False, "filter": {"after": 5}}, headers=headers
        )
        chat = client.post(
            "/v1/chat/completions",
            json={
                "model": "quorum-evidence",
                "messages": [{"role": "user", "content": QUESTION}],
                "filter": techcrunch,
            },
            headers=headers,
        ).json()
    assert found(plain) and found(kept) <= tech and not found(plain) & found(kept)
    assert "cache_hit" not in kept["timings_ms"]  # another filter: not the unfiltered entry
    assert nothing.status_code == 404 and nothing.json()["code"] == "no_document_passes_filter"
    assert "author Nobody" in nothing.json()["message"]
    assert bad.status_code == 422
    assert found(chat["qrag"]) and found(chat["qrag"]) <= tech

    with contextlib.ExitStack() as stack:
        base = stack.enter_context(live_server(create_app(settings, embedder=embedder)))

        async def session() -> tuple[dict, object]:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(f"{base}/v1/mcp/", http_client=http)) as client,
            ):
                evidence = await client.call_tool("search_evidence", {"question": QUESTION, "filter": techcrunch})
                refused = await client.call_tool("search_evidence", {"question": QUESTION, "filter": {"path": "x/"}})
            return evidence.structured_content, refused

        evidence, refused = asyncio.run(session())
    assert found(evidence) and found(evidence) <= tech
    assert refused.is_error and "no document passes the filter" in refused.content[0].text


def test_the_evidence_and_the_model_see_each_passages_publisher_and_date(news, embedder):
    from qrag_qdrant.generation.prompt import fence

    with QuorumRAG(load_settings(store=news), embedder=embedder) as rag:
        evidence = rag.retrieve(QUESTION, where={"path": "tech/artemis-delay"})
    passage = evidence.passages[0]
    assert (passage.publisher, passage.published) == ("TechCrunch", "2023-12-05T00:00:00Z")
    assert passage.byline == "TechCrunch, 2023-12-05"
    assert 'source="tech/artemis-delay.txt" published="TechCrunch, 2023-12-05">' in fence(passage)
    no_metadata = passage.model_copy(update={"publisher": None, "published": None})
    assert "published=" not in fence(no_metadata)  # a document without metadata: the source alone
