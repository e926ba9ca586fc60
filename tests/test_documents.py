"""A namespace's documents: listed, shown and removed through the Python API, on every engine;
a removal cut short and run again leaves what a clean ingest without the document would."""

from __future__ import annotations

import json
import shutil

import pytest

from qrag_qdrant.errors import DocumentNotFound
from qrag_qdrant.store.base import TERM_STATS
from qrag_qdrant.text.term_stats import TermStats

from .cli_helpers import assert_clean_error, run
from .sample_corpus import DOCUMENTS

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)


def state(rag) -> list:
    """What a query can read of the namespace, collection by collection: its documents' chunks
    (source, version hash, chunk, text) and its term counts."""
    store = rag.store
    out = []
    for spec in rag.settings.collections:
        fields = ["source", "doc_hash", "chunk_index", "text"]
        chunks = sorted(tuple(p[f] for f in fields) for p in store.scroll_payloads(spec.name, fields))
        stats = TermStats.from_bytes(store.attachment(spec.name, TERM_STATS))
        out.append((chunks, stats.chunks, dict(zip(stats.ids.tolist(), stats.counts.tolist()))))
    return out


def test_documents_are_listed_shown_and_removed(open_rag, corpus, tmp_path):
    rag = open_rag("docs")
    rag.ingest(corpus, ingested_by="key-1")
    documents = rag.documents()
    page = documents.page()
    assert page.total == 5 and [d.source for d in page.documents] == sorted(DOCUMENTS)
    bees = next(d for d in page.documents if d.source == "honeybees.txt")
    assert bees.size == len(DOCUMENTS["honeybees.txt"].rstrip())
    assert set(bees.chunks) == {s.name for s in rag.settings.collections} and all(bees.chunks.values())
    assert bees.ingested_by == "key-1" and bees.ingested_at is not None and len(bees.content_hash) == 64
    second = documents.page(offset=2, limit=2)
    assert second.total == 5 and [d.source for d in second.documents] == sorted(DOCUMENTS)[2:4]

    shown = documents.get("volcanoes.md")
    for name, chunks in shown.locations.items():
        assert [c.chunk for c in chunks] == list(range(len(chunks))) == list(range(shown.chunks[name]))
        assert chunks[0].start == 0 and chunks[-1].end == shown.size
    with pytest.raises(DocumentNotFound, match="no document 'nope.txt'"):
        documents.get("nope.txt")

    report = documents.remove("volcanoes.md")
    assert set(report.removed) == set(shown.chunks) and report.removed == shown.chunks
    assert "volcanoes.md" not in [d.source for d in documents.page().documents]
    evidence = rag.retrieve("Which is the largest active volcano on Earth?")
    assert all(p.source != "volcanoes.md" for p in evidence.passages)
    with pytest.raises(DocumentNotFound):
        documents.remove("volcanoes.md")

    clean_corpus = tmp_path / "clean"
    shutil.copytree(corpus, clean_corpus)
    (clean_corpus / "volcanoes.md").unlink()
    clean = open_rag("clean")
    clean.ingest(clean_corpus, ingested_by="key-1")
    assert state(rag) == state(clean)


def test_a_removal_cut_short_and_run_again_equals_a_clean_ingest_without_the_document(
    open_rag, corpus, tmp_path, monkeypatch
):
    rag = open_rag("cut")
    rag.ingest(corpus)
    store, collections = rag.store, [s.name for s in rag.settings.collections]
    delete = store.delete

    def crash_on_the_second(name, where):
        if name == collections[1]:
            raise OSError("killed")
        delete(name, where)

    monkeypatch.setattr(store, "delete", crash_on_the_second)
    with pytest.raises(OSError, match="killed"):
        rag.documents().remove("games/chess.txt")
    monkeypatch.setattr(store, "delete", delete)
    # cut short: gone from the first collection, still in the second, which has no term counts now
    listed = {d.source: d for d in rag.documents().page().documents}
    assert set(listed["games/chess.txt"].chunks) == {collections[1]}
    assert store.attachment(collections[1], TERM_STATS) is None
    rag.documents().remove("games/chess.txt")

    clean_corpus = tmp_path / "clean"
    shutil.copytree(corpus, clean_corpus)
    (clean_corpus / "games" / "chess.txt").unlink()
    clean = open_rag("cut-clean")
    clean.ingest(clean_corpus)
    assert state(rag) == state(clean)


def test_a_new_version_under_the_same_name_replaces_the_old(open_rag, corpus):
    rag = open_rag("replace")
    rag.ingest(corpus)
    before = rag.documents().get("lighthouses.txt")
    (corpus / "lighthouses.txt").write_text("Lighthouses now use LED lamps that last for decades.\n")
    rag.ingest(corpus, ingested_by="key-2")
    after = rag.documents().get("lighthouses.txt")
    assert after.content_hash != before.content_hash and after.ingested_by == "key-2"
    assert after.size == len("Lighthouses now use LED lamps that last for decades.") and set(after.chunks.values()) == {
        1
    }


def test_the_documents_commands(corpus, tmp_path):
    store = str(tmp_path / "store")
    sidecar = tmp_path / "metadata.jsonl"
    sidecar.write_text(
        '{"doc": "games/chess.txt", "title": "Chess openings", "source": "Board Games Weekly", '
        '"published_at": "2023-10-14T08:00:00+00:00"}\n{"doc": "games/checkers.txt", "title": "Not there"}\n'
    )
    strict = run("ingest", str(corpus), "--store", store, "--metadata", str(sidecar), "--strict")
    assert_clean_error(strict, 1, "the metadata names 1 document that", "games/checkers.txt")
    assert json.loads(run("documents", "list", "--store", store, "--json").stdout)["total"] == 0  # nothing written
    ingested = run("ingest", str(corpus), "--store", store, "--metadata", str(sidecar))
    assert (
        ingested.exit_code == 0
        and "The metadata names 1 document the folder lacks: games/checkers.txt" in ingested.stdout
    )
    listed = run("documents", "list", "--store", store, "--json")
    assert listed.exit_code == 0, listed.stderr
    page = json.loads(listed.stdout)
    assert page["total"] == 5 and {d["ingested_by"] for d in page["documents"]} == {"cli"}
    table = run("documents", "list", "--store", store, "--limit", "2")
    assert "1-2 of 5 documents" in table.stdout and "more: --offset 2" in table.stdout
    shown = run("documents", "show", "games/chess.txt", "--store", store)
    assert shown.exit_code == 0 and shown.stdout.startswith("games/chess.txt: ") and "chunks (0: 0-" in shown.stdout
    assert "title: Chess openings; publisher: Board Games Weekly; published: 2023-10-14" in shown.stdout
    wide = run("documents", "list", "--store", store, env={"COLUMNS": "400"})
    assert "Chess openings" in wide.stdout and "Board Games Weekly" in wide.stdout and "2023-10-14" in wide.stdout
    assert_clean_error(run("documents", "remove", "nope.txt", "--store", store), 1, "no document 'nope.txt'")
    removed = run("documents", "remove", "games/chess.txt", "--store", store, "--json")
    assert removed.exit_code == 0 and set(json.loads(removed.stdout)["removed"]) == {
        "default-c50-o25",
        "default-c100-o50",
    }
    assert json.loads(run("documents", "list", "--store", store, "--json").stdout)["total"] == 4
    assert run("documents", "list", "--store", store, "--limit", "0").exit_code == 2
