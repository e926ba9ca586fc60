"""Greedy clustering of candidates into pieces of evidence.

Two candidates are the same evidence when the cosine of their stored dense vectors is at
least the threshold, or when they come from the same source and their character spans
overlap (a 50-word chunk inside a 200-word chunk). All pair links come from one
similarity matrix; only the greedy assignment, over at most a few dozen candidates,
is a loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .fusion import QUESTION, Candidate


@dataclass
class Cluster:
    members: list[Candidate] = field(default_factory=list)

    @property
    def leader(self) -> Candidate:
        return self.members[0]

    @property
    def best_ranks(self) -> dict[str, int]:
        """Each supporting retriever's best rank for any member, in first-seen order."""
        ranks: dict[str, int] = {}
        for member in self.members:
            for name, rank in member.ranks.items():
                ranks[name] = min(rank, ranks.get(name, rank))
        return ranks

    @property
    def retrievers(self) -> list[str]:
        """Distinct retrievers behind any member, in first-seen order."""
        return list(self.best_ranks)

    @property
    def support(self) -> int:
        return len(self.best_ranks)

    @property
    def expansions(self) -> list[str]:
        """The question's expansions whose searches found any member, first-seen order."""
        return list(dict.fromkeys(query for member in self.members for query in member.queries if query != QUESTION))


def link_matrix(candidates: Sequence[Candidate], threshold: float) -> np.ndarray:
    """``links[i, j]``: candidates i and j are the same evidence (vector or span)."""
    vectors = np.stack([c.vector for c in candidates])
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1, norms)
    similar = unit @ unit.T >= threshold
    _, source_ids = np.unique([c.source for c in candidates], return_inverse=True)
    spans = np.array([c.span for c in candidates])
    starts, ends = spans[:, 0], spans[:, 1]
    overlapping = (starts[:, None] < ends[None, :]) & (starts[None, :] < ends[:, None])
    same: np.ndarray = similar | ((source_ids[:, None] == source_ids[None, :]) & overlapping)
    return same


def greedy_clusters(candidates: Sequence[Candidate], threshold: float) -> list[Cluster]:
    """Leader clustering in the given (fused) order.

    Each candidate joins the first cluster whose leader it is linked to, or leads a new
    one. Comparing with leaders only, not every member, stops overlapping windows from
    chaining a whole document into one cluster.
    """
    if not candidates:
        return []
    links = link_matrix(candidates, threshold).tolist()  # Python lists: the loop reads single entries
    clusters: list[Cluster] = []
    leaders: list[int] = []
    for index, candidate in enumerate(candidates):
        linked = links[index]
        joined = next((number for number, leader in enumerate(leaders) if linked[leader]), None)
        if joined is not None:
            clusters[joined].members.append(candidate)
        else:
            clusters.append(Cluster([candidate]))
            leaders.append(index)
    return clusters
