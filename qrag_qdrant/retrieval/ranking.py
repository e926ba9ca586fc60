"""Ranking the clusters that reached quorum, and the path to them from the ranked lists: fusion,
clustering, quorum, ranking."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import groupby

from ..config.retrieval import RetrievalSettings
from ..results import timed
from ..text.terms import question_terms_in, terms
from .clustering import Cluster, greedy_clusters
from .fusion import RankedList, reciprocal_rank_fusion
from .quorum import apply_quorum

#: scores equal to this many decimals tie: the same ranks summed in another order differ in the last bits
TIE_DIGITS = 9


@dataclass(frozen=True)
class ScoredCluster:
    cluster: Cluster
    score: float


def rank_clusters(
    clusters: Sequence[Cluster],
    retrievers: int,
    rrf_k: int,
    weight_rrf: float,
    weight_support: float,
    question: str = "",
) -> list[ScoredCluster]:
    """Score = weight_rrf * normalised average RRF + weight_support * support / retrievers.

    Average RRF is taken over the cluster's supporting retrievers: each adds
    ``1 / (rrf_k + rank)`` for its best-ranked member (ranks from 1), and the mean is
    divided by ``1 / (rrf_k + 1)``, a first place. It lies in (0, 1] on a fixed scale
    that does not depend on the query's other clusters. A mean over member chunks
    instead would punish a cluster for holding more nested chunks of the same
    evidence, which is exactly the agreement the quorum rewards.

    Clusters whose scores tie are ordered by the words of ``question`` they hold
    (``ties_by_words``).
    """
    scored = [
        ScoredCluster(c, weight_rrf * mean_reciprocal_rank(c, rrf_k) + weight_support * c.support / retrievers)
        for c in clusters
    ]
    return ties_by_words(sorted(scored, key=lambda s: s.score, reverse=True), question)


def ties_by_words(ranked: list[ScoredCluster], question: str) -> list[ScoredCluster]:
    """``ranked`` with each run of equal scores ordered by how many of the question's terms its
    clusters' chunks hold, most first (stable otherwise).

    In a namespace of a few files every retriever backs each of the two or three clusters there
    are, and one retriever's first is another's second, so their scores tie exactly and the order
    of the retrievers' lists would decide: "Where is lunch served?" would lead with a ferry
    timetable that says "serve" over the schedule that says "Lunch is served", and the gate, which
    reads the first cluster, would withhold the answer. Only tied clusters are read."""
    asked = terms(question) if question else set()
    if not asked:
        return ranked

    def words_held(scored: ScoredCluster) -> int:
        return len(
            asked
            & set().union(*(question_terms_in(member.hit.payload.text, question) for member in scored.cluster.members))
        )

    ordered: list[ScoredCluster] = []
    for _, run in groupby(ranked, key=lambda scored: round(scored.score, TIE_DIGITS)):
        tied = list(run)
        ordered.extend(sorted(tied, key=words_held, reverse=True) if len(tied) > 1 else tied)
    return ordered


def mean_reciprocal_rank(cluster: Cluster, rrf_k: int) -> float:
    """Mean over supporting retrievers of ``(rrf_k + 1) / (rrf_k + best rank)``, in (0, 1]."""
    ranks = cluster.best_ranks.values()
    return sum((rrf_k + 1) / (rrf_k + rank) for rank in ranks) / len(ranks)


def fused_and_ranked(
    lists: Sequence[RankedList], options: RetrievalSettings, retrievers: int, timings: dict[str, float], question: str
) -> tuple[list[ScoredCluster], int]:
    """Fusion, clustering, quorum and ranking: the clusters that reached quorum, best first (ties
    by the words of ``question`` they hold), and how many clusters the candidates formed (the
    gate's measure of what a small corpus can hold)."""
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
            question,
        )
    return ranked, len(clusters)
