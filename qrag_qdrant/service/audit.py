"""The audit log: one append-only JSON line per event, so an operator can answer "who asked what,
who uploaded or removed what, and when".

Events: ``query`` (the question's sha256, or its text with ``service.audit_questions``),
``answer`` (its outcome, model and tokens), ``ingest``, ``remove``, ``key`` (added, revoked,
rotated: written by the ``key`` commands), ``sign-in`` (a token from the identity provider seen
for the first time) and ``refused`` (a 401, 403 or 429 on any route, with the reason). Each line
holds the time, the event, the key's id (``oidc:<subject>`` for a signed-in caller), the
namespace, the client's address, the outcome and the request id, which the response carries as
``X-Request-ID``. Never a key or a token.

Lines are written off the request path: a request puts its line on a bounded queue, and one
thread writes them (the standard library's ``QueueListener``) to a file rotated by size. A full
disk, or a full queue, is a logged warning and a dropped line, never a failed request.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import logging
import logging.handlers
import queue
import re
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..text.json_lines import json_lines

if TYPE_CHECKING:
    from ..config.service import ServiceSettings

log = logging.getLogger(__name__)
#: lines waiting to be written; past it a line is dropped (with a warning) rather than held in memory
QUEUE_LINES = 10_000
#: a client's own request id is kept when it looks like one, else a new one is made
REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
#: what a request to a route is, for the log: (method, path prefix) -> event
EVENTS = (
    ("POST", "/v1/query", "query"),
    ("POST", "/v1/chat/completions", "query"),
    ("POST", "/v1/ingest", "ingest"),
    ("DELETE", "/v1/documents/", "remove"),
    ("PUT", "/v1/documents/", "readers"),
    ("POST", "/v1/mcp", "mcp"),
)
REFUSED = {401, 403, 429}
#: the id of the request being served, for every log line written while it is (``logs.RequestIdFilter``)
REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar("qrag_request_id", default=None)


class QuietFileHandler(logging.handlers.RotatingFileHandler):
    """A size-rotated file whose write failures (a full disk) are one warning a minute, not a trace."""

    last_warning = 0.0

    def handleError(self, record: logging.LogRecord) -> None:
        now = time.monotonic()
        if now - self.last_warning > 60:
            self.last_warning = now
            log.warning("the audit log cannot be written (%s); lines are being dropped", self.baseFilename)


class AuditLog:
    """Writes audit lines on a thread of its own; ``record`` never blocks and never raises."""

    def __init__(self, path: Path, max_bytes: int, backups: int, questions: bool):
        self.path, self.questions = Path(path), questions
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handler = audit_file(self.path, max_bytes, backups)
        self._queue: queue.Queue[logging.LogRecord] = queue.Queue(QUEUE_LINES)
        self._listener = logging.handlers.QueueListener(self._queue, handler)
        self._listener.start()
        self._handler = handler
        self._dropped = 0

    def record(self, event: str, **fields: Any) -> None:
        try:
            self._queue.put_nowait(audit_record(event, fields))
        except queue.Full:
            self._dropped += 1
            if self._dropped in (1, 100, 10_000):
                log.warning("the audit log's queue is full: %d lines dropped", self._dropped)

    def question(self, text: str) -> dict[str, str]:
        """The question as the log keeps it: its sha256, or with audit_questions its text too."""
        digest = {"question_sha256": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()}
        return digest | ({"question": text} if self.questions else {})

    def close(self) -> None:
        """Writes what is queued, then stops the writer."""
        self._listener.stop()
        self._handler.close()


def audit_file(path: Path, max_bytes: int, backups: int) -> QuietFileHandler:
    """The log's file, rotated at ``max_bytes`` with ``backups`` older ones; opened at its first line."""
    handler = QuietFileHandler(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8", delay=True)
    handler.setFormatter(logging.Formatter("%(message)s"))
    return handler


def audit_record(event: str, fields: dict[str, Any]) -> logging.LogRecord:
    """One line of the log, as the file handler writes it."""
    line = json.dumps({"time": now_iso(), "event": event, **fields}, ensure_ascii=False, default=str)
    # a lone surrogate (a client may send one) written as its JSON escape: it cannot be encoded, and
    # the line would be lost
    line = line.encode("utf-8", "backslashreplace").decode("utf-8")
    return logging.makeLogRecord({"msg": line, "levelno": logging.INFO})


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def event_of(method: str, path: str, status: int) -> str | None:
    """The event a request is, or None for one the log does not keep (a list, a poll)."""
    if status in REFUSED:
        return "refused"
    return next((event for m, prefix, event in EVENTS if m == method and path.startswith(prefix)), None)


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class AuditTrail:
    """ASGI middleware, outermost: gives every ``/v1/`` request an id (``X-Request-ID``), and once
    its response has ended writes the request's line, with what the route added to
    ``request.state.audit`` (the question's hash, the answer's outcome, the document removed)."""

    def __init__(
        self,
        app: Callable[[Scope, Receive, Send], Awaitable[None]],
        audit: Callable[[], AuditLog | None],
        counted: Callable[[int, str | None], None] | None = None,
    ):
        """``counted``: told every response's status and error code (the service's metrics)."""
        self.app, self.audit, self.counted = app, audit, counted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if REQUEST_ID.match(given) else uuid.uuid4().hex
        state = scope.setdefault("state", {})
        state["request_id"], state["audit"] = request_id, {}
        status, token = 500, REQUEST.set(request_id)

        async def sending(message: MutableMapping[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", []), (b"x-request-id", request_id.encode())]
            elif message["type"] == "http.response.body" and status >= 400 and "error_code" not in state:
                state["error_code"] = error_code(message.get("body", b""))
                state["audit"].setdefault("reason", state["error_code"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            REQUEST.reset(token)
            if self.counted is not None:
                self.counted(status, state.get("error_code"))
            self._write(scope, status, request_id, state)

    def _write(self, scope: Scope, status: int, request_id: str, state: dict[str, Any]) -> None:
        audit = self.audit()
        principal = state.get("principal")
        with LINE_WRITTEN:  # what the request noted until now is its line; an answer noted later has its own
            details = {key: value for key, value in (state.get("audit") or {}).items() if value is not None}
            common = {
                "key": details.pop("key", principal.key_id if principal is not None else None),
                "namespace": principal.namespace if principal is not None else None,
                "client": (scope.get("client") or ("", 0))[0],
                "request_id": request_id,
            }
            state["written"] = common
        # a route may name the event: a document the caller may not read is a 404 to it, a refusal here
        event = details.pop("event", None) or event_of(scope["method"], scope["path"], status)
        if audit is None or event is None:
            return
        answer = details.pop("answer", None)
        if (signed_in := state.get("signed_in")) is not None:
            audit.record("sign-in", **common, outcome="ok", role=signed_in.principal.role)
        # an MCP call answers 200 even when a tool was refused: the tool says so in ``outcome``
        outcome = details.pop("outcome", "refused" if status in REFUSED else "ok" if status < 400 else "error")
        route = {"method": scope["method"], "path": scope["path"][:300]} if event in ("refused", "mcp") else {}
        audit.record(event, **common, outcome=outcome, status=status, **route, **details)
        if answer is not None:
            audit.record("answer", **common, **answer)


#: held while a request's line is read from its notes, and while an answer is noted
LINE_WRITTEN = threading.Lock()


def note_answer(audit: AuditLog, state: dict[str, Any], fields: dict[str, Any]) -> None:
    """The answer's outcome on its request's line; or, when that line is written already (a client
    that left mid-stream ends the request before its answer ends), on an ``answer`` line of its own
    with the request's key, namespace, client and id."""
    with LINE_WRITTEN:
        common = state.get("written")
        if common is None:
            state.setdefault("audit", {})["answer"] = fields
            return
    audit.record("answer", **common, **fields)


def error_code(body: bytes) -> str | None:
    """The ``code`` of the service's JSON error (either shape), to say why a request was refused."""
    try:
        error = json.loads(body)
    except ValueError:
        return None
    if isinstance(error, dict) and isinstance(error.get("error"), dict):
        error = error["error"]
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and len(code) <= 64 else None


def answer_fields(answer: Any) -> dict[str, Any]:
    """What the log keeps of an answer: how it ended, the model, the tokens; never its text."""
    outcome = answer.outcome
    if outcome == "declined":  # why: the retrievers, the gate or the model
        outcome = answer.abstain_reason or outcome
    used = answer.usage
    return {
        "outcome": outcome,
        "model": answer.model,
        "prompt_tokens": used.prompt_tokens if used else None,
        "completion_tokens": used.completion_tokens if used else None,
    }


def read_lines(path: Path, backups: int) -> Iterator[dict[str, Any]]:
    """Every line of the log, oldest first: the rotated files (``.N`` down to ``.1``), then the file."""
    for file in [*(Path(f"{path}.{n}") for n in range(backups, 0, -1)), Path(path)]:
        if file.is_file():
            yield from (row for _, row in json_lines(file, skip_invalid=True))  # a line cut by a crash is passed over


_write_lock = threading.Lock()


def append_now(settings: ServiceSettings, event: str, **fields: Any) -> None:
    """One line written at once by a command (``key add``, ``documents readers``) rather than the
    service, when the service keeps an audit log (``service.audit``)."""
    if not settings.audit:
        return
    with _write_lock:
        handler = audit_file(settings.audit_log, settings.audit_max_bytes, settings.audit_backups)
        try:
            handler.handle(audit_record(event, fields | {"client": "cli", "outcome": "ok"}))
        finally:
            handler.close()
