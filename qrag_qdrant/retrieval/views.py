"""What the namespace holds, as a caller reading as an ``Access`` sees it: its points per
collection and term counts, less the documents it may not read (the gate's features, the key
terms and the words "no document holds" read these), and the publishers a question may name.
Counted once per set of groups until the index changes (``forget``)."""

from __future__ import annotations

import threading
from dataclasses import replace

from ..config.settings import Settings
from ..store import Store, Where
from ..store.access import Access
from ..text.term_stats import TermStats
from .search import Scope, Searcher


class NamespaceViews:
    """The namespace's counts and publishers per caller's groups, cached."""

    def __init__(self, settings: Settings, store: Store, searcher: Searcher):
        self.settings, self.store, self.searcher = settings, store, searcher
        self._term_stats: TermStats | None = None
        #: what a caller who may not read every document counts: its points per collection and the
        #: finest chunking's term counts, less the documents it may not read (by ``Access.key``)
        self._views: dict[tuple[str, ...], tuple[dict[str, int], TermStats]] = {}
        #: (field, ``Access.key`` or None for everyone's) -> the values of a metadata field
        self._values: dict[tuple[str, tuple[str, ...] | None], frozenset[str]] = {}
        self._views_lock = threading.Lock()

    def forget(self) -> None:
        """After an ingest: count again."""
        self._term_stats = None
        with self._views_lock:
            self._views.clear()
            self._values.clear()

    @property
    def finest(self) -> str:
        """The collection with the most chunks: its term counts are the gate's, and it keeps the
        namespace's calibrated gate."""
        points = self.searcher.points
        return max(points, key=points.__getitem__)

    @property
    def term_stats(self) -> TermStats:
        """The document frequencies of the finest chunking, for the gate, less the excluded
        sources' (``retrieval.exclude_sources``). A collection written before they were kept, or
        by a store that keeps none, has them counted here from its texts, in memory."""
        if self._term_stats is None:
            name = self.finest
            self._term_stats = self.store.term_stats(
                name, self.searcher.points[name], self.settings.retrieval.exclude_sources
            )
        return self._term_stats

    def counts_for(self, access: Access) -> tuple[dict[str, int], TermStats]:
        """The points per collection and the finest chunking's term counts a caller reading as
        ``access`` sees: the documents it may not read leave no trace in the gate's features, the
        key terms or the words "no document holds" (docs/teams.md). Counted once per set of
        groups until the index changes."""
        if access.groups is None or (key := access.key) is None:
            return self.searcher.points, self.term_stats
        with self._views_lock:
            view = self._views.get(key)
        if view is None:
            name, where = self.finest, Where(readers=access.groups)
            points = {collection: self.store.count(collection, where) for collection in self.searcher.points}
            stats = self.store.term_stats(
                name, self.searcher.points[name], self.settings.retrieval.exclude_sources, access.groups
            )
            view = (points, stats)
            with self._views_lock:
                self._views[key] = view
        return view

    def publishers_for(self, access: Access) -> frozenset[str]:
        """The publishers of the documents a caller reading as ``access`` may read: the names a
        question can search by (``parts.plan_question``); a publisher of documents it may not
        read is an outlet the namespace does not hold, to it. Read once until the index changes."""
        return self.values_for(access, "publisher")

    def values_for(self, access: Access, field: str) -> frozenset[str]:
        """The values of a metadata ``field`` (publisher, author) of the documents ``access`` may read."""
        key = (field, None if access.groups is None else access.key)
        with self._views_lock:
            known = self._values.get(key)
        if known is None:
            where = Where(first_chunks=True, readers=access.groups)
            payloads = self.store.scroll_payloads(self.finest, [field], where)
            known = frozenset(value for p in payloads if (value := p.get(field)))
            with self._views_lock:
                self._values[key] = known
        return known

    def as_stored(self, scope: Scope) -> Scope:
        """``scope`` with its filter's publishers and authors as the documents spell them: a
        filter for "techcrunch" finds TechCrunch's documents, as a user expects of a name."""
        documents = scope.documents
        if documents is None:
            return scope
        update: dict[str, tuple[str, ...]] = {}
        for field in ("publisher", "author"):
            if asked := getattr(documents, field):
                folded = {value.casefold() for value in asked}
                stored = {value for value in self.values_for(scope.access, field) if value.casefold() in folded}
                update[field] = tuple(sorted(set(asked) | stored))
        return replace(scope, documents=documents.model_copy(update=update)) if update else scope
