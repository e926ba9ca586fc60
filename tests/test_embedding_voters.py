"""More than one dense model: each model of ``[embeddings]`` is a named vector of its chunking's
collection, searched by the retrievers that name it, a voter beside the others."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import EMBEDDERS
from qrag_qdrant.errors import ConfigError, EmbeddingError, ModelMismatchError

from .cli_helpers import QUESTION, assert_clean_error, run
from .hashed_words import HashedWords

RETRIEVERS = [
    {"kind": "dense", "size": 50, "overlap": 25},
    {"kind": "dense", "embedding": "words", "size": 50, "overlap": 25},
    {"kind": "bm25", "size": 50, "overlap": 25},
]
WORDS = {"words": {"embedder": "hashed", "model": "words-v1", "dim": 64}}
BEES = "How do honeybees tell each other where flowers are?"


@pytest.fixture(autouse=True)
def hashed(monkeypatch):
    monkeypatch.setitem(EMBEDDERS.local, "hashed", HashedWords)


def test_a_second_model_is_a_voter_of_its_own_and_its_vectors_are_stored_beside_the_first(open_rag, corpus):
    rag = open_rag(retrievers=RETRIEVERS, embeddings=WORDS)
    rag.ingest(corpus)
    best = rag.retrieve(BEES).clusters[0]
    assert "dense-words-c50" in best.retrievers and "bee" in best.passages[0].text.lower()
    [info] = rag.collections()
    assert (info.model, info.vectors) == ("sentence-transformers/all-MiniLM-L6-v2", {"dense-words": "hashed:words-v1"})
    assert info.retrievers == ["dense-c50", "dense-words-c50", "bm25-c50"]
    points = list(rag.store.scroll_points(info.name))
    model = HashedWords(load_settings(embeddings=WORDS).embeddings["words"], HashedWords.Options())
    assert points and all(set(p.named) == {"dense-words"} for p in points)
    stored = np.array([p.named["dense-words"] for p in points], dtype=np.float32)
    assert np.allclose(stored, model.embed([p.payload.text for p in points]), atol=1e-6)
    assert all(len(p.dense) == 384 for p in points)  # [embedding]'s vectors beside them


def test_a_namespace_asked_with_other_models_refuses_in_one_line_naming_both(open_rag, corpus):
    open_rag(retrievers=RETRIEVERS, embeddings=WORDS).ingest(corpus)
    other = open_rag(retrievers=RETRIEVERS, embeddings={"words": {**WORDS["words"], "dim": 128}})
    fewer = open_rag(retrievers=[RETRIEVERS[0], RETRIEVERS[2]])
    for asking, asked in [
        (lambda: other.retrieve(BEES), "(asked for dense-words of hashed:words-v1 (128))"),
        # an ingest would write points without the model's vectors
        (
            lambda: fewer.ingest(corpus),
            "(asked for dense alone); rebuild it with these settings (ingest PATH --rebuild)",
        ),
    ]:
        with pytest.raises(ModelMismatchError) as refused:
            asking()
        message = str(refused.value)
        assert "the vectors dense-words of hashed:words-v1 (64)" in message and asked in message, message
        assert "\n" not in message
    # a search may leave a model out: it reads the vectors it asks for
    assert fewer.retrieve(BEES).clusters[0].retrievers


def test_a_rebuild_moves_a_namespace_to_another_model_and_queries_use_it(open_rag, corpus):
    open_rag(retrievers=RETRIEVERS, embeddings=WORDS).ingest(corpus)
    other = {"words": {**WORDS["words"], "model": "words-v2", "dim": 128}}
    moved = open_rag(retrievers=RETRIEVERS, embeddings=other)
    moved.ingest(corpus, rebuild=True)
    [info] = moved.collections()
    assert info.vectors == {"dense-words": "hashed:words-v2"}
    assert "dense-words-c50" in moved.retrieve(BEES).clusters[0].retrievers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"retrievers": RETRIEVERS},
            "retrievers: dense-words-c50 names embedding 'words', which [embeddings] does not hold (known: none)",
        ),
        (
            {"retrievers": [{"kind": "bm25", "embedding": "words", "size": 50, "overlap": 25}], "embeddings": WORDS},
            "embedding 'words': only a dense retriever has a model",
        ),
        ({"embeddings": {"Words!": WORDS["words"]}}, "embeddings.Words!: use 1-32 lower-case letters"),
        (
            {"embeddings": {"words": {**WORDS["words"], "pooling": "late"}}},
            "embeddings.words.pooling: a model of [embeddings] embeds each chunk on its own",
        ),
    ],
)
def test_a_misnamed_model_is_one_line(overrides, message):
    with pytest.raises(ConfigError) as refused:
        load_settings(**overrides)
    assert message in str(refused.value) and "\n" not in str(refused.value)


class Stubborn(HashedWords):
    """A plug-in that gives vectors of its own size whatever ``embedding.dim`` says."""

    def __init__(self, settings, options: HashedWords.Options):
        super().__init__(settings, options)
        self.dim = options.dim


def test_a_model_giving_vectors_of_another_size_than_its_dim_is_one_line_and_writes_nothing(
    open_rag, corpus, monkeypatch
):
    monkeypatch.setitem(EMBEDDERS.local, "stubborn", Stubborn)
    rag = open_rag(retrievers=RETRIEVERS, embeddings={"words": {"embedder": "stubborn", "model": "w", "dim": 48}})
    with pytest.raises(EmbeddingError) as refused:
        rag.ingest(corpus)
    assert str(refused.value) == "embeddings.words: the model gave vectors of 64 values, not 48 (set dim)"
    assert all(info.points == 0 for info in rag.collections())


class Recorded:
    """An embedding's progress, as the CLI's bar is told it."""

    def __init__(self):
        self.queued, self.embedded = 0, []

    def chunks_queued(self, count):
        self.queued += count

    def chunks_embedded(self, count):
        self.embedded.append(count)


def test_a_model_is_added_to_a_namespace_and_taken_out_without_reading_a_document_again(open_rag, corpus):
    without = [RETRIEVERS[0], RETRIEVERS[2]]
    open_rag(retrievers=without).ingest(corpus)
    for path in corpus.rglob("*"):  # nothing can be read again
        if path.is_file():
            path.unlink()
    rag = open_rag(retrievers=RETRIEVERS, embeddings=WORDS)
    assert [(s.name, s.state) for s in rag.retrievers()] == [
        ("dense-c50", "ready"),
        ("dense-words-c50", "missing"),
        ("bm25-c50", "ready"),
    ]
    with pytest.raises(ModelMismatchError):
        rag.retrieve(BEES)
    progress = Recorded()
    report = rag.change_vectors("words", adding=True, progress=progress)
    [change] = report.changed
    assert (change.added, change.removed, change.replaced) == (["dense-words"], [], "default-c50-o25-v1")
    assert progress.queued == change.points == sum(progress.embedded) > 0
    assert {s.state for s in rag.retrievers()} == {"ready"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the term counts came along: none counted again
        assert "dense-words-c50" in rag.retrieve(BEES).clusters[0].retrievers
    [info] = rag.collections()
    assert (info.collection, info.points, info.vectors) == (
        change.collection,
        change.points,
        {"dense-words": "hashed:words-v1"},
    )
    model = HashedWords(load_settings(embeddings=WORDS).embeddings["words"], HashedWords.Options())
    points = list(rag.store.scroll_points(info.name))
    assert np.allclose(
        [p.named["dense-words"] for p in points], model.embed([p.payload.text for p in points]), atol=1e-6
    )
    assert rag.change_vectors("words", adding=True).changed == []  # as the config asks already

    with pytest.raises(ConfigError, match="the config's retrievers still name it"):
        rag.change_vectors("words", adding=False)
    back = open_rag(retrievers=without)
    [gone] = back.change_vectors("words", adding=False).changed
    assert (gone.added, gone.removed, gone.points) == ([], ["dense-words"], change.points)
    assert back.collections()[0].vectors == {} and back.retrieve(BEES).clusters
    with pytest.raises(ConfigError, match="no retriever in the config names embedding 'nope'"):
        back.change_vectors("nope", adding=True)


def test_retrievers_add_on_the_command_line_shows_progress_and_a_json_report(tmp_path, corpus, embedder):
    store = tmp_path / "store"
    assert run("ingest", str(corpus), "--store", str(store)).exit_code == 0
    config = tmp_path / "voters.toml"
    listed = ",\n".join(
        "{ "
        + ", ".join(f'{key} = "{value}"' if isinstance(value, str) else f"{key} = {value}" for key, value in r.items())
        + " }"
        for r in [
            *RETRIEVERS,
            {"kind": "dense", "size": 100, "overlap": 50},
            {"kind": "bm25", "size": 100, "overlap": 50},
        ]
    )
    config.write_text(
        f'retrievers = [\n{listed}\n]\n\n[embeddings.words]\nembedder = "hashed"\nmodel = "words-v1"\ndim = 64\n'
    )
    before = run("retrievers", "list", "--config", str(config), "--store", str(store), "--json")
    assert before.exit_code == 0, before.stderr
    assert {r["name"]: r["state"] for r in json.loads(before.stdout)["retrievers"]}["dense-words-c50"] == "missing"
    added = run("retrievers", "add", "words", "--config", str(config), "--store", str(store), "--json")
    assert added.exit_code == 0, added.stderr
    report = json.loads(added.stdout)
    assert [c["alias"] for c in report["changed"]] == ["default-c50-o25"] and report["chunks_per_second"] > 0
    assert "chunks embedded (" in added.stderr and "s left)" in added.stderr  # one line a batch, off a terminal
    again = run("retrievers", "add", "words", "--config", str(config), "--store", str(store))
    assert "Nothing to do: every collection is as the config asks for 'words'" in again.stdout
    answered = run("query", QUESTION, "--no-generate", "--config", str(config), "--store", str(store), "--json")
    assert "dense-words-c50" in json.loads(answered.stdout)["clusters"][0]["retrievers"]
    wrong = run("retrievers", "remove", "words", "--config", str(config), "--store", str(store))
    assert_clean_error(wrong, 1, "the config's retrievers still name it")


def extending_example(heading: str, first_line: str) -> str:
    """The Python block of docs/extending.md under ``heading`` that starts with ``first_line``."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "extending.md").read_text()
    section = page[page.index(heading) :]
    start = section.index(f"```python\n{first_line}\n") + len("```python\n")
    return section[start : section.index("```", start)]


