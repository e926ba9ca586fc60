"""What the built-in stores share as bindings of Qdrant (Qdrant Edge in-process, qdrant-client for a
server): the project's ``Where`` compiled into Qdrant's filter, which both bindings spell the same
way, and Qdrant's own hybrid query, which the ``qdrant-hybrid`` baseline of ``eval`` asks for. A
store plug-in for another engine subclasses ``Store`` and compiles ``Where`` its own way."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Sequence
from types import ModuleType
from typing import Any

from ..errors import ConfigError
from .base import Store
from .points import READERS, Hit, Sparse, Where

#: Qdrant's default k for its RRF fusion; the qdrant-hybrid baseline uses Qdrant as a peer would.
QDRANT_RRF_K = 2


class QdrantStore(Store):
    """A store that is a binding of Qdrant."""

    #: ``qdrant_edge`` or ``qdrant_client.models``: both spell filters the same way.
    models: ModuleType

    @abstractmethod
    def hybrid(self, name: str, dense: Sequence[float], sparse: Sparse, limit: int, prefetch_limit: int) -> list[Hit]:
        """Qdrant's own hybrid query: dense and bm25 prefetches fused by Qdrant's RRF (k=2).
        A baseline, so it fetches what a plain hybrid RAG needs: payloads, no vectors."""

    def filter_of(self, where: Where | None) -> Any:
        """``where`` as a filter of ``self.models`` (Qdrant's, in either binding); None for None."""
        if where is None:
            return None
        m = self.models

        def match(key: str, value: Any) -> Any:
            return m.FieldCondition(key=key, match=m.MatchValue(value=value))

        def any_source(sources: Iterable[str]) -> Any:
            return m.FieldCondition(key="source", match=m.MatchAny(any=list(sources)))

        must = [match("chunk_index", 0)] if where.first_chunks else []
        if where.sources is not None:
            must.append(any_source(where.sources))

        def readable(groups: frozenset[str]) -> Any:  # no readers, or one of the groups
            either = [self.is_empty(READERS)]
            if groups:
                either.append(m.FieldCondition(key=READERS, match=m.MatchAny(any=sorted(groups))))
            return m.Filter(should=either)

        if where.readers is not None:
            must.append(readable(where.readers))
        if (documents := where.documents) is not None:
            for key, values in (("publisher", documents.publisher), ("author", documents.author)):
                if values:
                    must.append(m.FieldCondition(key=key, match=m.MatchAny(any=list(values))))
            if documents.after or documents.before:
                must.append(self.datetime_range("published", documents.after, documents.before))
        must_not = [any_source(where.not_sources)] if where.not_sources else []
        if where.unreadable_by is not None:
            must_not.append(readable(where.unreadable_by))
        stale = [
            m.Filter(must=[match("source", source)], must_not=[match("doc_hash", digest)])
            for source, digest in where.stale
        ]
        return m.Filter(must=must or None, must_not=must_not or None, should=stale or None)

    def is_empty(self, key: str) -> Any:
        """The condition "``key`` is missing, null or an empty list", as ``self.models`` spells it."""
        return self.models.IsEmptyCondition(key=key)

    def datetime_range(self, key: str, after: str | None, before: str | None) -> Any:
        """The condition "``key`` is a time at or after ``after`` and before ``before``"."""
        m = self.models
        return m.FieldCondition(key=key, range=m.RangeDateTime(gte=after, lt=before))


def qdrant_binding(store: Store) -> QdrantStore:
    """``store`` as a binding of Qdrant, for what only Qdrant has (its own hybrid query)."""
    if not isinstance(store, QdrantStore):
        raise ConfigError(f"{type(store).__name__} is not a Qdrant store: Qdrant's own hybrid query needs one")
    return store
