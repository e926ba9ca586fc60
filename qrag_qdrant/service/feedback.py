"""Thumbs up or down on an answer the service gave, kept per namespace for the evidence gate.

Rows are appended to ``feedback-<namespace>.jsonl`` in the store's folder (``store``): beside
the index for the embedded store, and the service's own state folder when the index lives on a
server. An append-only file survives restarts, needs no schema in Qdrant, and is what
``qrag-qdrant feedback export`` turns into the gate's training rows.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..results import Evidence
from ..text.json_lines import json_lines


@dataclass(frozen=True)
class AskedQuery:
    """What feedback on a query needs to become a training row: the gate's view of it."""

    namespace: str
    #: what was searched (a follow-up's stand-alone rewrite): the question the gate's features describe
    question: str
    confidence: float | None
    features: dict[str, float] | None
    #: the top evidence's source: rows are split by it, as training data is split by article
    group: str | None

    @classmethod
    def of(cls, namespace: str, evidence: Evidence) -> AskedQuery:
        top = evidence.clusters[0].passages[0].source if evidence.clusters and evidence.clusters[0].passages else None
        return cls(namespace, evidence.searched, evidence.confidence, evidence.gate_features, top)


class RecentQueries:
    """The last queries answered, by id, so feedback can name one (bounded, in memory)."""

    def __init__(self, max_entries: int = 10_000):
        self.max_entries = max_entries
        self._queries: OrderedDict[str, AskedQuery] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, query_id: str, query: AskedQuery) -> None:
        with self._lock:
            self._queries[query_id] = query
            while len(self._queries) > self.max_entries:
                self._queries.popitem(last=False)

    def get(self, query_id: str) -> AskedQuery | None:
        with self._lock:
            return self._queries.get(query_id)


class FeedbackFile:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._lock = threading.Lock()

    def path(self, namespace: str) -> Path:
        return self.folder / f"feedback-{namespace}.jsonl"

    def add(self, query_id: str, query: AskedQuery, rating: str, comment: str | None) -> None:
        row = {"query_id": query_id, "rating": rating, "comment": comment, "at": time.time(), **asdict(query)}
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self.path(query.namespace).open("a", encoding="utf-8") as file:
                file.write(json.dumps(row) + "\n")
                file.flush()
                os.fsync(file.fileno())  # a thumbs-up acknowledged is a thumbs-up kept

    def rows(self, namespace: str) -> list[dict[str, Any]]:
        path = self.path(namespace)
        if not path.is_file():
            return []
        return [row for _, row in json_lines(path, skip_invalid=True)]  # a line a crash cut short is no rating


def gate_rows(feedback: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Feedback as ``gate train`` rows: up means the evidence held the answer; the last rating of a
    query wins."""
    latest = {row["query_id"]: row for row in feedback}
    return [
        {
            "id": query_id,
            "group": row["group"] or row["question"],
            "category": "feedback",
            "system": "quorum",
            "label": row["rating"] == "up",
            "confidence": row["confidence"],
            "features": row["features"],
        }
        for query_id, row in latest.items()
    ]
