"""The pipeline end to end on real engines, with the real (packaged) embedding model."""

from __future__ import annotations

import threading

import pytest

from qrag_qdrant.config.settings import SPARSE_VECTOR
from qrag_qdrant.errors import ModelMismatchError, NothingIngestedError
from qrag_qdrant.eval import Evaluation
from qrag_qdrant.eval.dataset import Dataset, EvalQuestion
from qrag_qdrant.retrieval.fusion import QUESTION
from qrag_qdrant.store import VectorQuery, Where
from qrag_qdrant.store.points import point_id

from .sample_corpus import DOCUMENTS

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

BEES_QUESTION = "How does a honeybee forager tell her sisters the direction and distance of flowers?"
UNANSWERABLE = "What is the capital of Mongolia?"


def stored(rag, collection):
    return sorted(
        (p["source"], p["chunk_index"], p["doc_hash"])
        for p in rag.store.scroll_payloads(collection, ["source", "chunk_index", "doc_hash"])
    )


def test_the_right_source_wins_with_quorum_support(open_rag, corpus):
    rag = open_rag()
    report = rag.ingest(corpus)
    assert report.documents == len(DOCUMENTS) and report.unchanged == 0 and not report.skipped
    assert set(report.chunks) == {c.name for c in rag.settings.collections}
    assert all(count > 0 for count in report.chunks.values())

    evidence = rag.retrieve(BEES_QUESTION)
    assert not evidence.abstained
    top = evidence.clusters[0]
    assert {p.source for p in top.passages} == {"honeybees.txt"}
    assert top.support >= 2
    assert "waggle" in " ".join(p.text for p in top.passages)
    for cluster in evidence.clusters:
        assert cluster.support >= rag.settings.retrieval.quorum
        assert len(cluster.retrievers) == cluster.support
    for passage in evidence.passages:  # spans point back into the original file
        assert DOCUMENTS[passage.source][passage.start : passage.end] == passage.text
    assert [c.rank for c in evidence.clusters] == list(range(1, len(evidence.clusters) + 1))
    assert [c.score for c in evidence.clusters] == sorted((c.score for c in evidence.clusters), reverse=True)
    assert {"embed", "search", "fusion", "clustering", "context"} <= set(evidence.timings_ms)


