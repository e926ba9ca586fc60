"""Retrieval: every retriever searches, RRF fuses, clusters form, the quorum decides.

Stages, each its own module: conversation (a follow-up made stand-alone from the earlier
turns, before anything is searched), expansion (optional texts the model writes from the question,
searched beside it), fusion (RRF), clustering (cosine of stored vectors or overlapping
spans), quorum (support >= N distinct retrievers), ranking, context (numbered passages) and
the gate (answer, or abstain on evidence too weak to answer from). ``pipeline`` assembles
them once: ``Coordinator.retrieve`` = embed -> search -> ``evidence_from``.
"""

from .pipeline import Coordinator
from .search import QueryVectors, Searcher

__all__ = ["Coordinator", "QueryVectors", "Searcher"]
