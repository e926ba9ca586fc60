"""Each collection's document frequencies: kept by ingest through adds, changes and prunes,
dropped by a crash and counted again, and read by the gate's rare-term features."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from qrag_qdrant.store.base import TERM_STATS
from qrag_qdrant.text.term_stats import TermStats, count_terms, unseen_words
from qrag_qdrant.text.terms import terms

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

GO_TEXT = " ".join(
    f"Go is a board game where players place stones to surround territory, round {i}." for i in range(40)
)


def recounted(rag, name: str) -> TermStats:
    texts = [p["text"] for p in rag.store.scroll_payloads(name, ["text"])]
    return TermStats.of(count_terms(texts), len(texts))


def saved(rag, name: str) -> TermStats | None:
    manifest = rag.store.manifest(name)
    return TermStats.current(rag.store.attachment(name, TERM_STATS), manifest.indexed)


def assert_counts_equal(found: TermStats | None, expected: TermStats) -> None:
    assert found is not None
    assert found.chunks == expected.chunks
    assert np.array_equal(found.ids, expected.ids) and np.array_equal(found.counts, expected.counts)


def df(stats: TermStats, word: str) -> int:
    return int(stats.frequencies(terms(word))[0])


def test_term_stats_round_trip_and_lookups():
    stats = TermStats.of(Counter({5: 2, 3: 1, 9: 0}), chunks=4, indexed=7)
    again = TermStats.from_bytes(stats.to_bytes())
    assert again.indexed == 7 and again.chunks == 4
    assert again.frequencies([3, 5, 9, 11]).tolist() == [1, 2, 0, 0]
    idf = dict(zip([3, 5, 11], map(again.idf_of, again.frequencies([3, 5, 11]).tolist())))
    assert idf[11] > idf[3] > idf[5]  # a term no chunk holds is the rarest
    assert TermStats.current(stats.to_bytes(), indexed=8) is None  # stamped for another state: stale
    assert TermStats.current(b"not an npz file", indexed=7) is None
    assert TermStats.of(Counter(), 0).frequencies([1]).tolist() == [0]


def test_ingest_keeps_the_counts_equal_to_a_recount_through_changes_and_prunes(open_rag, corpus, monkeypatch):
    rag = open_rag()
    rag.ingest(corpus)
    for spec in rag.settings.collections:
        assert_counts_equal(saved(rag, spec.name), recounted(rag, spec.name))

    (corpus / "games" / "chess.txt").write_text(GO_TEXT)
    (corpus / "zanzibar.txt").write_text("Zanzibar exports cloves, nutmeg and cinnamon from its spice farms.")
    (corpus / "volcanoes.md").unlink()
    full_scans = []
    real_scroll = rag.store.scroll_payloads

    def watched(name, fields, where=None):
        if fields == ["text"] and where is None:
            full_scans.append(name)
        return real_scroll(name, fields, where)

    monkeypatch.setattr(rag.store, "scroll_payloads", watched)
    rag.ingest(corpus, prune=True)
    monkeypatch.undo()
    assert full_scans == []  # a clean run updates the counts with its own adds and removes
    for spec in rag.settings.collections:
        stats = saved(rag, spec.name)
        assert_counts_equal(stats, recounted(rag, spec.name))
        assert df(stats, "Kasparov") == 0 and df(stats, "magma") == 0  # the old chess text, the pruned file
        assert df(stats, "Zanzibar") > 0 and df(stats, "stones") > 0


def test_a_crash_mid_ingest_drops_the_counts_and_the_next_run_counts_again(open_rag, corpus, monkeypatch):
    rag = open_rag()
    rag.ingest(corpus)
    (corpus / "games" / "chess.txt").write_text(GO_TEXT)

    def crash(name, points):
        raise RuntimeError("writer crashed")

    monkeypatch.setattr(rag.store, "upsert", crash)
    with pytest.raises(RuntimeError):
        rag.ingest(corpus)
    monkeypatch.undo()
    name = rag.settings.collections[0].name
    assert saved(rag, name) is None  # none rather than wrong ones
    rag.ingest(corpus)
    assert_counts_equal(saved(rag, name), recounted(rag, name))
    assert df(saved(rag, name), "stones") > 0


def test_the_gate_reads_stale_or_missing_counts_as_a_recount_and_says_how_to_store_them(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    for spec in rag.settings.collections:
        rag.store.attach(spec.name, TERM_STATS, TermStats.of(Counter({1: 1}), 1, indexed=-1).to_bytes())
    finest = max(rag.settings.collections, key=lambda spec: rag.store.count(spec.name)).name
    with pytest.warns(
        UserWarning,
        match=f"^{finest} has no current term counts stored .* counted from its "
        f"{rag.store.count(finest)} chunks, as every new process will until an ingest .* finishes and "
        "stores them; run qrag-qdrant ingest",
    ):
        assert_counts_equal(rag.coordinator.views.term_stats, recounted(rag, finest))


def test_stored_counts_or_a_store_that_keeps_none_read_without_a_warning(open_rag, corpus, recwarn):
    rag = open_rag()
    rag.ingest(corpus)
    assert rag.coordinator.views.term_stats.chunks > 0
    other = open_rag("keeps-none")
    other.ingest(corpus)
    for spec in other.settings.collections:
        other.store.attach(spec.name, TERM_STATS, None)
    other.store.keeps_attachments = False  # as a plug-in store whose attach keeps nothing
    assert other.coordinator.views.term_stats.chunks > 0
    assert not [w for w in recwarn if "term counts" in str(w.message)]


def test_rare_term_features_tell_a_name_the_corpus_never_mentions(open_rag, corpus):
    rag = open_rag()
    rag.ingest(corpus)
    known = rag.retrieve("Who did Deep Blue defeat in 1997?").gate_features
    assert known["names_in_corpus"] == 1.0 and known["rarest_in_corpus"] == 1.0
    assert known["idf_top_share"] > 0.5
    unknown = rag.retrieve("Who did Deep Blue defeat in Vladivostok?").gate_features
    assert unknown["names_in_corpus"] < 1.0 and unknown["rarest_in_corpus"] == 0.0
    assert unknown["idf_top_share"] < known["idf_top_share"]


def test_a_rare_question_word_no_document_holds_is_unseen_and_a_common_one_is_not():
    """ "sick" over a handbook that never says it marks the question as about something else;
    "call" (common in English) and "vacation" (held) do not."""
    texts = ["Employees get 25 days of paid vacation per year.", "To reset your password, phone extension 4417."]
    stats = TermStats.of(count_terms(texts), len(texts))
    assert unseen_words("How many sick days do employees get?", stats) == ["sick"]
    assert unseen_words("Which extension do I call to reset my password?", stats) == []
    assert unseen_words("How many vacation days do employees get?", stats) == []
