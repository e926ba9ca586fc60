"""Ranking the clusters that reached quorum."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .clustering import Cluster


@dataclass(frozen=True)
class ScoredCluster:
    cluster: Cluster
    score: float


def rank_clusters(clusters: Sequence[Cluster], retrievers: int, rrf_k: int, weight_rrf: float,
                  weight_support: float) -> list[ScoredCluster]:
    """Score = weight_rrf * normalised mean RRF + weight_support * support / retrievers.

    The mean RRF of the members is divided by the largest RRF any candidate can get,
    ``retrievers / (rrf_k + 1)`` (ranked first by every retriever), so it lies in [0, 1]
    on a fixed scale that does not depend on the other clusters of the query.
    """
    best_rrf = retrievers / (rrf_k + 1)
    scored = [
        ScoredCluster(c, weight_rrf * c.mean_rrf / best_rrf + weight_support * c.support / retrievers)
        for c in clusters
    ]
    return sorted(scored, key=lambda s: s.score, reverse=True)
