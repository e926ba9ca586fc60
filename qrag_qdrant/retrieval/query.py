"""One question on its way down the pipeline (``Query``), and what its search found (``Searched``):
the values every step reads, passed as one rather than as the same arguments to every step."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..config.retrieval import RetrievalSettings
from ..results import QueryExpansion
from .fusion import RankedList
from .search import EVERYTHING, QueryVectors, Scope

if TYPE_CHECKING:
    from .conversation import Asked
    from .ranking import ScoredCluster


@dataclass
class Query:
    """A checked question, the documents it may find, the options it is searched with, and what
    each stage records of it."""

    #: the checked question, as it is searched
    question: str
    options: RetrievalSettings
    #: the documents its searches may find
    scope: Scope = EVERYTHING
    #: each stage's milliseconds, filled as the query goes
    timings: dict[str, float] = field(default_factory=dict)
    #: sees every cluster that reached quorum, best first (eval's document ranking)
    on_ranked: Callable[[list[ScoredCluster]], None] | None = None
    #: the conversation's step, when the question is a follow-up's stand-alone rewrite
    asked: Asked | None = None

    def within(self, **changes: Any) -> Query:
        """A search this query makes of its own (a part of the question, the whole question beside
        its parts, a follow-up's second reading): ``changes`` applied, with timings of its own and
        no ranking hook or conversation step unless given."""
        return replace(self, **{"timings": {}, "on_ranked": None, "asked": None, **changes})


@dataclass(frozen=True)
class Searched:
    """A question's search: its vectors and every retriever's ranked list, and its expansions'
    lists with how they were written (none unless ``retrieval.expansions`` asks for them)."""

    vectors: QueryVectors
    lists: list[RankedList]
    expanded: Sequence[RankedList] = ()
    expansions: Sequence[QueryExpansion] = ()