def test_the_embedder_of_the_extending_page_runs_as_written_and_votes(open_rag, corpus, monkeypatch):
    written: dict = {}
    exec(extending_example("## An embedding model of your own", "# my_embedder/__init__.py"), written)
    monkeypatch.setitem(EMBEDDERS.local, "trigrams", written["Trigrams"])
    page_config = {"tri": {"embedder": "trigrams", "model": "trigrams-v1", "dim": 256}}
    retrievers = [
        {"kind": "dense", "size": 50, "overlap": 25},
        {"kind": "dense", "size": 100, "overlap": 50},
        {"kind": "dense", "embedding": "tri", "size": 100, "overlap": 50},
        {"kind": "bm25", "size": 50, "overlap": 25},
        {"kind": "bm25", "size": 100, "overlap": 50},
    ]
    open_rag(retrievers=[r for r in retrievers if "embedding" not in r]).ingest(corpus)
    rag = open_rag(retrievers=retrievers, embeddings=page_config)
    [change] = rag.change_vectors("tri", adding=True).changed
    assert change.alias.endswith("-c100-o50") and change.added == ["dense-tri"]
    best = rag.retrieve(BEES).clusters[0]
    assert "dense-tri-c100" in best.retrievers and "bee" in best.passages[0].text.lower()


