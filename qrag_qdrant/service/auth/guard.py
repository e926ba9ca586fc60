"""What a client may spend: bodies bounded as they stream, and requests per key.

``BodyGuard`` runs before any route. On ``/v1/`` it checks the bearer key, or the identity
provider's token (``oidc``), before a byte of the body is read (401, or 403 for a token that maps to
no namespace), refuses a declared ``Content-Length`` over the route's limit (413), and
counts the bytes of every body as they arrive, so a chunked body, or one whose length was not
declared, is cut off at the limit with a 413 too. It is plain ASGI: Starlette's
``@app.middleware`` wraps every request in extra tasks and streams, which a warm query pays.

``RateLimits`` is a token bucket per key and kind of request (query, ingest, feedback): a bucket
holds up to N tokens, refills at N per period, and a request takes one or gets a 429 with
``Retry-After``. A small module rather than the ``limits`` package: that package offers fixed
and moving windows, not a token bucket, and its storage layer is more than one process needs.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import ServiceError, error_response
from .keys import KEY_PREFIX, KeyFile, Principal, bearer_key
from .oidc import NAMESPACE_HEADER, OidcSignIn, SignInRefused

UNAUTHORIZED = "a valid bearer key is needed: Authorization: Bearer <key>"
#: a refused sign-in's status as the service's error code
REFUSAL_CODES = {401: "unauthorized", 403: "forbidden", 503: "identity_provider_unavailable"}


class BodyGuard:
    def __init__(
        self,
        app: ASGIApp,
        keys: Callable[[], KeyFile],
        limit_of: Callable[[str], int],
        oidc: OidcSignIn | None = None,
    ):
        self.app, self.keys, self.limit_of, self.oidc = app, keys, limit_of, oidc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        try:
            principal = await self.caller(scope, headers)
        except SignInRefused as refused:
            code = REFUSAL_CODES[refused.status]
            scope.setdefault("state", {}).setdefault("audit", {})["reason"] = refused.logged
            await error_response(refused.status, code, refused.reason, path=scope["path"])(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal  # request.state.principal
        limit = self.limit_of(scope["path"])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await error_response(413, "body_too_large", too_large(limit), path=scope["path"])(scope, receive, send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise ServiceError(413, "body_too_large", too_large(limit))
            return message

        await self.app(scope, counted, send)

    async def caller(self, scope: Scope, headers: dict[bytes, bytes]) -> Principal:
        """Who sent the request: a team key, else (with ``service.oidc``) a token the identity
        provider signed; a first sign-in is left in the scope for the audit log."""
        token = bearer_key(headers.get(b"authorization", b"").decode("latin-1"))
        if token is not None and self.oidc is not None and not token.startswith(KEY_PREFIX):
            namespace = headers.get(NAMESPACE_HEADER.encode(), b"").decode("latin-1").strip() or None
            principal = self.oidc.remembered(token, namespace)
            if principal is None:
                signed_in = await asyncio.to_thread(self.oidc.sign_in, token, namespace)
                scope.setdefault("state", {})["signed_in"] = signed_in
                principal = signed_in.principal
            return principal
        principal = self.keys().principal(token) if token is not None else None
        if principal is None:
            raise SignInRefused(401, UNAUTHORIZED, "no valid key or token")
        return principal


def too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


class RateLimits:
    """Token buckets by (kind, key id); ``clock`` is injectable so tests need no waiting."""

    def __init__(self, rates: dict[str, tuple[int, float] | None], clock: Callable[[], float] = time.monotonic):
        """``rates``: per kind, (burst, refill per second) as ``ServiceSettings.rates`` gives them."""
        self.rates, self.clock = rates, clock
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # tokens, when
        self._lock = threading.Lock()

    def wait_seconds(self, kind: str, key_id: str) -> float:
        """0 when the request may go (a token is taken), else how long until a token is there."""
        rate = self.rates.get(kind)
        if rate is None:
            return 0.0
        burst, per_second = rate
        now = self.clock()
        with self._lock:
            tokens, then = self._buckets.get((kind, key_id), (float(burst), now))
            tokens = min(float(burst), tokens + (now - then) * per_second)
            if tokens >= 1.0:
                self._buckets[(kind, key_id)] = (tokens - 1.0, now)
                return 0.0
            self._buckets[(kind, key_id)] = (tokens, now)
            return (1.0 - tokens) / per_second

    def check(self, kind: str, key_id: str) -> None:
        """A 429 with ``Retry-After`` (whole seconds) when the key has spent its ``kind`` requests."""
        wait = self.wait_seconds(kind, key_id)
        if wait:
            raise ServiceError(
                429,
                "rate_limited",
                f"too many {kind} requests for this key: retry in {math.ceil(wait)} s (service.rate_{kind})",
                headers={"Retry-After": str(math.ceil(wait))},
            )


class McpGate:
    """The MCP endpoint under the service's limits. Its calls answer as JSON on the POST that made
    them (stateless), so the server never has anything to send on a stream of its own: a GET, which
    would open one that never ends, is a 405 (as the MCP spec allows). Every POST takes a token from
    the key's query bucket, as ``/v1/query`` does: a key at its limit gets the same 429."""

    def __init__(self, app: ASGIApp, limits: RateLimits):
        self.app, self.limits = app, limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            message = "this MCP endpoint answers POST only: it opens no event stream"
            await error_response(405, "method_not_allowed", message, headers={"Allow": "POST, DELETE"})(
                scope, receive, send
            )
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            try:
                self.limits.check("query", scope["state"]["principal"].key_id)
            except ServiceError as refused:
                await error_response(
                    refused.status_code,
                    refused.code,
                    refused.detail,
                    headers=dict(refused.headers or {}),
                    path=scope["path"],
                )(scope, receive, send)
                return
            await watching_for_the_client(self.app, scope, receive, send)
            return
        await self.app(scope, receive, send)


async def watching_for_the_client(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Run ``app`` with ``request.state.client_gone``, an event set if the client disconnects once
    the body is read: the MCP SDK answers on the request and never looks, so without it a call
    (``ask``) would run the model to its end for nobody."""
    body_read, gone = asyncio.Event(), threading.Event()
    scope.setdefault("state", {})["client_gone"] = gone

    async def reading() -> Message:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_read.set()
        return message

    async def watch() -> None:
        await body_read.wait()
        if (await receive())["type"] == "http.disconnect":
            gone.set()

    watching = asyncio.ensure_future(watch())
    try:
        await app(scope, reading, send)
    finally:
        watching.cancel()
