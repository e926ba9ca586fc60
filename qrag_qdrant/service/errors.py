"""The service's errors: one JSON shape, ``{"code", "message"}``, the CLI's taxonomy as HTTP
statuses, and messages that carry no credentials and, unless the caller is an admin, no path
on the server. No traceback ever leaves.
"""

from __future__ import annotations

import logging
import re

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import (
    ConfigError,
    CorpusError,
    DocumentNotFound,
    GenerationError,
    NothingIngestedError,
    QragError,
    QuestionError,
    RequestError,
    SourceError,
    StoreError,
    StoreInUseError,
    redacted,
)
from ..store.filters import NoDocumentPasses

log = logging.getLogger(__name__)

#: the CLI's error classes as HTTP statuses and stable codes, most specific first
ERROR_CODES: tuple[tuple[type[QragError], int, str], ...] = (
    (QuestionError, 400, "bad_question"),
    (NoDocumentPasses, 404, "no_document_passes_filter"),
    (RequestError, 400, "bad_request"),
    (DocumentNotFound, 404, "unknown_document"),
    (CorpusError, 400, "bad_corpus"),
    (NothingIngestedError, 404, "nothing_ingested"),
    (StoreInUseError, 409, "store_in_use"),
    (StoreError, 503, "store_unavailable"),
    (GenerationError, 502, "generation_failed"),
    (SourceError, 502, "source_failed"),
    (ConfigError, 500, "config"),
    (QragError, 500, "error"),
)
#: codes of plain HTTP errors (an unknown route, a wrong method)
STATUS_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}
#: an absolute path on the server: after a space, a quote, a bracket or '=' (never inside a URL)
SERVER_PATH = re.compile(r"""(?:^|(?<=[\s'"(=]))/[^\s'"),;]+""")


#: the OpenAI-compatible routes, whose errors take OpenAI's shape (``routes/openai.py``)
OPENAI_PATHS = ("/v1/chat/completions", "/v1/models")


class ServiceError(HTTPException):
    """An HTTP error with the service's stable ``code``; ``param`` names the request field at
    fault, for OpenAI's error shape."""

    def __init__(
        self, status: int, code: str, message: str, headers: dict[str, str] | None = None, param: str | None = None
    ):
        super().__init__(status, message, headers)
        self.code, self.param = code, param


def one_line(message: str, paths: bool = False) -> str:
    """A message fit for a client: one line, at most 500 characters, credentials redacted, and
    server paths replaced unless ``paths``."""
    message = redacted(" ".join(message.split()))
    return (message if paths else SERVER_PATH.sub("<server path>", message))[:500]


def error_response(
    status: int,
    code: str,
    message: str,
    paths: bool = False,
    headers: dict[str, str] | None = None,
    path: str = "",
    param: str | None = None,
) -> JSONResponse:
    """The error as JSON: ``{"code", "message"}``, or on the OpenAI-compatible ``path`` OpenAI's
    ``{"error": {"message", "type", "param", "code"}}``."""
    text = one_line(message, paths)
    if path in OPENAI_PATHS:
        kind = "authentication_error" if status == 401 else "invalid_request_error"
        body: dict[str, object] = {
            "error": {
                "message": text,
                "type": kind,
                "param": param,
                "code": "invalid_api_key" if status == 401 else code,
            }
        }
    else:
        body = {"code": code, "message": text}
    return JSONResponse(body, status_code=status, headers=headers)


def error_of(exc: BaseException) -> tuple[int, str, str]:
    """An exception as the service's error: status, stable code, message."""
    if isinstance(exc, QragError):
        status, code = next((s, c) for kind, s, c in ERROR_CODES if isinstance(exc, kind))
        return status, code, str(exc)
    if isinstance(exc, ServiceError):  # raised in a job (a sync over its namespace's quota)
        return exc.status_code, exc.code, str(exc.detail)
    return 500, "internal", f"unexpected {type(exc).__name__}"


def shows_paths(request: Request) -> bool:
    """Admins may see server paths in errors (they name them when they ingest one)."""
    principal = getattr(request.state, "principal", None)
    return principal is not None and principal.can_read_server_paths


def install_handlers(app: Starlette) -> None:
    """Every error the app can raise, as ``{"code", "message"}``: on the service, and on an app
    mounted in it (MCP), which would otherwise answer in its own shape."""
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(QragError, qrag_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, invalid_request)  # type: ignore[arg-type]
    app.add_exception_handler(ClientDisconnect, client_gone)


async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
    code = getattr(exc, "code", None) or STATUS_CODES.get(exc.status_code, "http_error")
    return error_response(
        exc.status_code,
        code,
        str(exc.detail),
        shows_paths(request),
        dict(exc.headers) if exc.headers else None,
        request.url.path,
        getattr(exc, "param", None),
    )


async def qrag_error(request: Request, exc: QragError) -> JSONResponse:
    return error_response(*error_of(exc), paths=shows_paths(request), path=request.url.path)


async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    errors = exc.errors()
    problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'] if p != 'body') or 'body'}: {e['msg']}" for e in errors)
    field = next((str(p) for e in errors for p in e["loc"] if p != "body"), None)
    return error_response(
        422 if request.url.path not in OPENAI_PATHS else 400,
        "invalid_request",
        problems,
        path=request.url.path,
        param=field,
    )


async def client_gone(request: Request, exc: Exception) -> JSONResponse:
    """A body that broke off mid-stream (bad chunked framing, or a client that left): one info line,
    no traceback (uvicorn already warns once of bad framing); the answer goes nowhere, but is still
    the service's one-line error shape."""
    log.info(
        "%s %s: the request body broke off before its end (client gone or bad framing)",
        request.method,
        request.url.path,
    )
    return error_response(400, "bad_request", "the request body broke off before its end", path=request.url.path)


class UnexpectedErrors:
    """ASGI middleware inside the audit trail and the security headers: an exception no route
    handled becomes the service's 500 (``{"code": "internal"}``) here, its traceback logged once
    with the request's id, so the reply still carries ``X-Request-ID`` and the security headers
    and the audit line and metrics see its code. (Starlette's handler for ``Exception`` answers
    from outside every middleware, and raises again for the server to log a second time.) A
    response already under way cannot become a 500: it ends where it stood (a stream then lacks
    its closing event), logged once the same way."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = ended = False

        async def sending(message: Message) -> None:
            nonlocal started, ended
            started = started or message["type"] == "http.response.start"
            ended = ended or (message["type"] == "http.response.body" and not message.get("more_body", False))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            status, code, message = error_of(exc)
            if status >= 500:  # a fault of the service's: its traceback, once, for the operator
                log.error("%s %s failed: %s", scope["method"], scope["path"], code, exc_info=exc)
            if not started:
                await error_response(status, code, message, path=scope["path"])(scope, receive, send)
            elif not ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
