"""Every extension point is one plugins.Registry: built-ins found through entry points, a plug-in
registered in-process used by name, an unknown name one line naming the known ones."""

from __future__ import annotations

import json

import pytest

from qrag_qdrant import QuorumRAG, plugins
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import BM25_SOURCES, EMBEDDERS, SparseEmbedder
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.generation import BACKENDS
from qrag_qdrant.ingest.loaders import LOADERS, LoaderError, require
from qrag_qdrant.ingest.sources import SOURCES
from qrag_qdrant.retrieval.expansion import EXPANSIONS
from qrag_qdrant.store import STORES, open_store
from qrag_qdrant.store.edge import EdgeStore

from .cli_helpers import assert_clean_error, run

BUILT_INS = [
    (STORES, {"edge", "server"}),
    (BM25_SOURCES, {"client", "server"}),
    (BACKENDS, {"embedded", "ollama"}),
    (LOADERS, {"text", "pdf", "html", "docx"}),
    (EXPANSIONS, {"multi_query", "hyde"}),
    (EMBEDDERS, {"fastembed", "openai", "ollama"}),
    (SOURCES, {"folder", "git", "web"}),
]


@pytest.mark.parametrize(("registry", "names"), BUILT_INS, ids=[r.group for r, _ in BUILT_INS])
def test_the_built_ins_are_entry_points_like_a_plug_in(registry, names, monkeypatch):
    assert names <= set(registry.names())
    monkeypatch.setattr(registry, "local", {})  # nothing registered in-process: found through the entry points
    assert names <= set(registry.registered())


def test_a_registered_store_is_opened_by_name_and_an_unknown_one_is_one_line(tmp_path, corpus, embedder, monkeypatch):
    opened = []

    def counted_edge(settings):
        opened.append(settings.namespace)
        return EdgeStore.from_settings(settings)

    monkeypatch.setattr(STORES, "local", {"counted": counted_edge})
    settings = load_settings(store=tmp_path / "store", namespace="team-a", qdrant={"store": "counted"})
    with QuorumRAG(settings, embedder=embedder) as rag:
        rag.ingest(corpus)
        assert rag.retrieve("How do honeybees tell each other where flowers are?").clusters
    assert opened == ["team-a"]
    with pytest.raises(ConfigError, match="qdrant.store 'nope' is not registered; known: counted, edge, server"):
        open_store(load_settings(qdrant={"store": "nope"}))


def test_auto_is_the_server_store_with_a_url_and_the_server_store_needs_one(tmp_path):
    with open_store(load_settings(store=tmp_path / "s")) as store:
        assert isinstance(store, EdgeStore)
    with pytest.raises(ConfigError, match="needs the server's address: set qdrant.url"):
        open_store(load_settings(qdrant={"store": "server"}))


def test_a_plug_in_bm25_source_builds_and_queries_the_collection(tmp_path, corpus, embedder, monkeypatch):
    made = []

    def counted_bm25(settings):
        made.append(settings.avg_len)
        return SparseEmbedder(settings)

    monkeypatch.setattr(BM25_SOURCES, "local", {"counted": counted_bm25})
    settings = load_settings(store=tmp_path / "store", qdrant={"bm25_source": "counted"})
    with QuorumRAG(settings, store=EdgeStore(settings.store), embedder=embedder) as rag:
        rag.ingest(corpus)
        assert {spec.name: rag.store.manifest(spec.name).bm25_source for spec in settings.collections} == {
            spec.name: "counted" for spec in settings.collections
        }
        assert rag.retrieve("How do honeybees tell each other where flowers are?").clusters
    assert set(made) == {float(spec.size) for spec in settings.collections}


def test_an_unknown_bm25_source_is_one_line_and_nothing_is_written(tmp_path, corpus):
    result = run("ingest", str(corpus), "--store", str(tmp_path / "s"), env={"QRAG_QDRANT_BM25_SOURCE": "cloud"})
    assert_clean_error(result, 1, "qdrant.bm25_source 'cloud' is not registered; known: client, server")


def test_require_names_the_extra_that_installs_a_missing_library():
    with pytest.raises(ConfigError, match=r"^the report needs the eval extra: pip install 'qrag-qdrant\[eval\]'$"):
        plugins.require("no_such_module_here", "eval", "the report")
    with pytest.raises(LoaderError, match=r"^needs the pdf extra: pip install 'qrag-qdrant\[pdf\]'$"):
        require("no_such_module_here", "pdf")
    assert plugins.require("json", "eval", "the report").dumps([1]) == "[1]"


def test_plugins_lists_each_extension_point_and_where_each_name_comes_from(monkeypatch):
    monkeypatch.setattr(SOURCES, "local", {"bucket": object})
    listed = run("plugins", "--json")
    assert listed.exit_code == 0, listed.stderr
    found = json.loads(listed.stdout)
    assert found["qrag_qdrant.sources"]["bucket"] == "registered in this process"
    assert found["qrag_qdrant.embedders"]["fastembed"].startswith("qrag-qdrant ")
    text = run("plugins").stdout
    assert (
        "embedders (qrag_qdrant.embedders): fastembed (qrag-qdrant" in text
        and "bucket (registered in this process)" in text
    )
