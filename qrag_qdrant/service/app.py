"""The FastAPI application, assembled: the embedder, the store and the generation backend stay
warm, and every request is confined to the namespace its bearer key names.

The routes are in ``routes``, the keys in ``auth``, body and rate limits in ``limits``, uploads
in ``uploads`` and the error shape in ``errors``; this module only puts them together.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.concurrency import run_in_threadpool
from fastapi.staticfiles import StaticFiles
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config.settings import Settings
from ..embedding import Embedder
from ..generation import loading_note, open_backend
from ..generation.scheduler import GenerationScheduler
from ..ingest.progress import IngestProgress, IngestReport
from ..results import Answer
from ..version import __version__
from .audit import AuditLog, AuditTrail, answer_fields
from .auth.guard import BodyGuard, McpGate, RateLimits
from .auth.keys import KeyFile, Principal
from .auth.oidc import OidcSignIn, origin
from .cache import ResultCache
from .errors import UnexpectedErrors, error_of, install_handlers, one_line
from .feedback import FeedbackFile
from .jobs import IngestJobs, JobRecords
from .metrics import ServiceMetrics
from .model_switch import reload_on_hangup, service_embedder
from .namespaces import Namespaces, ServiceNamespace
from .routes.documents import documents
from .routes.health import health
from .routes.ingest import ingests
from .routes.openai import openai
from .routes.page import page_router
from .routes.query import queries
from .routes.sources import sources
from .sources import SourceSchedule
from .state import ServiceState
from .uploads import UploadArea
from .usage import QuotaExceeded, UsageLedger

#: the web page and its script and style, shipped in the package
log = logging.getLogger(__name__)
WEB = resources.files(__package__) / "static"


def security_headers(connect: str = "") -> list[tuple[bytes, bytes]]:
    """A strict policy the web page and the API docs pass: nothing inline, nothing from elsewhere
    but ``connect`` (the identity provider's origin, which the page's sign-in fetches from)."""
    policy = (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self'{' ' + connect if connect else ''}; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    )
    return [
        (b"content-security-policy", policy.encode()),
        (b"x-content-type-options", b"nosniff"),
        (b"x-frame-options", b"DENY"),
        (b"referrer-policy", b"no-referrer"),
    ]


class SecurityHeaders:
    """``security_headers`` on every response (plain ASGI, as ``limits.BodyGuard``)."""

    def __init__(self, app: ASGIApp, headers: list[tuple[bytes, bytes]]):
        self.app, self.headers = app, headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, with_headers)


def job_error(exc: BaseException) -> tuple[str, str]:
    """A failed job's ``(code, message)``, as any team may read it: no server path."""
    _, code, message = error_of(exc)
    return code, one_line(message)


def swagger_files() -> Path | None:
    """Swagger UI's own files, from the pinned ``swagger-ui-bundle-v2`` wheel (the service extra)."""
    try:
        import swagger_ui_bundle
    except ImportError:
        return None
    return Path(swagger_ui_bundle.swagger_ui_path)


def service_state(settings: Settings) -> ServiceState:
    """What the service holds between requests, built from ``settings.service``; the namespaces
    join it when the app starts."""
    uploads = UploadArea(Path(settings.store) / ".uploads", settings.service.max_queued_upload_bytes)
    state = ServiceState(
        settings,
        ResultCache(settings.service.cache_entries),
        RateLimits(settings.service.rates()),
        uploads,
        IngestJobs(
            lambda namespace, path, progress, options: counted_ingest(state, namespace, path, progress, options),
            job_error,
            JobRecords(Path(settings.store) / ".jobs"),
            settings.service.jobs_kept,
            settings.service.jobs_kept_days,
            settings.service.job_niceness,
        ),
        feedback=FeedbackFile(settings.store),
        scheduler=GenerationScheduler(settings.service.queue_capacity, share=settings.service.queue_share),
    )

    service = settings.service
    if service.audit:
        state.audit = AuditLog(
            service.audit_log, service.audit_max_bytes, service.audit_backups, service.audit_questions
        )
    state.usage = usage = UsageLedger(service.usage_db, service.quotas)
    if service.metrics:
        state.metrics = ServiceMetrics(
            lambda: state.scheduler.stats, state.cache.counters, usage if service.metrics_per_namespace else None
        )
    return state


