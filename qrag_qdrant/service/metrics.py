"""What the service did, for ``/metrics``, through ``prometheus_client``: latency histograms of
retrieval, the wait for the model, the time to the first token and the whole generation; answers
and tokens per model; refusals by reason; the model's queue; the result cache; the process.

Labels are the service's own (a model, a server, a refusal's code), never a namespace: no figure
here tells one team of another's use, and the label sets stay as small as the backends configured.
Only ``service.metrics_per_namespace`` adds today's usage per namespace, which names the teams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..generation.scheduler import QueueStats
from ..ingest.sources import SyncResult
from ..results import Answer
from .cache import CacheCounters
from .usage import COUNTS, UsageLedger

__all__ = ["CONTENT_TYPE_LATEST", "ServiceMetrics"]

#: seconds: a warm retrieval takes milliseconds, a CLI-sized cold one a second
RETRIEVAL_BUCKETS = (0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
#: seconds: an answer on a CPU takes seconds to a minute, and may wait as long for its turn
MODEL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0)
#: namespaces the usage gauges name at most (service.metrics_per_namespace), the busiest first
METRICS_NAMESPACES = 100


class ServiceMetrics:
    """One registry per app, so two apps in one process (the tests) never share a figure."""

    def __init__(
        self,
        queue: Callable[[], QueueStats],
        cache: CacheCounters,
        usage: UsageLedger | None = None,
    ):
        self.registry = CollectorRegistry()
        self.per_namespace = usage is not None
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.retrieval = Histogram(
            "qrag_retrieval_seconds",
            "retrieval of a question's evidence (search, fusion, quorum, the gate), cache misses only",
            buckets=RETRIEVAL_BUCKETS,
            registry=self.registry,
        )
        self.queue_wait = Histogram(
            "qrag_queue_wait_seconds",
            "how long an answer waited for the model",
            buckets=MODEL_BUCKETS,
            registry=self.registry,
        )
        self.first_token = Histogram(
            "qrag_time_to_first_token_seconds",
            "from the model's turn to the answer's first token (the prompt read)",
            buckets=MODEL_BUCKETS,
            registry=self.registry,
        )
        self.generation = Histogram(
            "qrag_generation_seconds",
            "from the model's turn to the checked answer",
            buckets=MODEL_BUCKETS,
            registry=self.registry,
        )
        self.answers = Counter(
            "qrag_answers",
            "answers the model was asked for, by how they ended",
            ["model", "server", "outcome"],
            registry=self.registry,
        )
        self.tokens = Counter(
            "qrag_tokens",
            "tokens the model read (prompt) and wrote (completion)",
            ["model", "server", "kind"],
            registry=self.registry,
        )
        self.refused = Counter(
            "qrag_refused_requests",
            "requests refused or failed, by status and the error's code",
            ["status", "code"],
            registry=self.registry,
        )
        self.sync_documents = Counter(
            "qrag_source_sync_documents",
            "documents the sources' syncs added, changed and removed",
            ["change"],
            registry=self.registry,
        )
        self.syncs = Counter(
            "qrag_source_syncs",
            "sources' syncs, by how they ended (ok, or the error's code)",
            ["outcome"],
            registry=self.registry,
        )
        self.sync_seconds = Histogram(
            "qrag_source_sync_seconds", "a source's sync, start to end", buckets=MODEL_BUCKETS, registry=self.registry
        )
        #: per namespace and source, only where the figures may name namespaces (metrics_per_namespace)
        self.last_sync = Gauge(
            "qrag_source_last_success_timestamp_seconds",
            "when each source's last sync that did not fail started (unix time; metrics_per_namespace)",
            ["namespace", "source"],
            registry=self.registry,
        )
        self.registry.register(QueueCollector(queue))
        self.registry.register(CacheCollector(cache))
        if usage is not None:
            self.registry.register(UsageCollector(usage))

    def observe_retrieval(self, seconds: float) -> None:
        self.retrieval.observe(seconds)

    def observe_answer(self, answer: Answer) -> None:
        """An answer the model was asked for (a retrieval that abstained asked nothing)."""
        if not answer.reached_model:
            return
        labels = {"model": answer.model or "", "server": answer.model_server or ""}
        timings = answer.timings_ms
        self.queue_wait.observe(timings.get("queue_wait", 0.0) / 1000)
        self.generation.observe(timings["generation"] / 1000)
        if "first_token" in timings:
            self.first_token.observe(timings["first_token"] / 1000)
        self.answers.labels(**labels, outcome=answer.outcome).inc()
        if answer.usage is not None:
            self.tokens.labels(**labels, kind="prompt").inc(answer.usage.prompt_tokens)
            self.tokens.labels(**labels, kind="completion").inc(answer.usage.completion_tokens)

    def observe_sync(self, namespace: str, name: str, result: SyncResult, code: str | None = None) -> None:
        """A source's sync; ``code``: the error's, where it failed."""
        self.syncs.labels(outcome=code or "ok").inc()
        self.sync_seconds.observe(result.seconds)
        if code is None:
            for change in ("added", "changed", "removed"):
                self.sync_documents.labels(change=change).inc(getattr(result, change))
            if self.per_namespace:
                self.last_sync.labels(namespace=namespace, source=name).set(result.started_at.timestamp())

    def count_response(self, status: int, code: str | None) -> None:
        if status >= 400:
            self.refused.labels(status=str(status), code=code or ("internal" if status >= 500 else "http_error")).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class QueueCollector(Collector):
    """The model's queue, read when scraped: waiting now, and served, dropped (the client left while
    it waited) and refused (503) since the service started."""

    def __init__(self, stats: Callable[[], QueueStats]):
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        yield GaugeMetricFamily(
            "qrag_queue_waiting", "answers waiting for the model now, every team", value=stats.waiting
        )
        for name, value, text in (
            ("served", stats.served, "answers that reached the model after their turn came"),
            ("dropped", stats.dropped, "answers whose client left while they waited: they never reached the model"),
            ("refused", stats.refused, "answers refused with 503: the queue full, or the team at its share"),
        ):
            yield CounterMetricFamily(f"qrag_queue_{name}", text, value=value)


class CacheCollector(Collector):
    """The result cache's lookups, every namespace together."""

    def __init__(self, counters: CacheCounters):
        self.counters = counters

    def collect(self) -> Iterator[Metric]:
        lookups = CounterMetricFamily(
            "qrag_cache_lookups", "result cache lookups by what they found", labels=["result"]
        )
        for result in ("hit", "miss", "stale"):
            lookups.add_metric([result], getattr(self.counters, {"hit": "hits", "miss": "misses"}.get(result, result)))
        yield lookups


class UsageCollector(Collector):
    """Today's usage (UTC) per namespace, the busiest ``METRICS_NAMESPACES`` by queries."""

    def __init__(self, ledger: UsageLedger):
        self.ledger = ledger

    def collect(self) -> Iterator[Metric]:
        day = datetime.now(UTC).date()
        rows = sorted(self.ledger.report(day, day + timedelta(days=1)), key=lambda row: -row["queries"])
        for name in COUNTS:
            gauge = GaugeMetricFamily(
                f"qrag_usage_{name}_today", f"{name.replace('_', ' ')} today (UTC), per namespace", labels=["namespace"]
            )
            for row in rows[:METRICS_NAMESPACES]:
                gauge.add_metric([row["namespace"]], row[name])
            yield gauge
