"""Liveness, readiness and the Prometheus metrics: no key needed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse

from ..metrics import queue_exposition
from ..state import State
from ..usage import usage_exposition

health = APIRouter()


@health.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz")
def readyz(state: State) -> JSONResponse:
    ready = state.namespaces is not None
    checks = {"embedder": ready, "store": ready and state.spaces().store_reachable()}
    return JSONResponse({"ready": all(checks.values()), **checks}, status_code=200 if all(checks.values()) else 503)


@health.get("/metrics", response_class=PlainTextResponse)
def metrics(state: State) -> str:
    """Service-wide counters; per namespace only with service.metrics_per_namespace, which names the teams."""
    counters = state.cache.counters
    return (
        "".join(
            f"# HELP qrag_cache_{name}_total result cache {name}, all namespaces together\n"
            f"# TYPE qrag_cache_{name}_total counter\nqrag_cache_{name}_total {value}\n"
            for name, value in (("hits", counters.hits), ("misses", counters.misses), ("stale", counters.stale))
        )
        + state.generation.exposition()
        + queue_exposition(state.scheduler.stats)
        + (
            usage_exposition(state.usage)
            if state.usage is not None and state.settings.service.metrics_per_namespace
            else ""
        )
    )