def test_a_service_whose_namespace_is_rebuilt_with_another_model_under_it_refuses_rather_than_mix(
    tmp_path, corpus, embedder
):
    """Another service or a CLI on the same Qdrant server switches the namespace to another model
    of the same size: the service's next search must not compare its model's vectors with them."""
    from qrag_qdrant import QuorumRAG
    from qrag_qdrant.service.namespaces import Namespaces

    spaces = Namespaces(load_settings(store=tmp_path / "service"), embedder)
    try:
        spaces.ingest("team", corpus, progress=None)
        assert spaces.retrieve("team", BEES).clusters
        before = spaces.stamp("team")
        served = spaces.rag("team")
        other = load_settings(
            store=tmp_path / "service",
            namespace="team",
            embedding={"embedder": "hashed", "model": "words-v9", "dim": 384},
        )
        QuorumRAG(other, store=served.store).ingest(corpus, rebuild=True)  # not this pipeline's doing
        assert spaces.stamp("team") != before
        with pytest.raises(ModelMismatchError, match="hashed:words-v9"):
            spaces.retrieve("team", BEES)
    finally:
        spaces.close()


def test_a_namespace_is_re_embedded_with_a_new_model_from_its_stored_text_and_answers_throughout(open_rag, corpus):
    from qrag_qdrant import QuorumRAG

    old = open_rag()  # the packaged model
    old.ingest(corpus)
    for path in corpus.rglob("*"):  # nothing can be read again
        if path.is_file():
            path.unlink()
    hashed = {"embedder": "hashed", "model": "words-v1", "dim": 64}
    new = QuorumRAG(load_settings(namespace=old.settings.namespace, embedding=hashed), store=old.store)
    answered: list[str] = []

    class AskedMeanwhile(Recorded):
        def chunks_embedded(self, count):
            super().chunks_embedded(count)  # the old config answers from the old versions meanwhile
            answered.append(old.retrieve(BEES).clusters[0].passages[0].text)

    progress = AskedMeanwhile()
    report = new.reembed(progress)
    assert [c.alias for c in report.changed] == [spec.name for spec in new.settings.collections]
    assert all(c.added == c.removed == ["dense"] for c in report.changed)
    assert progress.queued == sum(progress.embedded) == sum(c.points for c in report.changed) > 0
    assert answered and all("bee" in text.lower() for text in answered)
    model = HashedWords(new.settings.embedding, HashedWords.Options())
    for info in new.collections():
        assert (info.model, info.points) == ("hashed:words-v1", {c.alias: c.points for c in report.changed}[info.name])
        manifest = new.store.manifest(info.name)
        assert manifest is not None and (manifest.dim, manifest.pooling) == (64, "chunk")
        points = list(new.store.scroll_points(info.name))
        assert np.allclose([p.dense for p in points], model.embed([p.payload.text for p in points]), atol=1e-6)
    assert "bee" in new.retrieve(BEES).clusters[0].passages[0].text.lower()
    old.index_changed()  # as a service sees another process's change: refused, never mixed
    with pytest.raises(ModelMismatchError, match="re-embed it with these settings \\(retrievers reembed, or"):
        old.retrieve(BEES)
    assert new.reembed().changed == []  # as the config asks already
    new.coordinator.close()


