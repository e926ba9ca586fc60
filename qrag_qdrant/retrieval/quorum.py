"""The quorum: evidence counts only when enough independent retrievers found it."""

from __future__ import annotations

from collections.abc import Sequence

from .clustering import Cluster


def apply_quorum(clusters: Sequence[Cluster], quorum: int) -> list[Cluster]:
    """Clusters backed by at least ``quorum`` distinct retrievers, order kept."""
    return [cluster for cluster in clusters if cluster.support >= quorum]
