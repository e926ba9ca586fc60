"""A collection's layout (quantization, vectors and payloads on disk) is applied when it is
created, on Edge and on the server path, and the evidence it gives is the default layout's."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.store import server as server_store
from qrag_qdrant.store.edge import SHARD, WAL, EdgeStore
from qrag_qdrant.store.server import ServerStore

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

IN_RAM = {"quantization": "none", "vectors_on_disk": False, "payloads_on_disk": False}
#: a graph other than the default's
SPARSE_GRAPH = {"hnsw_m": 8, "hnsw_ef_construct": 64}
#: the longest a step may take on a slow shared box; each wait ends as soon as its event is seen
PATIENCE_S = 120
QUESTIONS = [
    "How does a honeybee forager tell her sisters the direction of flowers?",
    "What happens to magma when it reaches the surface?",
]


def open_store(kind, settings):
    if kind == "edge":
        return EdgeStore.from_settings(settings)
    client = QdrantClient(path=str(settings.store / "local"))
    create, client.payloads_on_disk = client.create_collection, {}

    def recorded_create(name, **config):  # local mode does not keep on_disk_payload: what was asked for is seen here
        client.payloads_on_disk[name] = config.get("on_disk_payload")
        return create(name, **config)

    client.create_collection = recorded_create
    return ServerStore(client, location="local", settings=settings.qdrant)


def evidence(kind, tmp_path, corpus, embedder, layout):
    settings = load_settings(store=tmp_path / f"{kind}-{bool(layout)}", qdrant=layout)
    with QuorumRAG(settings, store=open_store(kind, settings), embedder=embedder) as rag:
        rag.ingest(corpus)
        found = [rag.retrieve(question) for question in QUESTIONS]
        configs = applied_layouts(rag.store, settings)
    return [[(c.support, [(p.source, p.start, p.end) for p in c.passages]) for c in e.clusters] for e in found], configs


def applied_layouts(store, settings):
    """(quantization, vectors on disk, payloads on disk, HNSW m and ef_construct) as each engine
    recorded them for the collections."""
    if isinstance(store, EdgeStore):
        layouts = []
        for folder in sorted(settings.store.iterdir()):
            if (folder / SHARD / "edge_config.json").is_file():
                config = json.loads((folder / SHARD / "edge_config.json").read_text())
                dense = config["vectors"]["dense"]
                layouts.append(
                    (
                        quantization_of(dense.get("quantization_config")),
                        bool(dense.get("on_disk")),
                        bool(config.get("on_disk_payload")),
                        config["hnsw_config"]["m"],
                        config["hnsw_config"]["ef_construct"],
                    )
                )
        return layouts
    layouts = []
    for name in store.collection_names():
        dense = store.client.get_collection(name).config.params.vectors["dense"]
        quantization = dense.quantization_config
        layouts.append(
            (
                quantization_of(quantization and quantization.model_dump(mode="json")),
                bool(dense.on_disk),
                bool(store.client.payloads_on_disk[name]),
                dense.hnsw_config.m,
                dense.hnsw_config.ef_construct,
            )
        )
    return layouts


def quantization_of(config):
    """The ``qdrant.quantization`` name of an engine's quantization config."""
    if not config:
        return "none"
    if config.get("scalar"):
        return config["scalar"]["type"]  # "int8"
    return "turbo" + config["turbo"]["bits"].removeprefix("bits")


@pytest.mark.parametrize("kind", ["edge", "client-local"])
def test_the_default_quantized_on_disk_layout_gives_the_in_ram_layouts_evidence(kind, tmp_path, corpus, embedder):
    default, default_layouts = evidence(kind, tmp_path, corpus, embedder, {})
    in_ram, in_ram_layouts = evidence(kind, tmp_path, corpus, embedder, IN_RAM)
    assert len(in_ram_layouts) == len(default_layouts) == 2
    assert set(default_layouts) == {("int8", True, True, 16, 256)}
    assert set(in_ram_layouts) == {("none", False, False, 16, 256)}
    assert all(clusters for clusters in default) and default == in_ram


@pytest.mark.parametrize("kind", ["edge", "client-local"])
@pytest.mark.parametrize("quantization", ["turbo4"])
def test_each_quantization_and_graph_is_the_one_the_engine_builds(kind, quantization, tmp_path, corpus, embedder):
    found, layouts = evidence(kind, tmp_path, corpus, embedder, {"quantization": quantization, **SPARSE_GRAPH})
    assert set(layouts) == {(quantization, True, True, 8, 64)}
    assert all(clusters for clusters in found)


def old_server(store, monkeypatch):
    info = store.client.info()
    monkeypatch.setattr(store.client, "info", lambda: info.model_copy(update={"version": "1.17.2"}))


def old_client(store, monkeypatch):
    monkeypatch.delattr(server_store.models, "TurboQuantization")  # as qdrant-client before 1.18


@pytest.mark.parametrize(
    ("lacking", "quantization", "message"),
    [
        (
            old_server,
            "turbo4",
            "Qdrant 1.17.2 at local has no TurboQuant (needs >= 1.18.0); set qdrant.quantization = 'int8'",
        ),
        (
            old_client,
            "turbo4",
            "qdrant.quantization = 'turbo4' needs qdrant-client >= 1.18 (pip install -U qdrant-client); "
            "or set qdrant.quantization = 'int8'",
        ),
    ],
)
def test_a_server_or_client_without_turboquant_says_what_to_do_and_keeps_no_collection(
    lacking, quantization, message, tmp_path, corpus, embedder, monkeypatch
):
    settings = load_settings(store=tmp_path / "server", qdrant={"quantization": quantization})
    store = open_store("client-local", settings)
    lacking(store, monkeypatch)
    with QuorumRAG(settings, store=store, embedder=embedder) as rag:
        with pytest.raises(ConfigError) as raised:
            rag.ingest(corpus)
        assert str(raised.value) == message
        assert store.collection_names() == []


