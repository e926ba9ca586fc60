from qrag_qdrant.retrieval.clustering import Cluster
from qrag_qdrant.retrieval.context import (
    Span,
    adaptive_plan,
    agreement_window,
    build_context,
    candidate_span,
    merge_spans,
    to_sentences,
    unsent_parts,
)
from qrag_qdrant.retrieval.fusion import Candidate
from qrag_qdrant.retrieval.ranking import ScoredCluster
from qrag_qdrant.text.locations import Mark
from qrag_qdrant.text.sentences import sentence_starts

from .coordinator_helpers import candidate, hit

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


def test_a_span_inside_another_adds_its_marks():
    outer, inner = span(0, 40), Span("s.txt", 10, 20, SOURCE[10:20], frozenset({Mark(12, 2, None)}))
    (merged,) = merge_spans([outer, inner])
    assert (merged.start, merged.end, merged.text) == (0, 40, SOURCE[:40])
    assert merged.marks == frozenset({Mark(12, 2, None)})


def test_different_sources_never_merge_and_keep_first_seen_order():
    other = "x" * 100
    merged = merge_spans([span(0, 20, "b.txt", other), span(5, 30), span(10, 40, "b.txt", other)])
    assert [(s.source, s.start, s.end) for s in merged] == [("b.txt", 0, 40), ("s.txt", 5, 30)]


def test_passages_are_numbered_across_clusters_with_support_and_retrievers():
    first = Cluster(
        [
            candidate("a", retrievers=("dense-c50", "bm25-c100"), source="s.txt", start=0, end=19, text=SOURCE[0:19]),
            candidate("b", retrievers=("dense-c100",), source="s.txt", start=10, end=43, text=SOURCE[10:43]),
        ]
    )
    second = Cluster(
        [
            candidate("c", retrievers=("dense-c200", "dense-c50"), source="t.txt", start=0, end=5, text="hello"),
            candidate("d", retrievers=("dense-c200",), source="u.txt", start=3, end=8, text="world"),
        ]
    )
    clusters = build_context([ScoredCluster(first, 0.9), ScoredCluster(second, 0.5)], limit=5)
    assert [(c.rank, c.support, c.retrievers) for c in clusters] == [
        (1, 3, ["dense-c50", "bm25-c100", "dense-c100"]),
        (2, 2, ["dense-c200", "dense-c50"]),
    ]
    assert [(p.citation, p.source, p.start, p.end, p.text) for c in clusters for p in c.passages] == [
        (1, "s.txt", 0, 43, SOURCE[0:43]),
        (2, "t.txt", 0, 5, "hello"),
        (3, "u.txt", 3, 8, "world"),
    ]


def test_unsent_parts_cut_what_was_sent_on_word_boundaries():
    whole = span(0, len(SOURCE))
    parts = unsent_parts(whole, [(40, 57), (10, 25)])
    assert [(p.start, p.end, p.text) for p in parts] == [
        (0, 9, "The quick"),
        (26, 39, "over the lazy"),
        (58, len(SOURCE), SOURCE[58:]),
    ]
    assert all(SOURCE[p.start : p.end] == p.text for p in parts)
    assert unsent_parts(span(10, 20), [(0, 30)]) == []
    assert unsent_parts(span(10, 19), []) == [span(10, 19)]


def test_text_sent_by_an_earlier_cluster_is_not_sent_again():
    def cluster(point_id, start, end):
        return Cluster(
            [candidate(point_id, retrievers=("r1", "r2"), source="s.txt", start=start, end=end, text=SOURCE[start:end])]
        )

    ranked = [
        ScoredCluster(cluster("a", 0, 43), 0.9),
        ScoredCluster(cluster("inside", 10, 30), 0.8),
        ScoredCluster(cluster("b", 20, 64), 0.7),
        ScoredCluster(cluster("c", 65, 67), 0.6),
    ]
    clusters = build_context(ranked, limit=2)
    assert [(c.rank, c.score) for c in clusters] == [(1, 0.9), (2, 0.7)]  # "inside" adds nothing
    assert [(p.citation, p.start, p.end) for c in clusters for p in c.passages] == [(1, 0, 43), (2, 44, 64)]
    assert clusters[1].passages[0].text == "while the cat sleeps"


