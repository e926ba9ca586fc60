import math

import numpy as np
import pytest

from qrag_qdrant.retrieval.clustering import Cluster, greedy_clusters, link_matrix
from qrag_qdrant.retrieval.fusion import Candidate, RankedList, reciprocal_rank_fusion
from qrag_qdrant.retrieval.quorum import apply_quorum
from qrag_qdrant.retrieval.ranking import mean_reciprocal_rank, rank_clusters

from .coordinator_helpers import candidate, hit


class TestRRF:
    def test_ranks_count_from_one(self):
        fused = reciprocal_rank_fusion([RankedList("dense", "c1", [hit("a"), hit("b")])], k=60)
        assert [c.hit.id for c in fused] == ["a", "b"]
        assert fused[0].rrf == pytest.approx(1 / 61)
        assert fused[1].rrf == pytest.approx(1 / 62)
        assert fused[0].ranks == {"dense": 1}

    def test_sums_over_retrievers_of_the_same_collection(self):
        lists = [RankedList("dense", "c1", [hit("a"), hit("b")]), RankedList("bm25", "c1", [hit("b"), hit("a")])]
        fused = reciprocal_rank_fusion(lists, k=10)
        assert {c.hit.id: c.rrf for c in fused} == pytest.approx({"a": 1 / 11 + 1 / 12, "b": 1 / 12 + 1 / 11})
        assert fused[0].ranks == {"dense": 1, "bm25": 2}

    def test_same_id_in_another_collection_is_another_candidate(self):
        lists = [RankedList("dense-c50", "c50", [hit("a")]), RankedList("dense-c100", "c100", [hit("a")])]
        fused = reciprocal_rank_fusion(lists, k=0)
        assert len(fused) == 2 and all(c.rrf == 1.0 for c in fused)

    def test_best_first_and_empty_lists(self):
        lists = [
            RankedList("r1", "c", [hit("x"), hit("y")]),
            RankedList("r2", "c", [hit("y")]),
            RankedList("r3", "c", []),
        ]
        assert [c.hit.id for c in reciprocal_rank_fusion(lists, k=60)] == ["y", "x"]
        assert reciprocal_rank_fusion([], k=60) == []


class TestClustering:
    def test_cosine_at_or_above_threshold_links(self):
        angle = math.acos(0.85)
        near = (math.cos(angle * 0.99), math.sin(angle * 0.99), 0.0)  # cosine just above 0.85
        far = (math.cos(angle * 1.01), math.sin(angle * 1.01), 0.0)  # just below
        cands = [
            candidate("a", vector=(1, 0, 0), source="s1"),
            candidate("b", vector=near, source="s2"),
            candidate("c", vector=far, source="s3"),
        ]
        links = link_matrix(cands, 0.85)
        assert links[0, 1] and not links[0, 2]
        assert np.array_equal(links, links.T) and links.diagonal().all()

    def test_overlapping_spans_of_one_source_link_whatever_the_vectors(self):
        cands = [
            candidate("big", vector=(1, 0, 0), source="doc.txt", start=0, end=1000),
            candidate("inside", vector=(0, 1, 0), source="doc.txt", start=400, end=600),
            candidate("touching", vector=(0, 0, 1), source="doc.txt", start=1000, end=1200),
            candidate("other-doc", vector=(0, 1, 0.01), source="other.txt", start=400, end=600),
        ]
        links = link_matrix(cands, 0.85)
        assert links[0, 1]  # nested span
        assert not links[0, 2]  # only touching: end == start
        assert not links[0, 3]  # same offsets, other source
        assert links[1, 3]  # but near-identical vectors link across sources

    def test_greedy_joins_the_first_linked_leader(self):
        cands = [
            candidate("a1", vector=(1, 0, 0), source="a"),
            candidate("b1", vector=(0, 1, 0), source="b"),
            candidate("a2", vector=(0.99, 0.05, 0), source="c"),
            candidate("b2", vector=(0.05, 1, 0), source="d"),
        ]
        clusters = greedy_clusters(cands, 0.85)
        assert [[m.hit.id for m in c.members] for c in clusters] == [["a1", "a2"], ["b1", "b2"]]

    def test_members_only_compare_with_the_leader_so_windows_do_not_chain(self):
        # w1 overlaps w2, w2 overlaps w3, but w3 does not overlap the leader w1
        cands = [
            candidate(
                f"w{i}",
                vector=(1, 0, 0) if i == 1 else (0, 1, 0) if i == 2 else (0, 0, 1),
                source="doc",
                start=(i - 1) * 50,
                end=(i - 1) * 50 + 100,
            )
            for i in (1, 2, 3)
        ]
        clusters = greedy_clusters(cands, 0.85)
        assert [[m.hit.id for m in c.members] for c in clusters] == [["w1", "w2"], ["w3"]]

    def test_support_counts_distinct_retrievers(self):
        cluster = Cluster(
            [
                candidate("a", retrievers=("dense-c50", "bm25-c100")),
                candidate("b", retrievers=("dense-c50",)),
                candidate("c", retrievers=("dense-c200",)),
            ]
        )
        assert cluster.retrievers == ["dense-c50", "bm25-c100", "dense-c200"]
        assert cluster.support == 3

    def test_no_candidates(self):
        assert greedy_clusters([], 0.85) == []


