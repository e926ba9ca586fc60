"""Teams side by side in one store, and rebuilds behind aliases, on every engine."""

from __future__ import annotations

import shutil

import pytest

from .sample_corpus import DOCUMENTS

BEES = "How does a honeybee forager tell her sisters the direction and distance of flowers?"
LIGHTHOUSE = "How did lighthouse keepers keep the light burning through the night?"


def one_file_corpus(root, name, text):
    root.mkdir(parents=True)
    (root / name).write_text(text, encoding="utf-8")
    return root


def texts(evidence):
    return " ".join(p.text for p in evidence.passages)


def test_two_namespaces_with_the_same_file_names_never_see_each_others_evidence(open_rag, tmp_path):
    bees = one_file_corpus(tmp_path / "a", "notes.txt", DOCUMENTS["honeybees.txt"])
    lights = one_file_corpus(tmp_path / "b", "notes.txt", DOCUMENTS["lighthouses.txt"])
    team_a, team_b = open_rag("team-a"), open_rag("team-b")
    team_a.ingest(bees)
    team_b.ingest(lights)

    a_bees, b_bees = team_a.retrieve(BEES), team_b.retrieve(BEES)
    assert "waggle" in texts(a_bees)
    assert "waggle" not in texts(b_bees) and "honey" not in texts(b_bees).lower()
    assert "waggle" not in texts(team_b.retrieve("waggle dance forager honeybee colony"))
    assert "lighthouse" in texts(team_b.retrieve(LIGHTHOUSE)).lower()
    assert "lighthouse" not in texts(team_a.retrieve(LIGHTHOUSE)).lower()

    for rag in (team_a, team_b):
        listed = rag.collections()
        assert {i.name for i in listed} == {c.name for c in rag.settings.collections}
        assert {i.namespace for i in listed} == {rag.settings.namespace}


def test_a_namespace_cannot_touch_another_namespaces_collections_on_edge(tmp_path, embedder):
    from qrag_qdrant.errors import StoreError
    from qrag_qdrant.store.edge import EdgeStore

    with EdgeStore(tmp_path / "s", "team-a") as store:
        with pytest.raises(StoreError, match="not in namespace 'team-a'"):
            store.count("team-b-c50-o25")
        with pytest.raises(StoreError, match="not in namespace 'team-a'"):
            store.drop_collection("team-b-c50-o25-v1")
        with pytest.raises(StoreError, match="not in namespace 'team-a'"):
            store.switch_aliases({"team-b-c50-o25": "team-a-c50-o25-v1"})


def rebuild_corpus(corpus):
    """The corpus after an edit: chess.txt now holds Go, and the bees are gone."""
    (corpus / "games" / "chess.txt").write_text(
        "Go is an abstract strategy board game for two players. Stones are placed on the intersections "
        "of a nineteen by nineteen grid, and the aim is to surround more territory than the opponent."
    )
    (corpus / "honeybees.txt").unlink()


@pytest.mark.slow
def test_a_rebuild_serves_the_old_index_until_one_switch_to_the_new(open_rag, corpus, monkeypatch):
    rag = open_rag()
    first = rag.ingest(corpus)
    old = dict(first.collections)
    assert all(collection == f"{alias}-v1" for alias, collection in old.items())
    rebuild_corpus(corpus)

    seen_between_steps = []
    real_switch = rag.store.switch_aliases

    def query_then_switch(targets):
        # every new collection is complete here; no reader has been moved to it yet
        assert set(targets) == set(old) and all(t.endswith("-v2") for t in targets.values())
        seen_between_steps.append(rag.retrieve(BEES))
        real_switch(targets)

    monkeypatch.setattr(rag.store, "switch_aliases", query_then_switch)
    report = rag.ingest(corpus, rebuild=True)

    assert "waggle" in texts(seen_between_steps[0])  # the old, complete index
    assert report.rebuilt and report.collections == {alias: f"{alias}-v2" for alias in old}
    assert sorted(report.dropped) == sorted(old.values())
    assert not set(old.values()) & set(rag.store.collection_names())
    assert "waggle" not in texts(rag.retrieve(BEES))
    assert rag.retrieve("What is the aim in the game of Go?").clusters[0].passages[0].source == "games/chess.txt"
    assert report.documents == len(DOCUMENTS) - 1 and report.embedded_chunks > 0


@pytest.mark.slow
def test_a_crashed_rebuild_leaves_the_old_index_serving_and_the_next_run_cleans_up(open_rag, corpus, monkeypatch):
    rag = open_rag()
    first = rag.ingest(corpus)
    rebuild_corpus(corpus)

    def crash(targets):
        raise RuntimeError("killed before the switch")

    monkeypatch.setattr(rag.store, "switch_aliases", crash)
    with pytest.raises(RuntimeError):
        rag.ingest(corpus, rebuild=True)
    monkeypatch.undo()

    half_built = {f"{alias}-v2" for alias in first.collections}
    assert half_built <= set(rag.store.collection_names())
    assert "waggle" in texts(rag.retrieve(BEES))  # still the old index

    report = rag.ingest(corpus, prune=True)  # any next run, here an incremental one
    assert sorted(report.dropped) == sorted(half_built)
    assert not half_built & set(rag.store.collection_names())
    assert report.collections == first.collections
    assert "waggle" not in texts(rag.retrieve(BEES))  # the incremental run applied the edit


@pytest.mark.slow
def test_an_unversioned_embedded_collection_is_served_then_replaced_by_a_rebuild(tmp_path, corpus, embedder):
    """Stores written before aliases hold ``<alias>/`` folders: read as they are, rebuilt into ``-v1``."""
    from qrag_qdrant import QuorumRAG
    from qrag_qdrant.config.settings import load_settings

    store = tmp_path / "store"
    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        rag.ingest(corpus)
    aliases_file = store / ".aliases-default.json"
    for alias, collection in __import__("json").loads(aliases_file.read_text()).items():
        shutil.move(store / collection, store / alias)
    aliases_file.unlink()

    with QuorumRAG(load_settings(store=store), embedder=embedder) as rag:
        assert {i.collection for i in rag.collections()} == {c.name for c in rag.settings.collections}
        assert "waggle" in texts(rag.retrieve(BEES))
        report = rag.ingest(corpus, rebuild=True)
        assert set(report.dropped) == {c.name for c in rag.settings.collections}
        assert all(collection.endswith("-v1") for collection in report.collections.values())
        assert "waggle" in texts(rag.retrieve(BEES))