def test_agreement_window_settles_where_the_best_members_overlap():
    # three chunks over one source; words 8..12 are covered by all of them
    members = [
        candidate("a", source="s.txt", start=0, end=64, text=SOURCE[0:64], rrf=0.05),
        candidate("b", source="s.txt", start=31, end=87, text=SOURCE[31:87], rrf=0.03),
        candidate("c", source="s.txt", start=44, end=75, text=SOURCE[44:75], rrf=0.03),
    ]
    merged = merge_spans(candidate_span(m) for m in members)
    window = agreement_window(merged, members, 4)
    assert window.text == "while the cat sleeps"  # covered by a, b and c
    assert SOURCE[window.start : window.end] == window.text
    assert agreement_window(merged, members, 100).text == merged[0].text  # budget above the span: all of it


def test_word_budget_is_shared_by_one_over_rank():
    other = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma"

    def cluster(point_id, source, text):
        return Cluster([candidate(point_id, retrievers=("r1", "r2"), source=source, start=0, end=len(text), text=text)])

    ranked = [ScoredCluster(cluster(f"c{i}", f"s{i}.txt", other), 1 - i / 10) for i in range(3)]
    clusters = build_context(ranked, limit=3, word_budget=22)
    words = [len(c.passages[0].text.split()) for c in clusters]
    assert words == [12, 6, 4]  # 22 * (1, 1/2, 1/3) / (11/6)
    assert all(len(c.passages) == 1 for c in clusters)
    short = [ScoredCluster(cluster("s", "short.txt", "just three words"), 0.9), *ranked[1:]]
    assert [len(c.passages[0].text.split()) for c in build_context(short, limit=3, word_budget=22)] == [3, 11, 8]


def test_a_cluster_over_near_duplicate_documents_shows_each_document_a_retriever_ranked_best():
    # two files written from one template, another value in each: dense ranks the first file's
    # chunk best and BM25 the second's; a third file's chunk joined the cluster but no retriever
    # ranked it best
    template = "The {} review in Krakow is announced with the code word {}. It applies to every team."

    def member(name, ranks, text):
        return Candidate("c", hit(name, source=f"{name}.md", end=len(text), text=text), ranks=ranks, rrf=0.1)

    first = member("policy-7", {"dense": 1, "bm25": 2}, template.format("server", "fjord27"))
    second = member("policy-2", {"dense": 4, "bm25": 1}, template.format("budget", "amber112"))
    unvoted = member("policy-9", {"dense": 3, "bm25": 3}, template.format("payroll", "garnet57"))
    ranked = [ScoredCluster(Cluster([first, unvoted, second]), 1.0)]
    passages = build_context(ranked, limit=1, word_budget=20)[0].passages
    assert [(p.citation, p.source) for p in passages] == [(1, "policy-7.md"), (2, "policy-2.md")]
    # the cluster's 20 words split between the two, each window widened to its whole sentence
    assert passages[1].text == "The budget review in Krakow is announced with the code word amber112."
    alone = [ScoredCluster(Cluster([first, unvoted]), 1.0)]
    assert [p.source for p in build_context(alone, limit=1, word_budget=30)[0].passages] == ["policy-7.md"]
    # an earlier cluster sent the voted documents: the cluster sends the text it has left, never nothing
    sent = {"policy-7.md": [(0, 200)], "policy-2.md": [(0, 200)]}
    rest = build_context(ranked, limit=1, word_budget=20, sent=sent)[0].passages
    assert [p.source for p in rest] == ["policy-9.md"] and "garnet57" in rest[0].text


PROSE = (
    "The river rises in the hills. It flows east for 320 kilometres past three towns. "
    "The largest town is Newcastle, founded in 1804. Its port ships coal."
)


