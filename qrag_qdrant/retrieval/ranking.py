"""Ranking the clusters that reached quorum, and the path to them from the ranked lists: fusion,
clustering, quorum, ranking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..config.retrieval import RetrievalSettings
from ..results import timed
from .clustering import Cluster, greedy_clusters
from .fusion import RankedList, reciprocal_rank_fusion
from .quorum import apply_quorum


@dataclass(frozen=True)
class ScoredCluster:
    cluster: Cluster
    score: float


def rank_clusters(
    clusters: Sequence[Cluster], retrievers: int, rrf_k: int, weight_rrf: float, weight_support: float
) -> list[ScoredCluster]:
    """Score = weight_rrf * normalised average RRF + weight_support * support / retrievers.

    Average RRF is taken over the cluster's supporting retrievers: each adds
    ``1 / (rrf_k + rank)`` for its best-ranked member (ranks from 1), and the mean is
    divided by ``1 / (rrf_k + 1)``, a first place. It lies in (0, 1] on a fixed scale
    that does not depend on the query's other clusters. A mean over member chunks
    instead would punish a cluster for holding more nested chunks of the same
    evidence, which is exactly the agreement the quorum rewards.
    """
    scored = [
        ScoredCluster(c, weight_rrf * mean_reciprocal_rank(c, rrf_k) + weight_support * c.support / retrievers)
        for c in clusters
    ]
    return sorted(scored, key=lambda s: s.score, reverse=True)


def mean_reciprocal_rank(cluster: Cluster, rrf_k: int) -> float:
    """Mean over supporting retrievers of ``(rrf_k + 1) / (rrf_k + best rank)``, in (0, 1]."""
    ranks = cluster.best_ranks.values()
    return sum((rrf_k + 1) / (rrf_k + rank) for rank in ranks) / len(ranks)


def fused_and_ranked(
    lists: Sequence[RankedList], options: RetrievalSettings, retrievers: int, timings: dict[str, float]
) -> tuple[list[ScoredCluster], int]:
    """Fusion, clustering, quorum and ranking: the clusters that reached quorum, best first, and
    how many clusters the candidates formed (the gate's measure of what a small corpus can hold)."""
    with timed(timings, "fusion"):
        candidates = reciprocal_rank_fusion(lists, options.rrf_k)
    with timed(timings, "clustering"):
        clusters = greedy_clusters(candidates, options.cluster_threshold)
    with timed(timings, "quorum_ranking"):
        ranked = rank_clusters(
            apply_quorum(clusters, options.quorum),
            retrievers,
            options.rrf_k,
            options.weight_rrf,
            options.weight_support,
        )
    return ranked, len(clusters)