def cluster_of(*member_ranks: dict[str, int]) -> Cluster:
    return Cluster([Candidate("c", hit(f"m{i}"), ranks=ranks) for i, ranks in enumerate(member_ranks)])


class TestQuorumAndRanking:
    @pytest.mark.parametrize(("quorum", "kept"), [(1, [1, 2, 3]), (2, [2, 3]), (3, [3]), (4, [])])
    def test_quorum_keeps_clusters_with_enough_support(self, quorum, kept):
        clusters = [cluster_of({f"r{j}": 1 for j in range(support)}) for support in (1, 2, 3)]
        assert [c.support for c in apply_quorum(clusters, quorum)] == kept

    def test_best_rank_per_retriever(self):
        cluster = cluster_of({"a": 5, "b": 2}, {"a": 3}, {"c": 9, "a": 7})
        assert cluster.best_ranks == {"a": 3, "b": 2, "c": 9}
        assert cluster.support == 3

    def test_score_is_weighted_normalised_average_rrf_plus_support(self):
        k, retrievers = 60, 4
        top = cluster_of({f"r{j}": 1 for j in range(4)})  # first for every retriever
        two = cluster_of({"r0": 1}, {"r0": 3, "r1": 2})  # best ranks 1 and 2
        assert mean_reciprocal_rank(top, k) == 1.0
        assert mean_reciprocal_rank(two, k) == pytest.approx((61 / 61 + 61 / 62) / 2)
        scored = rank_clusters([two, top], retrievers, k, 0.7, 0.3)
        assert [s.cluster for s in scored] == [top, two]
        assert scored[0].score == pytest.approx(1.0)
        assert scored[1].score == pytest.approx(0.7 * (1 + 61 / 62) / 2 + 0.3 * 2 / 4)

    def test_more_chunks_of_the_same_evidence_do_not_dilute_the_score(self):
        lean = cluster_of({"r0": 1, "r1": 1})
        padded = cluster_of({"r0": 1, "r1": 1}, {"r0": 12}, {"r1": 15})
        [a], [b] = rank_clusters([lean], 4, 60, 0.7, 0.3), rank_clusters([padded], 4, 60, 0.7, 0.3)
        assert a.score == b.score

    def test_clusters_that_tie_are_ordered_by_the_question_words_they_hold(self):
        """One retriever's first is the other's second: the scores tie, and the cluster that says
        "lunch" as well as "served" leads, whichever retriever listed the other first."""
        ferries = Cluster(
            [Candidate("c", hit("f", text="The first captain to serve on the ferry."), ranks={"r0": 1, "r1": 2})]
        )
        lunch = Cluster([Candidate("c", hit("l", text="Lunch is served in the foyer."), ranks={"r0": 2, "r1": 1})])
        scored = rank_clusters([ferries, lunch], 2, 60, 0.7, 0.3, "Where is lunch served?")
        assert scored[0].score == pytest.approx(scored[1].score)
        assert [s.cluster for s in scored] == [lunch, ferries]
        assert [s.cluster for s in rank_clusters([ferries, lunch], 2, 60, 0.7, 0.3)] == [ferries, lunch]
        ahead = Cluster([Candidate("c", hit("a", text="A ferry."), ranks={"r0": 1, "r1": 1})])
        assert rank_clusters([lunch, ahead], 2, 60, 0.7, 0.3, "Where is lunch served?")[0].cluster is ahead

    def test_support_weight_alone_orders_by_support(self):
        low, high = cluster_of({"r0": 1, "r1": 1}), cluster_of({"r0": 15, "r1": 15, "r2": 15})
        assert [s.cluster for s in rank_clusters([low, high], 4, 60, 0.0, 1.0)] == [high, low]
        assert [s.cluster for s in rank_clusters([low, high], 4, 60, 1.0, 0.0)] == [low, high]