def ingested_rag(tmp_path, corpus, embedder):
    rag = QuorumRAG(load_settings(store=tmp_path / "warm"), embedder=embedder)
    rag.ingest(corpus)
    return rag


def refuse_version_lookups(monkeypatch, store):
    """From here on, a document's version can only come from the store's cache."""

    def looked_up(*args, **kwargs):
        raise AssertionError("a warmed store looked a document's version up")

    monkeypatch.setattr(store, "scroll_payloads", looked_up)


@pytest.mark.skipif(
    not hasattr(os, "posix_fadvise") or not Path("/proc/self/fd").is_dir(), reason="posix_fadvise and /proc are Linux's"
)
def test_warming_asks_the_kernel_to_read_every_file_of_the_shards_but_their_log(
    tmp_path, corpus, embedder, monkeypatch
):
    """Opening a shard leaves its files out of the page cache; ``warm`` advises them back in."""
    advised: dict[Path, list[tuple[int, int, int]]] = {}
    advise = os.posix_fadvise

    def recorded(fd, offset, length, advice):
        advised.setdefault(Path(os.readlink(f"/proc/self/fd/{fd}")), []).append((offset, length, advice))
        advise(fd, offset, length, advice)

    with ingested_rag(tmp_path, corpus, embedder) as rag:
        monkeypatch.setattr(os, "posix_fadvise", recorded)
        rag.warm()
        folders = {tmp_path / "warm" / folder for folder in rag.store.aliases().values()}
    assert len(folders) == 2
    files = [path for folder in folders for path in (folder / SHARD).rglob("*") if path.is_file()]
    log = [path for path in files if WAL in path.relative_to(tmp_path).parts]
    assert log and not set(log) & advised.keys()
    for path in set(files) - set(log):
        windows = sorted(advised[path])
        assert all(advice == os.POSIX_FADV_WILLNEED for _, _, advice in windows)
        covered = 0
        for offset, length, _ in windows:  # contiguous from 0 to the file's end
            assert offset == covered
            covered += length
        assert covered >= path.stat().st_size


def test_a_warmed_store_looks_up_no_versions_and_still_sees_the_next_ingest(tmp_path, corpus, embedder, monkeypatch):
    with ingested_rag(tmp_path, corpus, embedder) as rag:
        rag.warm()
        with monkeypatch.context() as refusing:
            refuse_version_lookups(refusing, rag.store)
            assert not rag.retrieve(QUESTIONS[0]).abstained
        (corpus / "games" / "go.txt").write_text(
            "Go is a board game in which two players place black and white stones to surround territory. " * 8
        )
        rag.ingest(corpus)  # warmed again after it: the new document is current, and nothing is looked up
        refuse_version_lookups(monkeypatch, rag.store)
        sources = {p.source for p in rag.retrieve("What do Go players place to surround territory?").passages}
        assert "games/go.txt" in sources


def test_the_service_warms_each_namespace_it_opens_and_again_after_its_ingests(tmp_path, corpus, embedder, monkeypatch):
    from qrag_qdrant.service.namespaces import Namespaces

    spaces = Namespaces(load_settings(store=tmp_path / "service"), embedder)
    try:
        spaces.ingest("team", corpus, progress=None)  # opened empty (nothing to warm), warmed after the ingest
        refuse_version_lookups(monkeypatch, spaces.rag("team").store)
        assert not spaces.retrieve("team", QUESTIONS[0]).abstained
    finally:
        spaces.close()


def test_a_namespace_warming_up_holds_up_only_its_own_requests(tmp_path, corpus, embedder, monkeypatch):
    """Warming reads a namespace's shards (seconds on a big store): other teams answer meanwhile."""
    from qrag_qdrant.service.namespaces import Namespaces

    spaces = Namespaces(load_settings(store=tmp_path / "service"), embedder)
    warming, release = threading.Event(), threading.Event()
    warm, openers, opened = QuorumRAG.warm, [], []

    def slow_warm(rag: QuorumRAG) -> None:
        if rag.settings.namespace == "team-b":
            warming.set()
            release.wait()
        warm(rag)

    try:
        spaces.ingest("team-a", corpus, progress=None)
        monkeypatch.setattr(QuorumRAG, "warm", slow_warm)
        openers += [threading.Thread(target=lambda: opened.append(spaces.rag("team-b"))) for _ in range(2)]
        for opener in openers:
            opener.start()
        assert warming.wait(PATIENCE_S)
        answered = []
        other = threading.Thread(target=lambda: answered.append(spaces.retrieve("team-a", QUESTIONS[0])))
        other.start()
        other.join(PATIENCE_S)  # an upper bound for a slow box, not a wait: it ends when the answer is in
        assert answered and not answered[0].abstained  # while team-b was still warming
        assert len(opened) == 0  # team-b's requests wait for its warm-up
    finally:
        release.set()
        for opener in openers:
            opener.join()
        spaces.close()
    assert len(opened) == 2 and opened[0] is opened[1]  # opened once, shared
