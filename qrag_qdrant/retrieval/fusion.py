"""Reciprocal Rank Fusion over the retrievers' ranked lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..store import Hit

#: the label of the lists the question itself found, beside ``multi_query 1``, ``hyde``, ...
QUESTION = "question"


@dataclass(frozen=True)
class RankedList:
    """One retriever's hits, best first, from one collection, for the question or one of its
    expansions (``query``: ``question``, ``multi_query 2``, ``hyde``)."""

    retriever: str
    collection: str
    hits: Sequence[Hit]
    query: str = QUESTION


@dataclass
class Candidate:
    """A chunk found by one or more retrievers; the same point found twice is one candidate."""

    collection: str
    hit: Hit
    #: each retriever's best rank for this chunk, over the question and its expansions
    ranks: dict[str, int] = field(default_factory=dict)
    rrf: float = 0.0
    #: the queries whose lists hold this chunk, first-seen order
    queries: list[str] = field(default_factory=list)

    @property
    def vector(self) -> np.ndarray:
        return self.hit.dense

    @property
    def source(self) -> str:
        return self.hit.payload.source

    @property
    def span(self) -> tuple[int, int]:
        return self.hit.payload.start, self.hit.payload.end


def reciprocal_rank_fusion(lists: Sequence[RankedList], k: int) -> list[Candidate]:
    """Score each candidate by the sum over ranked lists of ``1 / (k + rank)``.

    Ranks are counted from 1: a retriever's best hit adds ``1 / (k + 1)``. (Some peers
    count from 0, which gives ``1 / k`` and a different scale.) A retriever's lists for the
    question's expansions add their own terms (multi-query RRF), while ``ranks`` keeps one
    entry per retriever, its best: support counts retrievers, not lists. Best candidate
    first; ties keep first-seen order.
    """
    candidates: dict[tuple[str, str], Candidate] = {}
    counted: set[tuple[str, str, str, str]] = set()
    for ranked in lists:
        for rank, hit in enumerate(ranked.hits, start=1):
            candidate = candidates.setdefault((ranked.collection, hit.id), Candidate(ranked.collection, hit))
            key = (ranked.collection, hit.id, ranked.retriever, ranked.query)
            if key in counted:
                continue
            counted.add(key)
            candidate.rrf += 1.0 / (k + rank)
            candidate.ranks[ranked.retriever] = min(rank, candidate.ranks.get(ranked.retriever, rank))
            if ranked.query not in candidate.queries:
                candidate.queries.append(ranked.query)
    return sorted(candidates.values(), key=lambda c: c.rrf, reverse=True)
