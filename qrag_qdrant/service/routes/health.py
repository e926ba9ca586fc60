"""Liveness, readiness and the Prometheus metrics: no key needed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from ..errors import ServiceError
from ..metrics import CONTENT_TYPE_LATEST
from ..state import State

health = APIRouter()


@health.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz")
def readyz(state: State) -> JSONResponse:
    ready = state.namespaces is not None
    checks = {"embedder": ready, "store": ready and state.spaces().store_reachable()}
    return JSONResponse({"ready": all(checks.values()), **checks}, status_code=200 if all(checks.values()) else 503)


@health.get("/metrics", response_class=Response)
def metrics(state: State) -> Response:
    """Prometheus' text format; per namespace only with service.metrics_per_namespace, which names the teams."""
    if state.metrics is None:
        raise ServiceError(404, "not_found", "metrics are off (service.metrics)")
    return Response(state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