def test_a_window_widens_to_whole_sentences_within_its_slack():
    # "past three towns. The largest": cut mid-sentence on both sides, 6 words from either boundary
    start, end = PROSE.index("past"), PROSE.index("largest") + len("largest")
    new_start, new_end = to_sentences(PROSE, start, end, words=30)  # slack: 6 words a side
    assert PROSE[new_start:new_end] == (
        "It flows east for 320 kilometres past three towns. The largest town is Newcastle, founded in 1804."
    )
    # boundaries further than the slack (5 words) leave the word cut as it was
    assert to_sentences(PROSE, start, end, words=25) == (start, end)


def test_text_with_no_sentence_boundary_keeps_its_word_window():
    text = " ".join(f"w{i}" for i in range(100))
    start, end = text.index("w40"), text.index("w59") + 3
    assert to_sentences(text, start, end, words=20) == (start, end)
    assert to_sentences("word", 0, 4, words=1) == (0, 4)  # a one-word text


def test_the_agreement_window_is_cut_at_sentence_boundaries():
    start, end = PROSE.index("for 320"), PROSE.index("largest town") + len("largest town")
    members = [
        candidate("a", source="p.txt", start=0, end=len(PROSE), text=PROSE, rrf=0.01),
        candidate("b", source="p.txt", start=start, end=end, text=PROSE[start:end], rrf=0.05),
    ]
    window = agreement_window(merge_spans(candidate_span(m) for m in members), members, 9)
    # b's 9 words, widened by 3 words back and 5 forward to whole sentences
    assert window.text == (
        "It flows east for 320 kilometres past three towns. The largest town is Newcastle, founded in 1804."
    )
    assert PROSE[window.start : window.end] == window.text


def ranked_scores(*scores):
    return [
        ScoredCluster(Cluster([candidate(f"c{i}", source=f"s{i}.txt", start=0, end=5, text="hello")]), score)
        for i, score in enumerate(scores)
    ]


def test_adaptive_plan_sends_a_clear_leader_alone_and_widens_when_evidence_is_spread():
    assert adaptive_plan(ranked_scores(1.2), 0.2, 3) == (1, "adaptive: one cluster reached quorum")
    assert adaptive_plan(ranked_scores(1.2, 0.9, 0.8), 0.2, 3) == (1, "adaptive: top cluster margin 0.30")
    keep, reason = adaptive_plan(ranked_scores(1.2, 1.1, 1.05, 0.7), 0.2, 3)
    assert keep == 3 and reason == "adaptive: evidence spread, 3 clusters within 0.2 of the top (margin 0.10)"
    assert adaptive_plan(ranked_scores(1.2, 1.1, 1.05, 1.04), 0.2, 2)[0] == 2  # at most adaptive_clusters


def test_sentence_widening_counts_words_as_split_does_on_random_prose():
    """The widening's word counts come from word bounds; they must be what ``str.split`` counts."""
    import random
    import re

    def reference(text, start, end, words):
        slack = max(5, round(words * 0.2))
        starts = [0, *sentence_starts(text), len(text)]
        before = [b for b in starts if b <= start and len(text[b:start].split()) <= slack]
        after = [b for b in starts if b >= end and len(text[end:b].split()) <= slack]
        new_end = len(text[: min(after)].rstrip()) if after else end
        return (max(before) if before else start), max(new_end, end)

    rng = random.Random(1)
    vocabulary = ["alpha", "beta.", "gamma!", "delta?", "(eps)", '"zeta."', "eta", "theta.'", "  ", "\n"]
    for _ in range(1500):
        text = " ".join(rng.choice(vocabulary) for _ in range(rng.randint(1, 60)))
        words = list(re.finditer(r"\S+", text))
        if not words:
            continue
        first = rng.randrange(len(words))
        last = rng.randrange(first, len(words))
        start, end, width = words[first].start(), words[last].end(), rng.randint(1, 40)
        assert to_sentences(text, start, end, width) == reference(text, start, end, width), (text, start, end)