def create_app(settings: Settings, keys: KeyFile | None = None, embedder: Embedder | None = None) -> FastAPI:
    keys = keys if keys is not None else KeyFile.load(settings.service.keys)
    state = service_state(settings)
    service, uploads = settings.service, state.uploads
    mcp = mcp_app(state)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        uploads.sweep()  # what a crashed or killed run left: no job of this run owns it
        state.jobs.restore()  # earlier runs' jobs, the unfinished ones marked interrupted
        model = embedder or service_embedder(settings)
        model.embed(["warm up"])  # load the models for documents and questions now, so /readyz means it
        model.query_embed("warm up")
        if service.preload_model and (note := loading_note(settings)):
            log.info("%s before serving (service.preload_model)", note)
            await run_in_threadpool(open_backend, settings)  # the embedded model stays loaded for the process
        state.namespaces = app.state.namespaces = Namespaces(
            settings, model, state.answered, state.scheduler, state.retrieved
        )
        served = {settings.namespace}
        reload_on_hangup(state, lambda: served | {entry.namespace for entry in app.state.keys.entries()})
        state.sources = SourceSchedule(settings, state.jobs, state.namespaces.sync, state.usage, state.metrics)
        state.sources.start()  # the declared sources recorded, the due ones queued
        async with mcp.router.lifespan_context(mcp) if mcp is not None else nullcontext():
            yield
        state.sources.close()  # no sync is queued after this
        state.jobs.close(settings.service.drain_seconds)  # jobs in flight finish (or stop) before the store closes
        state.namespaces.close()
        state.namespaces = None
        if state.audit is not None:
            state.audit.close()  # what is queued is written first
        if state.usage is not None:
            state.usage.close()

    app = FastAPI(
        title="qrag-qdrant",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        description="Answers only from evidence that several retrievers agree on, or abstains.",
    )
    app.state.service, app.state.keys = state, keys
    oidc = settings.service.oidc
    app.add_middleware(
        BodyGuard,
        keys=lambda: app.state.keys,
        limit_of=lambda path: (
            settings.service.max_upload_bytes if path == "/v1/ingest" else settings.service.max_body_bytes
        ),
        oidc=OidcSignIn(oidc) if oidc.issuer else None,
        body_timeout=settings.service.body_timeout,
        body_min_rate=settings.service.body_min_rate,
    )
    app.add_middleware(UnexpectedErrors)
    app.add_middleware(
        SecurityHeaders, headers=security_headers(origin(str(oidc.issuer)) if oidc.page_signs_in else "")
    )
    app.add_middleware(AuditTrail, audit=lambda: state.audit, counted=state.responded)  # outermost: sees every refusal
    install_handlers(app)
    for router in (health, queries, ingests, documents, sources, openai, page_router(WEB, oidc)):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=str(WEB)), name="static")
    if (swagger := swagger_files()) is not None:
        app.mount("/swagger", StaticFiles(directory=str(swagger)), name="swagger")
    if mcp is not None:  # under /v1/: the key is checked, and the body bounded, before MCP reads it
        install_handlers(mcp)  # its errors (a body cut off at the limit) in the service's shape too
        mcp.add_middleware(UnexpectedErrors)
        app.mount("/v1/mcp", McpGate(mcp, state.limits), name="mcp")
    return app


@dataclass
class CallerMeter:
    """One caller's use counted against its quotas (``namespaces.Meter``), for the MCP tools; what
    a tool was refused, and the answer it wrote, go to the request's audit line as on HTTP."""

    state: ServiceState
    principal: Principal
    request: Any

    def charge(self, counts: dict[str, int]) -> None:
        try:
            self.state.charge(self.principal, **counts)
        except QuotaExceeded:
            self.state.note(self.request, outcome="refused", reason="quota_exceeded")
            raise

    def count(self, answer: Answer) -> None:
        self.state.count_tokens(self.principal, answer)
        self.state.note(self.request, answer=answer_fields(answer))


def counted_ingest(
    state: ServiceState, namespace: str, path: Path, progress: IngestProgress, options: dict[str, Any]
) -> IngestReport:
    """An ingest job's run, its chunks counted to the key that sent it."""
    report = state.spaces().ingest(namespace, path, progress, **options)
    if state.usage is not None:
        state.usage.add(namespace, options.get("ingested_by") or "", {"ingest_chunks": report.embedded_chunks})
    return report


def mcp_app(state: ServiceState) -> Starlette | None:
    """The MCP server over streamable HTTP, each call in the namespace of the key that
    ``limits.BodyGuard`` found; None without the mcp SDK. Stateless, JSON replies: a call needs
    no session, so any of the service's workers can answer it. DNS-rebinding checks are off: a
    browser page on another origin cannot get a team key, and every call needs one."""
    try:
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError:
        return None
    from ..mcp import build_server

    def caller_namespace(ctx: Any) -> ServiceNamespace:
        request = ctx.request_context.request  # its state: the key's principal, and whether the client left
        principal = request.state.principal
        return ServiceNamespace(
            state.spaces(),
            principal.namespace,
            request.state.client_gone,
            CallerMeter(state, principal, request),
            principal.readers,
        )

    return build_server(caller_namespace).streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
