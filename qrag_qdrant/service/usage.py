"""Usage per namespace and key, per UTC day, and the quotas that cap it.

Counted: queries, answers, prompt and completion tokens, ingested bytes and chunks. The counts
live in SQLite beside the key file (``service.usage_db``), written as they happen, so a restart
loses nothing; ``qrag-qdrant usage`` and ``/metrics`` read them.

A quota (``[service.quotas.<namespace>]``, or ``"key:<id>"`` for one key) caps a count per day or
per month. Taking from a quota is one transaction that checks and counts together, under one
lock, so fifty requests at once cannot pass a quota of ten. Over a quota, the request is a 429
``quota_exceeded`` whose ``Retry-After`` is the end of the quota's day or month (UTC); with
``service.quota_fallback = "evidence"``, a question over its answer quota gets the evidence
without an answer instead.
"""

from __future__ import annotations

import math
import sqlite3
import threading
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from ..config.service import Quota
from .errors import ServiceError

COUNTS = ("queries", "answers", "prompt_tokens", "completion_tokens", "ingest_bytes", "ingest_chunks")
#: a quota's field -> (the count it caps, its period)
LIMITS = {
    "queries_per_day": (("queries",), "day"),
    "answers_per_day": (("answers",), "day"),
    "tokens_per_day": (("prompt_tokens", "completion_tokens"), "day"),
    "tokens_per_month": (("prompt_tokens", "completion_tokens"), "month"),
    "ingest_bytes_per_day": (("ingest_bytes",), "day"),
}
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS usage (
    day TEXT NOT NULL, namespace TEXT NOT NULL, key TEXT NOT NULL,
    {", ".join(f"{name} INTEGER NOT NULL DEFAULT 0" for name in COUNTS)},
    PRIMARY KEY (day, namespace, key)
)
"""


class QuotaExceeded(ServiceError):
    def __init__(self, field: str, scope: str, limit: int, retry_after: int):
        super().__init__(
            429,
            "quota_exceeded",
            f"{scope} has used its {field} ({limit}): it resets in {retry_after} s (service.quotas)",
            headers={"Retry-After": str(retry_after)},
        )


def period_start(day: date, period: str) -> date:
    return day.replace(day=1) if period == "month" else day


def seconds_to_reset(now: datetime, period: str) -> int:
    """Seconds until the quota's day (or month) ends, UTC."""
    if period == "month":
        end = (now.replace(day=1) + timedelta(days=32)).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    else:
        end = (now + timedelta(days=1)).replace(hour=0, minute=0, second=0, microsecond=0)
    return max(1, math.ceil((end - now).total_seconds()))


class UsageLedger:
    """The counts, and the quotas that cap them."""

    def __init__(self, path: Path, quotas: dict[str, Quota]):
        self.quotas = quotas
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(SCHEMA)
        self._lock = threading.Lock()

    def take(self, namespace: str, key: str, counts: dict[str, int], now: datetime | None = None) -> None:
        """Counts ``counts`` for the key, first checking every quota they fall under: over one,
        QuotaExceeded and nothing counted."""
        now = now or datetime.now(UTC)
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for scope, quota in (("namespace", namespace), ("key", f"key:{key}")):
                    limits = self.quotas.get(quota)
                    if limits is not None:
                        self._check(scope, quota.removeprefix("key:"), limits, counts, now)
                self._add(now.date(), namespace, key, counts)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def add(self, namespace: str, key: str, counts: dict[str, int], now: datetime | None = None) -> None:
        """Counts what was used already (an answer's tokens): no quota is checked."""
        with self._lock:
            self._add((now or datetime.now(UTC)).date(), namespace, key, counts)

    def _add(self, day: date, namespace: str, key: str, counts: dict[str, int]) -> None:
        names = [name for name in counts if name in COUNTS]
        if not names:
            return
        sets = ", ".join(f"{name} = {name} + excluded.{name}" for name in names)
        marks = ", ".join("?" * len(names))
        self._db.execute(
            f"INSERT INTO usage (day, namespace, key, {', '.join(names)}) VALUES (?, ?, ?, {marks})"
            f" ON CONFLICT (day, namespace, key) DO UPDATE SET {sets}",
            [day.isoformat(), namespace, key, *(counts[name] for name in names)],
        )

    def _check(self, scope: str, who: str, limits: Quota, counts: dict[str, int], now: datetime) -> None:
        for field, (columns, period) in LIMITS.items():
            limit = getattr(limits, field)
            tokens = field.startswith("tokens")
            # an answer's tokens are known only once it is written: a token quota refuses the next
            # answer once it is spent; every other quota refuses what would take it past its limit
            asked = 0 if tokens else sum(counts.get(column, 0) for column in columns)
            if limit is None or (not counts.get("answers") if tokens else not asked):
                continue
            used = self.used(scope, who, columns, period_start(now.date(), period))
            if used + asked > limit or (tokens and used >= limit):
                label = f"namespace {who!r}" if scope == "namespace" else f"key {who}"
                raise QuotaExceeded(field, label, limit, seconds_to_reset(now, period))

    def left(
        self, namespace: str, key: str, count: str, now: datetime | None = None
    ) -> tuple[int, QuotaExceeded] | None:
        """How much of ``count`` the tightest quota over it still allows today (or this month), and
        the refusal to raise past it; None when no quota caps it. Read before a large request is
        read at all (an upload), so it is refused before its bytes arrive, not after."""
        now = now or datetime.now(UTC)
        tightest: tuple[int, QuotaExceeded] | None = None
        for scope, quota in (("namespace", namespace), ("key", f"key:{key}")):
            limits = self.quotas.get(quota)
            for field, (columns, period) in LIMITS.items():
                limit = getattr(limits, field) if limits is not None else None
                if limit is None or columns != (count,):
                    continue
                who = quota.removeprefix("key:")
                with self._lock:
                    remaining = limit - self.used(scope, who, columns, period_start(now.date(), period))
                if tightest is None or remaining < tightest[0]:
                    label = f"namespace {who!r}" if scope == "namespace" else f"key {who}"
                    tightest = (remaining, QuotaExceeded(field, label, limit, seconds_to_reset(now, period)))
        return tightest

    def used(self, scope: str, who: str, columns: tuple[str, ...], since: date) -> int:
        row = self._db.execute(
            f"SELECT COALESCE(SUM({' + '.join(columns)}), 0) FROM usage WHERE {scope} = ? AND day >= ?",
            [who, since.isoformat()],
        ).fetchone()
        return int(row[0])

    def report(
        self, since: date | None = None, until: date | None = None, by_key: bool = False
    ) -> list[dict[str, Any]]:
        """Totals per namespace (and key) and day, oldest first."""
        group = "day, namespace" + (", key" if by_key else "")
        rows = self._db.execute(
            f"SELECT {group}, {', '.join(f'SUM({c})' for c in COUNTS)} FROM usage"
            " WHERE day >= ? AND day < ? GROUP BY " + group + " ORDER BY " + group,
            [(since or date.min).isoformat(), (until or date.max).isoformat()],
        ).fetchall()
        names = group.split(", ")
        return [dict(zip([*names, *COUNTS], row)) for row in rows]

    def close(self) -> None:
        self._db.close()
