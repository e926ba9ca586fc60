"""Liveness, readiness and the Prometheus metrics: no key needed."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from ...generation import loading_note
from ..errors import ServiceError
from ..metrics import CONTENT_TYPE_LATEST
from ..state import State

health = APIRouter()


@health.get("/healthz")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@health.get("/readyz")
def readyz(state: State, answers: bool = False) -> JSONResponse:
    """Ready to search: the embedding model and the store. ``model`` says whether the answer model
    is loaded too (an embedded model loads on the first answer, or at start with ``serve
    --preload``); ``?answers=true`` makes it part of ``ready``, for a probe that should wait for it."""
    started = state.namespaces is not None
    checks = {
        "embedder": started,
        "store": started and state.spaces().store_reachable(),
        "model": started and loading_note(state.settings) is None,
    }
    ready = checks["embedder"] and checks["store"] and (checks["model"] or not answers)
    return JSONResponse({"ready": ready, **checks}, status_code=200 if ready else 503)


@health.get("/metrics", response_class=Response)
def metrics(state: State) -> Response:
    """Prometheus' text format; per namespace only with service.metrics_per_namespace, which names the teams."""
    if state.metrics is None:
        raise ServiceError(404, "not_found", "metrics are off (service.metrics)")
    return Response(state.metrics.exposition(), media_type=CONTENT_TYPE_LATEST)