def test_retrievers_reembed_on_the_command_line(tmp_path, corpus, embedder):
    store = tmp_path / "store"
    assert run("ingest", str(corpus), "--store", str(store)).exit_code == 0
    config = tmp_path / "hashed.toml"
    config.write_text('[embedding]\nembedder = "hashed"\nmodel = "words-v1"\ndim = 64\n')
    listed = run("retrievers", "list", "--config", str(config), "--store", str(store))
    assert listed.exit_code == 0 and "retrievers reembed" in listed.stderr
    done = run("retrievers", "reembed", "--config", str(config), "--store", str(store))
    assert done.exit_code == 0, done.stderr
    assert "'hashed:words-v1': 2 collections changed" in done.stdout and "re-embedded dense" in done.stdout
    answered = run("query", QUESTION, "--no-generate", "--config", str(config), "--store", str(store), "--json")
    assert answered.exit_code == 0 and json.loads(answered.stdout)["clusters"]


def models_served(client, headers) -> set[str]:
    """The models ``GET /v1/collections`` names for a key's namespace."""
    return {c["model"] for c in client.get("/v1/collections", headers=headers).json()}


@pytest.fixture
def reloadable(teams, tmp_path):
    """The service over the teams, started with a config file of the defaults (the packaged model)
    that a test then changes: (client, the teams' headers, the file)."""
    config = tmp_path / "service.toml"
    config.write_text("# the defaults: the packaged model\n")
    start, auth = teams
    with start(config_file=config) as client:
        yield client, auth, config


