"""Ranking the clusters that reached quorum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .clustering import Cluster


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
