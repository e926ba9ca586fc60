"""Every extension point is one plugins.Registry: built-ins found through entry points, a plug-in
registered in-process used by name, an unknown name one line naming the known ones."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from qrag_qdrant import QuorumRAG, plugins
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import BM25_SOURCES, EMBEDDERS, SparseEmbedder, open_embedder
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.generation import BACKENDS, open_backend
from qrag_qdrant.ingest.loaders import LOADERS, LoaderError, require
from qrag_qdrant.ingest.sources import SOURCES
from qrag_qdrant.retrieval.expansion import EXPANSIONS
from qrag_qdrant.store import STORES, open_store
from qrag_qdrant.store.edge import EdgeStore

from .cli_helpers import assert_clean_error, run
from .hashed_words import HashedWords

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


def test_a_plug_ins_own_settings_section_reaches_it_and_a_bad_one_is_one_line(tmp_path, corpus, monkeypatch):
    monkeypatch.setattr(EMBEDDERS, "local", {"hashed": HashedWords})
    embedding = {"embedder": "hashed", "model": "words", "dim": 128}
    settings = load_settings(
        store=tmp_path / "store", embedding=embedding, embedders={"hashed": {"dim": 128, "salt": "s1"}}
    )
    with QuorumRAG(settings) as rag:
        rag.ingest(corpus)
        assert (rag.embedder().dim, rag.embedder().salt) == (128, "s1")
        best = rag.retrieve("How do honeybees tell each other where flowers are?").clusters[0]
        assert "bee" in best.passages[0].text.lower()
    for sections, message in [
        ({"hashed": {"dim": "many"}}, "[embedders.hashed] dim: Input should be a valid integer"),
        ({"hashed": {"dim": 4}}, "[embedders.hashed] dim: Input should be greater than or equal to 8"),
        ({"hashed": {}, "hashd": {"dim": 64}}, "[embedders.hashd]: no embedder 'hashd'; known: fastembed"),
        ({"fastembed": {"threads": 2}}, "[embedders.fastembed]: the embedder 'fastembed' takes no settings"),
    ]:
        with pytest.raises(ConfigError) as refused:
            open_embedder(load_settings(embedding=embedding).embedding, sections)
        assert str(refused.value).startswith(message) and "\n" not in str(refused.value)


def test_a_backends_own_settings_section_reaches_it(tmp_path, monkeypatch):
    made = []

    class Quiet:
        class Options(BaseModel):
            greeting: str

        def __init__(self, settings, options):
            made.append(options.greeting)

    monkeypatch.setattr(BACKENDS, "local", {"quiet": Quiet})
    open_backend(load_settings(generation={"backend": "quiet"}, backends={"quiet": {"greeting": "hello"}}))
    assert made == ["hello"]
    with pytest.raises(ConfigError, match=r"\[backends.quiet\] greeting: Field required"):
        open_backend(load_settings(generation={"backend": "quiet"}))


def test_a_loaders_own_settings_section_reaches_it(tmp_path, embedder, monkeypatch):
    from qrag_qdrant.ingest.loaders import TextBlock

    class TableLoader:
        """A plug-in loader of tables whose cells a configured character separates."""

        class Options(BaseModel):
            separator: str = Field(",", min_length=1, max_length=1)

        suffixes = (".table",)

        def __init__(self, options: TableLoader.Options):
            self.separator = options.separator

        def sniff(self, head: bytes) -> bool:
            return False

        def blocks(self, path):
            for line in path.read_text().splitlines():
                yield TextBlock(" and ".join(cell.strip() for cell in line.split(self.separator)))

    monkeypatch.setitem(LOADERS.local, "table", TableLoader)  # a class: made with its table per ingest
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "staff.table").write_text("Ada runs payroll; Grace runs the data centre\n")
    settings = load_settings(store=tmp_path / "store", loaders={"table": {"separator": ";"}})
    with QuorumRAG(settings, embedder=embedder) as rag:
        rag.ingest(tmp_path / "docs")
        passage = rag.retrieve("Who runs the data centre?").clusters[0].passages[0]
    assert passage.text.startswith("Ada runs payroll and Grace runs the data centre")
    for sections, message in [
        ({"table": {"separator": ";;"}}, "[loaders.table] separator: String should have at most 1 character"),
        ({"text": {"encoding": "latin-1"}}, "[loaders.text]: the loader 'text' takes no settings"),
    ]:
        with QuorumRAG(load_settings(store=tmp_path / "other", loaders=sections), embedder=embedder) as rag:
            with pytest.raises(ConfigError) as refused:
                rag.ingest(tmp_path / "docs")
        assert str(refused.value) == message
