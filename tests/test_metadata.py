"""A document's title, publisher, author, date and URL as data: read from each format's own place
for them (Markdown front matter, HTML's head, PDF and Word properties) in real files of that
format, and from a metadata sidecar given at ingest, which wins; stored on every chunk and listed
with the document. Front matter and the sidecar may also say who may read a document."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings

from .cli_helpers import assert_clean_error, run

fpdf = pytest.importorskip("fpdf", reason="the test extra brings fpdf2")
docx = pytest.importorskip("docx", reason="the docx extra brings python-docx")
pytest.importorskip("pypdf", reason="the pdf extra brings pypdf")
pytest.importorskip("bs4", reason="the html extra brings beautifulsoup4")

LENS = (
    "The Fresnel lens was invented by Augustin-Jean Fresnel in 1822. Its concentric prisms bend the "
    "light of a single lamp into a narrow horizontal beam that ships see from far out at sea."
)
MARKDOWN = f"""---
title: Coastal lights
source: The Harbour Gazette
author: Ada Keeper
published_at: 2023-10-14
url: https://gazette.example/lights
readers: [harbour]
---
# Lights

{LENS}
"""
HTML = """<!doctype html><html><head><title>Fallback title</title>
<meta property="og:title" content="Volcano watch">
<meta property="og:site_name" content="TechCrunch">
<meta name="author" content="Ben Ash">
<meta property="article:published_time" content="2023-10-01T09:30:00+02:00">
<link rel="canonical" href="https://techcrunch.example/volcano"></head>
<body><main><p>Mount Vesuvius erupted in the year 79 and buried Pompeii under ash.</p></main></body></html>"""


def pdf_bytes() -> bytes:
    document = fpdf.FPDF()
    document.set_title("Keepers' log")
    document.set_author("Cora Lamp")
    document.set_creation_date(datetime(2022, 5, 3, 12, 0, tzinfo=UTC))
    document.set_font("helvetica", size=11)
    document.add_page()
    document.multi_cell(0, 6, "Lighthouse keepers wound the clockwork that turned the lens every night.")
    return bytes(document.output())


def docx_bytes() -> bytes:
    document = docx.Document()
    document.add_paragraph("Welcome to the team. The service desk creates the email account on day one.")
    document.core_properties.title = "Onboarding"
    document.core_properties.author = "Dana Desk"
    document.core_properties.created = datetime(2021, 1, 4, 8, 0)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "docs"
    root.mkdir()
    (root / "lights.md").write_text(MARKDOWN)
    (root / "volcano.html").write_text(HTML)
    (root / "log.pdf").write_bytes(pdf_bytes())
    (root / "onboarding.docx").write_bytes(docx_bytes())
    (root / "plain.txt").write_text("A plain note with no metadata at all, about the canteen's opening hours.")
    return root


def listed(rag: QuorumRAG) -> dict[str, dict]:
    fields = ("title", "publisher", "author", "published", "url", "readers")
    return {d.source: {f: getattr(d, f) for f in fields} for d in rag.documents().page().documents}


def test_each_format_says_what_it_knows_of_itself(folder, tmp_path, embedder):
    with QuorumRAG(load_settings(store=tmp_path / "store"), embedder=embedder) as rag:
        rag.ingest(folder)
        found = listed(rag)
        text = " ".join(p["text"] for p in rag.store.scroll_payloads("default-c100-o50", ["text"]))
        evidence = rag.retrieve("Who invented the Fresnel lens?", readers=[])
    assert found["lights.md"] == {
        "title": "Coastal lights",
        "publisher": "The Harbour Gazette",
        "author": "Ada Keeper",
        "published": "2023-10-14T00:00:00Z",
        "url": "https://gazette.example/lights",
        "readers": ["harbour"],
    }
    assert "published_at:" not in text and "Ada Keeper" not in text  # front matter is not the text
    assert "lights.md" not in {p.source for c in evidence.clusters for p in c.passages}  # harbour only
    assert found["volcano.html"] == {
        "title": "Volcano watch",
        "publisher": "TechCrunch",
        "author": "Ben Ash",
        "published": "2023-10-01T07:30:00Z",
        "url": "https://techcrunch.example/volcano",
        "readers": [],
    }
    assert found["log.pdf"] | {"published": found["log.pdf"]["published"][:10]} == {
        "title": "Keepers' log",
        "publisher": None,
        "author": "Cora Lamp",
        "published": "2022-05-03",
        "url": None,
        "readers": [],
    }
    assert found["onboarding.docx"] == {
        "title": "Onboarding",
        "publisher": None,
        "author": "Dana Desk",
        "published": "2021-01-04T08:00:00Z",
        "url": None,
        "readers": [],
    }
    assert found["plain.txt"] == dict.fromkeys(("title", "publisher", "author", "published", "url")) | {"readers": []}


def test_a_sidecar_names_documents_and_wins_and_changes_unchanged_ones_in_place(folder, tmp_path, embedder):
    sidecar = tmp_path / "meta.jsonl"
    lines = [
        {"doc": "plain.txt", "title": "Canteen", "source": "Facilities", "published_at": "2023-11-27T08:45:59+00:00",
         "author": None, "category": "office", "url": "https://intra.example/canteen"},
        {"doc": "volcano.html", "source": "The Verge"},
    ]  # fmt: skip
    sidecar.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    with QuorumRAG(load_settings(store=tmp_path / "store"), embedder=embedder) as rag:
        rag.ingest(folder, metadata=sidecar)
        first = listed(rag)
        sidecar.write_text(json.dumps({"doc": "plain.txt", "title": "Canteen hours", "readers": "facilities"}) + "\n")
        report = rag.ingest(folder, metadata=sidecar)
        second = listed(rag)
    assert first["plain.txt"] == {
        "title": "Canteen",
        "publisher": "Facilities",
        "author": None,
        "published": "2023-11-27T08:45:59Z",
        "url": "https://intra.example/canteen",
        "readers": [],
    }
    assert first["volcano.html"]["publisher"] == "The Verge"  # the sidecar's field over the file's
    assert first["volcano.html"]["author"] == "Ben Ash"  # the file's own where the sidecar says nothing
    assert report.embedded_chunks == 0  # nothing changed but the labels: set in place
    assert second["plain.txt"] == first["plain.txt"] | {"title": "Canteen hours", "readers": ["facilities"]}
    assert second["volcano.html"]["publisher"] == "The Verge"  # kept until an ingest says otherwise


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"title": "no doc"}', 'line 1: no "doc" naming the document'),
        ('{"doc": "a.txt", "published_at": "last Tuesday"}', "line 1: published_at: 'last Tuesday' is not an ISO"),
        ('{"doc": "a.txt", "readers": ["a b"]}', "line 1: readers: 'a b' is not a group name"),
        ("not json", "line 1:"),
    ],
)
def test_a_bad_sidecar_line_is_one_line_error_and_nothing_is_ingested(folder, tmp_path, line, message):
    sidecar = tmp_path / "meta.jsonl"
    sidecar.write_text(line + "\n")
    result = run("ingest", str(folder), "--metadata", str(sidecar))
    assert_clean_error(result, 1, message)
    assert not list((tmp_path / "work").rglob("manifest.json"))  # no collection was created
