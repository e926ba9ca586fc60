"""What the service's routes share, one per app (``app.state.service``), and how a route gets
it and its caller: the team whose key ``auth.guard.BodyGuard`` found, once the key's rate allows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from ..config.settings import Settings
from ..generation.scheduler import GenerationScheduler
from ..results import Answer, Evidence
from .audit import AuditLog, answer_fields, note_answer
from .auth.guard import UNAUTHORIZED, RateLimits
from .auth.keys import Principal
from .cache import ResultCache
from .errors import ServiceError
from .feedback import FeedbackFile, RecentQueries
from .jobs import IngestJobs
from .metrics import ServiceMetrics
from .namespaces import Namespaces
from .schemas import QueryRequest
from .sources import SourceSchedule
from .uploads import UploadArea
from .usage import QuotaExceeded, UsageLedger


@dataclass
class ServiceState:
    """What the routes share: one per app."""

    settings: Settings
    cache: ResultCache[Evidence]
    limits: RateLimits
    uploads: UploadArea
    jobs: IngestJobs
    recent: RecentQueries = field(default_factory=RecentQueries)
    feedback: FeedbackFile | None = None
    #: the model's fair queue, shared by every namespace's answers
    scheduler: GenerationScheduler = field(default_factory=GenerationScheduler)
    #: set when the app starts (the models load then)
    namespaces: Namespaces | None = None
    #: the audit log (service.audit), written off the request path
    audit: AuditLog | None = None
    #: usage per namespace, key and day, and the quotas on it
    usage: UsageLedger | None = None
    #: what /metrics shows (service.metrics); None: off
    metrics: ServiceMetrics | None = None
    #: the sources' syncs; set when the app starts
    sources: SourceSchedule | None = None

    def note(self, request: Request, **fields: Any) -> None:
        """Details for the request's audit line (``audit.AuditTrail`` writes it when it ends)."""
        if self.audit is not None:
            request.state.audit.update(fields)

    def note_question(self, request: Request, body: QueryRequest) -> None:
        if self.audit is not None:
            self.note(request, **self.audit.question(body.question), turns=len(body.history), generate=body.generate)

    def noting_answer(
        self, request: Request, principal: Principal, then: Callable[[Answer], None]
    ) -> Callable[[Answer], None]:
        """``then``, after the answer's outcome is noted for the audit log and its tokens counted."""

        def done(answer: Answer) -> None:
            if self.audit is not None:
                note_answer(self.audit, request.scope.setdefault("state", {}), answer_fields(answer))
            self.count_tokens(principal, answer)
            then(answer)

        return done

    def charge(self, principal: Principal, **counts: int) -> None:
        """Counts what the caller uses, once every quota it falls under allows it (else 429)."""
        if self.usage is not None:
            self.usage.take(principal.namespace, principal.key_id, counts)

    def ingest_allowed(self, principal: Principal, declared: int) -> tuple[int, QuotaExceeded] | None:
        """The bytes the caller's daily ingest quota still allows, and its refusal; a 429 at once
        when the body's declared length already passes it."""
        left = self.usage.left(principal.namespace, principal.key_id, "ingest_bytes") if self.usage else None
        if left is not None and (declared > left[0] or left[0] <= 0):
            raise left[1]
        return left

    def charged_answer(self, request: Request, principal: Principal) -> bool:
        """An answer taken from the caller's quota: True; over it, 429 quota_exceeded, or False with
        ``service.quota_fallback = "evidence"`` (the evidence is sent alone)."""
        try:
            self.charge(principal, answers=1)
        except QuotaExceeded:
            if self.settings.service.quota_fallback != "evidence":
                raise
            self.note(request, over_quota=True)
            return False
        return True

    def answered(self, answer: Answer) -> None:
        """Every answer the service's pipelines finish, whoever asked (HTTP, a stream, MCP)."""
        if self.metrics is not None:
            self.metrics.observe_answer(answer)

    def retrieved(self, seconds: float) -> None:
        """Every retrieval (a cache miss), whoever asked."""
        if self.metrics is not None:
            self.metrics.observe_retrieval(seconds)

    def responded(self, status: int, code: str | None) -> None:
        """Every ``/v1/`` response's status, and its error's code."""
        if self.metrics is not None:
            self.metrics.count_response(status, code)

    def count_tokens(self, principal: Principal, answer: Answer) -> None:
        """Counts the tokens a charged answer used; an answer that never got the model's turn (its
        client left while it waited) gives back the answer it was charged."""
        if self.usage is None:
            return
        if answer.usage is not None:
            tokens = {"prompt_tokens": answer.usage.prompt_tokens, "completion_tokens": answer.usage.completion_tokens}
            self.usage.add(principal.namespace, principal.key_id, tokens)
        if not answer.reached_model:
            self.usage.add(principal.namespace, principal.key_id, {"answers": -1})

    def schedule(self) -> SourceSchedule:
        assert self.sources is not None, "the service has not started"
        return self.sources

    def spaces(self) -> Namespaces:
        assert self.namespaces is not None, "the service has not started"
        return self.namespaces


def service(request: Request) -> ServiceState:
    state: ServiceState = request.app.state.service
    return state


bearer = HTTPBearer(auto_error=False, description="a team's key from `qrag-qdrant key add`")


def caller(request: Request, _: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]) -> Principal:
    """The team behind the request's bearer key (checked before the body was read)."""
    principal: Principal | None = getattr(request.state, "principal", None)
    if principal is None:
        raise ServiceError(401, "unauthorized", UNAUTHORIZED)
    return principal


def limited(kind: str) -> Callable[[ServiceState, Principal], Principal]:
    """The caller, once the key's ``kind`` bucket has a token (else 429 with Retry-After)."""

    def check(
        state: Annotated[ServiceState, Depends(service)], principal: Annotated[Principal, Depends(caller)]
    ) -> Principal:
        state.limits.check(kind, principal.key_id)
        return principal

    return check


State = Annotated[ServiceState, Depends(service)]
Caller = Annotated[Principal, Depends(caller)]
#: the caller of each kind of request, once its key's bucket has a token
QueryCaller = Annotated[Principal, Depends(limited("query"))]
IngestCaller = Annotated[Principal, Depends(limited("ingest"))]
FeedbackCaller = Annotated[Principal, Depends(limited("feedback"))]
LookupCaller = Annotated[Principal, Depends(limited("lookup"))]