def test_a_running_service_moves_to_a_new_model_on_reload_answering_throughout(reloadable, monkeypatch, caplog):
    """The config's [embedding] changed and the service told (SIGHUP runs ``switch_model``): each
    namespace is re-embedded in a job while it answers from its old collections, then switched."""
    import threading

    from qrag_qdrant.service.model_switch import switch_model

    from .waiting import DEADLINE_SECONDS, wait_until

    begun, go_on = threading.Event(), threading.Event()

    class Held(HashedWords):
        """The new model, holding its first batch until the test has asked a question meanwhile."""

        def embed(self, texts):
            begun.set()
            assert go_on.wait(DEADLINE_SECONDS)
            return super().embed(texts)

    monkeypatch.setitem(EMBEDDERS.local, "held", Held)
    client, auth, config = reloadable

    def asked() -> dict:
        response = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
        assert response.status_code == 200, response.text
        return response.json()

    def models() -> set[str]:
        return models_served(client, auth["a"])

    assert models() == {"sentence-transformers/all-MiniLM-L6-v2"} and asked()["clusters"]
    state = client.app.state.service
    assert switch_model(state, ["team-a"]) == []  # the config's model is the one serving: nothing to do
    config.write_text('[embedding]\nembedder = "held"\nmodel = "words-v1"\ndim = 64\n')
    with caplog.at_level("INFO", logger="qrag_qdrant.service.model_switch"):
        jobs = switch_model(state, ["team-a", "team-b"])
    try:
        assert sorted(job.namespace for job in jobs) == ["team-a", "team-b"]
        assert all(f"namespace {job.namespace} is re-embedded by job {job.id}" in caplog.text for job in jobs)
        assert begun.wait(DEADLINE_SECONDS)  # re-embedding, the old collections still serving
        during = asked()
        assert "bee" in during["clusters"][0]["passages"][0]["text"].lower()
        assert models() == {"sentence-transformers/all-MiniLM-L6-v2"}
    finally:
        go_on.set()  # the job goes on, whatever failed above
    for job in jobs:
        wait_until(lambda job=job: job.state not in ("queued", "running"), f"job {job.id} ended")
        assert job.state == "done" and job.report["changed"], job.error
    assert models() == {"held:words-v1"}
    assert "bee" in asked()["clusters"][0]["passages"][0]["text"].lower()


def test_a_namespace_whose_switch_failed_answers_with_its_model_and_is_switched_on_the_next_reload(
    reloadable, monkeypatch
):
    from qrag_qdrant.service.model_switch import switch_model

    from .waiting import wait_until

    class Flaky(HashedWords):
        """The new model's server, down for its first request."""

        down = True

        def embed(self, texts):
            if Flaky.down:
                Flaky.down = False
                raise EmbeddingError("the embedding server at http://gpu-box:8080/v1 failed: 503")
            return super().embed(texts)

    monkeypatch.setitem(EMBEDDERS.local, "flaky", Flaky)
    client, auth, config = reloadable
    state = client.app.state.service

    def switched() -> str:
        [job] = switch_model(state, ["team-a"])
        return wait_until(lambda: job.state if job.state not in ("queued", "running") else None, "the job ended")

    def models() -> set[str]:
        return models_served(client, auth["a"])

    config.write_text('[embedding]\nembedder = "flaky"\nmodel = "words-v1"\ndim = 64\n')
    assert switched() == "failed"
    assert models() == {"sentence-transformers/all-MiniLM-L6-v2"}  # the old collections, the old model
    answered = client.post("/v1/query", json={"question": BEES, "generate": False}, headers=auth["a"])
    assert answered.status_code == 200 and answered.json()["clusters"]
    assert switched() == "done"  # the same config read again: the namespace still had the old model
    assert models() == {"flaky:words-v1"}
    assert switch_model(state, ["team-a"]) == []