def test_nested_sources_keep_their_relative_path(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    evidence = rag.retrieve("How long is sourdough bread proofed and how is the dough folded?")
    assert evidence.clusters[0].passages[0].source == "food/sourdough.txt"
    assert not any(p.source.startswith("/") for p in evidence.passages)


def test_reingest_of_an_unchanged_corpus_adds_and_embeds_nothing(open_rag, corpus):
    rag = open_rag()
    first = rag.ingest(corpus)
    before = {name: stored(rag, name) for name in first.chunks}
    second = rag.ingest(corpus)
    assert second.embedded_chunks == 0
    assert second.unchanged == len(DOCUMENTS)
    assert second.chunks == first.chunks
    assert {name: stored(rag, name) for name in first.chunks} == before


def test_changed_file_replaces_its_chunks(open_rag, corpus):
    rag = open_rag()
    first = rag.ingest(corpus)
    (corpus / "games" / "chess.txt").write_text(
        "Go is an abstract strategy board game for two players. Stones are placed on the intersections "
        "of a nineteen by nineteen grid, and the aim is to surround more territory than the opponent."
    )
    second = rag.ingest(corpus)
    assert second.unchanged == len(DOCUMENTS) - 1
    name = rag.settings.collections[0].name
    chess = [row for row in stored(rag, name) if row[0] == "games/chess.txt"]
    assert len(chess) == 1 and chess[0][1] == 0  # one short chunk, old chunks gone
    assert second.chunks[name] < first.chunks[name]
    evidence = rag.retrieve("What is the aim in the game of Go?")
    assert evidence.clusters[0].passages[0].source == "games/chess.txt"
    assert "Kasparov" not in " ".join(p.text for p in evidence.passages)


def test_prune_removes_the_chunks_of_deleted_files(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    (corpus / "lighthouses.txt").unlink()
    kept = rag.ingest(corpus)
    name = rag.settings.collections[0].name
    assert "lighthouses.txt" in {row[0] for row in stored(rag, name)}  # not without --prune
    pruned = rag.ingest(corpus, prune=True)
    assert pruned.pruned_sources == 1
    assert "lighthouses.txt" not in {row[0] for row in stored(rag, name)}
    assert pruned.chunks[name] < kept.chunks[name]


def test_an_excluded_source_leaves_an_index_that_already_holds_it(open_rag, corpus):
    """An eval's held-out documents must not stay in a namespace an earlier full run filled."""
    rag = open_rag()
    full = rag.ingest(corpus)
    name = rag.settings.collections[0].name
    held = rag.ingest(corpus, exclude={"lighthouses.txt"})
    assert held.pruned_sources == 1 and held.chunks[name] < full.chunks[name]
    assert "lighthouses.txt" not in {row[0] for row in stored(rag, name)}
    assert {row[0] for row in stored(rag, name)} == set(DOCUMENTS) - {"lighthouses.txt"}
    back = rag.ingest(corpus)  # without the exclusion it is indexed again
    assert back.chunks == full.chunks and back.unchanged == len(DOCUMENTS) - 1


def test_a_crash_mid_document_is_repaired_by_the_next_run(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    name = rag.settings.collections[0].name
    complete = stored(rag, name)
    # what a crash between the chunk upserts and the chunk-0 marker leaves behind
    rag.store.delete(name, Where(sources=("honeybees.txt",), first_chunks=True))
    assert "honeybees.txt" not in rag.store.document_hashes(name)
    report = rag.ingest(corpus)
    assert report.unchanged == len(DOCUMENTS) - 1 and report.embedded_chunks > 0
    assert stored(rag, name) == complete


def test_point_ids_are_deterministic(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    name = rag.settings.collections[0].name
    hits = rag.store.query(name, [VectorQuery("dense", rag.embedder().query_embed("volcano").tolist(), 3)])[0]
    assert len(hits) == 3
    for hit in hits:
        assert hit.id == point_id(name, hit.payload.source, hit.payload.chunk_index, hit.payload.doc_hash)


def test_abstains_when_no_evidence_reaches_quorum(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    evidence = rag.retrieve(UNANSWERABLE)
    assert evidence.abstained and evidence.clusters == []
    answer = rag.answer(UNANSWERABLE, evidence=evidence)  # abstaining never calls the model
    assert answer.answer is None and answer.error is None


def test_query_before_any_ingest_says_what_to_do(open_rag):
    with pytest.raises(NothingIngestedError, match="run: qrag-qdrant ingest"):
        open_rag().retrieve(BEES_QUESTION)


def test_collections_built_by_another_model_are_refused(open_rag, corpus, backend):
    rag = open_rag()
    rag.ingest(corpus)
    name = rag.settings.collections[0].name
    manifest = rag.store.manifest(name)
    assert manifest.model == "sentence-transformers/all-MiniLM-L6-v2" and manifest.dim == 384
    assert manifest.bm25["avg_len"] == 50.0
    other = manifest.model_copy(update={"model": "BAAI/bge-small-en-v1.5"})
    with pytest.raises(ModelMismatchError, match="built with model"):
        rag.store.open_collection(name, other, create=True)


def test_collections_lists_the_namespace(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    infos = rag.collections()
    assert [i.name for i in infos] == sorted(c.name for c in rag.settings.collections)
    by_size = {i.size: i for i in infos}
    assert by_size[100].retrievers == ["dense-c100", "bm25-c100"]
    assert all(i.points > 0 and i.model.endswith("all-MiniLM-L6-v2") for i in infos)


GO_TEXT = " ".join(
    f"Go is a board game where players place stones to surround territory, round {i}." for i in range(40)
)


def chess_passages(rag, question):
    return [p.text for p in rag.retrieve(question).passages if p.source == "games/chess.txt"]


@pytest.mark.parametrize("warmed", [False, True], ids=["cold", "warmed"])
def test_a_query_during_a_rewrite_sees_the_old_file_or_the_new_one_never_both(open_rag, corpus, monkeypatch, warmed):
    """Warmed (``QuorumRAG.warm``): every document's version is cached, and must not outlive a write."""
    rag = open_rag()
    rag.ingest(corpus)
    if warmed:
        rag.warm()
    (corpus / "games" / "chess.txt").write_text(GO_TEXT)
    real_upsert, real_delete_stale = rag.store.upsert, rag.store.delete_stale

    def stop_before_the_marker(name, points):
        if any(p.payload.chunk_index == 0 for p in points):
            raise RuntimeError("writer stopped before the new version's marker")
        real_upsert(name, points)

    # 1. the new version's chunks are written, its marker is not: readers still see the old file
    monkeypatch.setattr(rag.store, "upsert", stop_before_the_marker)
    with pytest.raises(RuntimeError):
        rag.ingest(corpus)
    assert any("Kasparov" in text for text in chess_passages(rag, "Who did Deep Blue defeat in 1997?"))
    assert not any("stones" in text for text in chess_passages(rag, "What do Go players place on the board?"))

    # 2. the new version is marked, the old one not yet deleted: readers see only the new file
    monkeypatch.setattr(rag.store, "upsert", real_upsert)
    monkeypatch.setattr(rag.store, "delete_stale", lambda name, current, removing=None: None)
    rag.ingest(corpus)
    name = rag.settings.collections[0].name
    assert len({row[2] for row in stored(rag, name) if row[0] == "games/chess.txt"}) == 2  # both versions stored
    assert any("stones" in text for text in chess_passages(rag, "What do Go players place on the board?"))
    assert not any("Kasparov" in text for text in chess_passages(rag, "Who did Deep Blue defeat in 1997?"))

    # 3. the next run deletes the old version
    monkeypatch.setattr(rag.store, "delete_stale", real_delete_stale)
    rag.ingest(corpus)
    assert len({row[2] for row in stored(rag, name) if row[0] == "games/chess.txt"}) == 1


def watch_bm25_searches(rag, monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Events set when a BM25 search reaches the store and when it has returned."""
    started, finished = threading.Event(), threading.Event()
    real_query = rag.store.query

    def query(name, queries):
        lexical = any(q.vector_name == SPARSE_VECTOR for q in queries)
        if lexical:
            started.set()
        hits = real_query(name, queries)
        if lexical:
            finished.set()
        return hits

    monkeypatch.setattr(rag.store, "query", query)
    return started, finished


def test_bm25_searches_run_while_the_question_is_embedded_and_give_the_lists_of_one_after_the_other(
    open_rag, corpus, monkeypatch
):
    rag = open_rag()
    rag.ingest(corpus)
    coordinator = rag.coordinator
    expected = coordinator.searcher._search(
        [(QUESTION, coordinator.searcher.embed(BEES_QUESTION), None)], None
    )  # one after the other
    started, _ = watch_bm25_searches(rag, monkeypatch)
    real_embed, seen_while_embedding = rag.embedder().query_embed, []

    def query_embed(text):
        seen_while_embedding.append(started.wait(timeout=60))  # a BM25 search began before the vector is done
        return real_embed(text)

    monkeypatch.setattr(rag.embedder(), "query_embed", query_embed)
    timings = {}
    vectors, lists = coordinator.searcher.embed_and_search(BEES_QUESTION, timings=timings)
    assert seen_while_embedding == [True] and {"embed", "search"} <= set(timings)
    assert vectors.dense == coordinator.searcher.embed(BEES_QUESTION).dense
    assert [(ranked.retriever, ranked.collection, [hit.id for hit in ranked.hits]) for ranked in lists] == [
        (ranked.retriever, ranked.collection, [hit.id for hit in ranked.hits]) for ranked in expected
    ]
    # qdrant-client's local mode scores the same search a few 1e-8 apart from one call to the next
    assert [hit.score for ranked in lists for hit in ranked.hits] == pytest.approx(
        [hit.score for ranked in expected for hit in ranked.hits], abs=1e-6
    )


def test_a_failed_embedding_leaves_no_search_running(open_rag, corpus, monkeypatch):
    rag = open_rag()
    rag.ingest(corpus)
    rag.retrieve(BEES_QUESTION)  # the collections checked and the model loaded
    _, finished = watch_bm25_searches(rag, monkeypatch)

    def query_embed(text):
        raise RuntimeError("the model failed")

    monkeypatch.setattr(rag.embedder(), "query_embed", query_embed)
    with pytest.raises(RuntimeError, match="the model failed"):
        rag.retrieve(BEES_QUESTION)
    assert finished.is_set()  # the BM25 searches were waited for before the error went up


@pytest.mark.parametrize("context", ["adaptive", "fixed"])
def test_eval_measures_the_evidence_the_query_path_returns(open_rag, corpus, context):
    """Eval's quorum system and ``retrieve`` share one pipeline tail: same question, same
    settings, the same evidence, gate features and threshold included (timings aside)."""
    rag = open_rag(retrieval={"context": {"mode": context}})
    rag.ingest(corpus)
    questions = [
        EvalQuestion("bees", BEES_QUESTION, ("waggle dance",)),
        EvalQuestion("off", "What is the airspeed of an unladen swallow?", ()),
    ]
    evaluation = Evaluation(rag, Dataset("tiny", corpus, "qa", questions), systems=["quorum"])
    for question in questions:
        seen = evaluation.answer("quorum", evaluation.search_question(question)).evidence
        returned = rag.retrieve(question.question)
        assert seen.model_dump(exclude={"timings_ms"}) == returned.model_dump(exclude={"timings_ms"})
        assert seen.gate_features == returned.gate_features and seen.gate_threshold is not None
        assert (
            returned.context_policy is None
            if returned.abstain_reason == "no_quorum"
            else returned.context_policy.startswith(context)
        )


def test_a_one_word_corpus_gives_its_word_as_evidence_whole(open_rag, tmp_path):
    folder = tmp_path / "one-word"
    folder.mkdir()
    (folder / "word.txt").write_text("Ulaanbaatar")
    rag = open_rag("one-word")
    rag.ingest(folder)
    evidence = rag.retrieve("Ulaanbaatar")
    assert not evidence.abstained and [p.text for p in evidence.passages] == ["Ulaanbaatar"]
    assert evidence.context_words == 1 and evidence.context_policy == "adaptive: one cluster reached quorum"


def test_a_payload_written_before_versions_and_marks_reads_with_their_defaults():
    from qrag_qdrant.store import ChunkPayload

    stored = {
        "source": "a.txt",
        "doc_hash": "h",
        "chunk_index": 0,
        "word_start": 0,
        "word_end": 2,
        "start": 0,
        "end": 9,
        "text": "two words",
    }
    payload = ChunkPayload.of(stored)
    assert (payload.version, payload.marks) == (0, ())
    assert payload.as_dict() == {**stored, "version": 0}


def test_a_name_written_in_full_finds_the_document_that_writes_its_initials(open_rag, tmp_path):
    """The roundup shares no word with the question but "SBF": BM25 finds it by the initials of
    the name the question writes in full, and by nothing else."""
    folder = tmp_path / "news"
    folder.mkdir()
    (folder / "roundup.txt").write_text(
        "Week in review. Phones: a folding phone went on sale. SBF allegedly tried to buy off a former "
        "president to keep him out of the race, a new book says. Podcasts: three new shows began."
    )
    (folder / "exchange.txt").write_text("Sam Bankman-Fried founded the FTX exchange in 2019 and led it for years.")
    (folder / "bees.txt").write_text("Honeybees tell each other where flowers are with the waggle dance.")
    rag = open_rag("news")
    rag.ingest(folder)
    lexical = {r.name for r in rag.settings.retrievers if r.kind != "dense"}
    _, lists = rag.coordinator.searcher.embed_and_search("What did Sam Bankman-Fried offer Trump?")
    found = [{hit.payload.source for hit in ranked.hits} for ranked in lists if ranked.retriever in lexical]
    assert found and all("roundup.txt" in sources and "exchange.txt" in sources for sources in found)
