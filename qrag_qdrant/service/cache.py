"""The result cache (from ARF): an exact repeat of a question in the same namespace reuses its
evidence, and its answer, until that namespace's index changes.

Every ingest that writes stamps its collections' manifests (``indexed``); an entry remembers
the stamps it was made under and is dropped when they differ, so a change made by any process,
on the embedded store or a server, invalidates it. A semantic cache (near-duplicate questions)
is not built: no paraphrase set here can show the 97% precision it would need.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from threading import Lock
from typing import Generic, TypeVar

Result = TypeVar("Result")


def normalise(question: str) -> str:
    """The same question: case and spacing do not matter."""
    return " ".join(question.lower().split())


@dataclass
class CacheCounters:
    hits: int = 0
    misses: int = 0
    stale: int = 0


class ResultCache(Generic[Result]):
    """Least-recently-used entries, each valid while its index stamp is current."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        self.counters = CacheCounters()
        self._entries: OrderedDict[Hashable, tuple[Hashable, Result]] = OrderedDict()
        self._lock = Lock()

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0

    def get(self, key: Hashable, stamp: Hashable) -> Result | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0] == stamp:
                self._entries.move_to_end(key)
                self.counters.hits += 1
                return entry[1]
            if entry is not None:
                del self._entries[key]
                self.counters.stale += 1
            self.counters.misses += 1
            return None

    def put(self, key: Hashable, stamp: Hashable, result: Result) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._entries[key] = (stamp, result)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
