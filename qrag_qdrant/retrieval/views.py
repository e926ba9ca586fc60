"""What the namespace holds, as a caller reading as an ``Access`` sees it: its points per
collection and term counts, less the documents it may not read (the gate's features, the key
terms and the words "no document holds" read these), and the publishers a question may name.
Counted once per set of groups until the index changes (``forget``)."""

from __future__ import annotations

import threading

from ..config.settings import Settings
from ..store import Store, Where
from ..store.access import Access
from ..text.term_stats import TermStats
from .search import Searcher


class NamespaceViews:
    """The namespace's counts and publishers per caller's groups, cached."""

    def __init__(self, settings: Settings, store: Store, searcher: Searcher):
        self.settings, self.store, self.searcher = settings, store, searcher
        self._term_stats: TermStats | None = None
        #: what a caller who may not read every document counts: its points per collection and the
        #: finest chunking's term counts, less the documents it may not read (by ``Access.key``)
        self._views: dict[tuple[str, ...], tuple[dict[str, int], TermStats]] = {}
        #: the publishers of the documents a caller may read (by ``Access.key``; None: everyone's)
        self._publishers: dict[tuple[str, ...] | None, frozenset[str]] = {}
        self._views_lock = threading.Lock()

    def forget(self) -> None:
        """After an ingest: count again."""
        self._term_stats = None
        with self._views_lock:
            self._views.clear()
            self._publishers.clear()

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
        key = None if access.groups is None else access.key
        with self._views_lock:
            known = self._publishers.get(key)
        if known is None:
            where = Where(first_chunks=True, readers=access.groups)
            payloads = self.store.scroll_payloads(self.finest, ["publisher"], where)
            known = frozenset(name for p in payloads if (name := p.get("publisher")))
            with self._views_lock:
                self._publishers[key] = known
        return known
