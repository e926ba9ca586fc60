"""Reciprocal Rank Fusion over the retrievers' ranked lists."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..store import Hit


@dataclass(frozen=True)
class RankedList:
    """One retriever's hits, best first, from one collection."""

    retriever: str
    collection: str
    hits: Sequence[Hit]


@dataclass
class Candidate:
    """A chunk found by one or more retrievers; the same point found twice is one candidate."""

    collection: str
    hit: Hit
    ranks: dict[str, int] = field(default_factory=dict)
    rrf: float = 0.0

    @property
    def vector(self) -> np.ndarray:
        return self.hit.dense

    @property
    def source(self) -> str:
        return str(self.hit.payload["source"])

    @property
    def span(self) -> tuple[int, int]:
        return int(self.hit.payload["start"]), int(self.hit.payload["end"])


def reciprocal_rank_fusion(lists: Sequence[RankedList], k: int) -> list[Candidate]:
    """Score each candidate by the sum over retrievers of ``1 / (k + rank)``.

    Ranks are counted from 1: a retriever's best hit adds ``1 / (k + 1)``. (Some peers
    count from 0, which gives ``1 / k`` and a different scale.) Best candidate first;
    ties keep first-seen order.
    """
    candidates: dict[tuple[str, str], Candidate] = {}
    for ranked in lists:
        for rank, hit in enumerate(ranked.hits, start=1):
            candidate = candidates.setdefault((ranked.collection, hit.id), Candidate(ranked.collection, hit))
            if ranked.retriever not in candidate.ranks:
                candidate.ranks[ranked.retriever] = rank
                candidate.rrf += 1.0 / (k + rank)
    return sorted(candidates.values(), key=lambda c: c.rrf, reverse=True)
