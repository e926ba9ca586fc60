from qrag_qdrant.context import Span, build_context, merge_spans
from qrag_qdrant.coordinator.clustering import Cluster
from qrag_qdrant.coordinator.ranking import ScoredCluster

from .coordinator_helpers import candidate

SOURCE = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat all day."


def span(start, end, source="s.txt", text=SOURCE):
    return Span(source, start, end, text[start:end])


def test_overlapping_spans_merge_into_the_exact_source_text():
    merged = merge_spans([span(20, 50), span(4, 30), span(40, 60)])
    assert merged == [span(4, 60)]
    assert merged[0].text == SOURCE[4:60]


def test_nested_touching_and_separate_spans():
    assert merge_spans([span(0, 40), span(10, 20)]) == [span(0, 40)]
    assert merge_spans([span(0, 10), span(10, 20)]) == [span(0, 10), span(10, 20)]
    assert merge_spans([span(30, 40), span(0, 10)]) == [span(0, 10), span(30, 40)]


def test_different_sources_never_merge_and_keep_first_seen_order():
    other = "x" * 100
    merged = merge_spans([span(0, 20, "b.txt", other), span(5, 30), span(10, 40, "b.txt", other)])
    assert [(s.source, s.start, s.end) for s in merged] == [("b.txt", 0, 40), ("s.txt", 5, 30)]


def test_passages_are_numbered_across_clusters_with_support_and_retrievers():
    first = Cluster([candidate("a", retrievers=("dense-c50", "bm25-c100"), source="s.txt", start=0, end=20,
                               text=SOURCE[0:20]),
                     candidate("b", retrievers=("dense-c100",), source="s.txt", start=10, end=44,
                               text=SOURCE[10:44])])
    second = Cluster([candidate("c", retrievers=("dense-c200", "dense-c50"), source="t.txt", start=0, end=5,
                                text="hello"),
                      candidate("d", retrievers=("dense-c200",), source="u.txt", start=3, end=8, text="world")])
    clusters = build_context([ScoredCluster(first, 0.9), ScoredCluster(second, 0.5)])
    assert [(c.rank, c.support, c.retrievers) for c in clusters] == [
        (1, 3, ["dense-c50", "bm25-c100", "dense-c100"]), (2, 2, ["dense-c200", "dense-c50"])]
    assert [(p.citation, p.source, p.start, p.end, p.text) for c in clusters for p in c.passages] == [
        (1, "s.txt", 0, 44, SOURCE[0:44]), (2, "t.txt", 0, 5, "hello"), (3, "u.txt", 3, 8, "world")]
