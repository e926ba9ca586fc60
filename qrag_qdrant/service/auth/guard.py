"""What a client may spend: bodies bounded as they stream, and requests per key.

``BodyGuard`` runs before any route. On ``/v1/`` it refuses ambiguous headers (two
``Authorization`` headers, ``Content-Length`` beside chunked encoding), checks the bearer key, or the
identity provider's token (``oidc``), before a byte of the body is read (401, or 403 for a token that
maps to no namespace), refuses a declared ``Content-Length`` over the route's limit (413), and counts
the bytes of every body as they arrive, so a chunked body, or one whose length was not declared, is
cut off at the limit with a 413 too. A body must arrive on time (408), and a JSON body may not name
a key twice (400). It is plain ASGI: Starlette's
``@app.middleware`` wraps every request in extra tasks and streams, which a warm query pays.

``RateLimits`` is a token bucket per key and kind of request (query, ingest, feedback): a bucket
holds up to N tokens, refills at N per period, and a request takes one or gets a 429 with
``Retry-After``. A small module rather than the ``limits`` package: that package offers fixed
and moving windows, not a token bucket, and its storage layer is more than one process needs.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
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
        body_timeout: float = 10.0,
        body_min_rate: int = 16384,
    ):
        self.app, self.keys, self.limit_of, self.oidc = app, keys, limit_of, oidc
        self.body_timeout, self.body_min_rate = body_timeout, body_min_rate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        try:
            headers = checked_headers(scope["headers"])
            principal = await self.caller(scope, headers)
        except SignInRefused as refused:
            code = REFUSAL_CODES[refused.status]
            audit = scope.setdefault("state", {}).setdefault("audit", {})
            audit.update({"reason": refused.logged, **refused.who})
            await error_response(refused.status, code, refused.reason, path=path)(scope, receive, send)
            return
        except ServiceError as bad:
            await error_response(bad.status_code, bad.code, bad.detail, path=path)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal  # request.state.principal
        limit = self.limit_of(path)
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            await error_response(413, "body_too_large", too_large(limit), path=path)(scope, receive, send)
            return
        body = BodyReader(receive, limit, self.body_timeout, self.body_min_rate)
        if read_as_json(headers.get(b"content-type")):
            try:  # read whole (it is bounded), so it is checked once for what a parser would let pass
                whole = await body.whole()
                whole = whole.removeprefix(UTF8_BOM)  # accepted on every JSON route alike (RFC 8259 allows ignoring it)
                refuse_deep_nesting(whole)
                refuse_duplicate_keys(whole)
            except ServiceError as bad:
                await error_response(bad.status_code, bad.code, bad.detail, path=path, headers=dict(bad.headers or {}))(
                    scope, receive, send
                )
                return
            await self.app(scope, body.replay(whole), send)
            return
        await self.app(scope, body.receive, send)

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
        keys = self.keys()
        principal = keys.principal(token) if token is not None else None
        if principal is None:
            entry = keys.entry_of(token) if token is not None else None  # a revoked or expired key is named
            raise SignInRefused(401, UNAUTHORIZED, "no valid key or token", {"key": entry.id} if entry else {})
        return principal


def checked_headers(raw: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """The request's headers by name, once they are unambiguous: one ``Authorization`` (with two,
    which one decides would depend on the reader), and never a ``Content-Length`` beside a chunked
    ``Transfer-Encoding`` (the body's end would depend on the reader: request smuggling)."""
    names = [name.lower() for name, _ in raw]
    if names.count(b"authorization") > 1:
        raise ServiceError(400, "bad_request", "send one Authorization header")
    if names.count(b"content-length") > 1:
        raise ServiceError(400, "bad_request", "send one Content-Length header")
    headers = dict(raw)
    if b"content-length" in headers and b"chunked" in headers.get(b"transfer-encoding", b"").lower():
        raise ServiceError(400, "bad_request", "send Content-Length or chunked Transfer-Encoding, not both")
    return headers


class BodyReader:
    """A request's body as it arrives: at most ``limit`` bytes (413), and on time (408). A body has
    ``timeout`` seconds, and one more for every ``min_rate`` bytes it brings, so a large upload on a
    slow line goes through while a client that sends a byte now and then cannot hold a connection
    (Apache's mod_reqtimeout works the same way)."""

    def __init__(self, receive: Receive, limit: int, timeout: float, min_rate: int):
        self._receive, self.limit, self.min_rate = receive, limit, min_rate
        self.received = 0
        self.deadline = time.monotonic() + timeout

    async def receive(self) -> Message:
        left = self.deadline + self.received / self.min_rate - time.monotonic()
        try:
            message = await asyncio.wait_for(self._receive(), timeout=max(left, 0.0))
        except TimeoutError:
            raise ServiceError(
                408,
                "body_timeout",
                "the request body did not arrive in time (service.body_timeout, service.body_min_rate)",
                headers={"Connection": "close"},
            ) from None
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            if self.received > self.limit:
                raise ServiceError(413, "body_too_large", too_large(self.limit))
        return message

    async def whole(self) -> bytes:
        """The whole body (a client that leaves meanwhile ends the request)."""
        parts = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ServiceError(400, "client_gone", "the client went away before its body arrived")
            parts.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(parts)

    def replay(self, body: bytes) -> Receive:
        """A receive that gives the app the body read already, then what the client sends next (a
        disconnect, which streams and the MCP tools watch for)."""
        given = False

        async def receive() -> Message:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await self._receive()

        return receive


def read_as_json(content_type: bytes | None) -> bool:
    """Whether a route would parse the body as JSON: as FastAPI decides it, a body without a
    content type too, and any ``*/json`` or ``*/*+json`` type."""
    if content_type is None:
        return True
    kind = content_type.split(b";")[0].strip().lower()
    return kind.endswith(b"/json") or kind.endswith(b"+json") or not kind


#: a byte-order mark some clients put before a UTF-8 body
UTF8_BOM = b"\xef\xbb\xbf"
#: the deepest nesting of arrays and objects a JSON body may have (the API's own bodies need 5)
MAX_JSON_DEPTH = 64
#: what nesting depends on: brackets, and the quotes and backslashes that say whether one is in a string
JSON_STRUCTURE = re.compile(rb'[\\"\[\]{}]')
OPENING = frozenset(b"[{")
CLOSING = frozenset(b"]}")
QUOTE, BACKSLASH = ord('"'), ord("\\")


def refuse_deep_nesting(body: bytes) -> None:
    """A 400 ``too_deep`` for arrays and objects nested deeper than ``MAX_JSON_DEPTH``: a
    recursive parser (the standard library's, the duplicate-key check's) would run out of stack
    on them. One pass over the structural bytes alone, linear in the body whatever it holds."""
    depth, in_string, escaped_until = 0, False, -1
    for found in JSON_STRUCTURE.finditer(body):
        at = found.start()
        if at < escaped_until:  # the character a backslash escapes
            continue
        byte = body[at]
        if in_string:
            if byte == BACKSLASH:
                escaped_until = at + 2
            elif byte == QUOTE:
                in_string = False
        elif byte == QUOTE:
            in_string = True
        elif byte in OPENING:
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise ServiceError(
                    400, "too_deep", f"the JSON body nests arrays and objects deeper than {MAX_JSON_DEPTH}"
                )
        elif byte in CLOSING:
            depth -= 1


def refuse_duplicate_keys(body: bytes) -> None:
    """A 400 for a JSON object that names a key twice (parsers keep the first or the last, so two
    readers of one request could disagree); a body that is no JSON is left to the route's 422."""

    def pairs(items: list[tuple[str, object]]) -> dict[str, object]:
        names = [name for name, _ in items]
        if len(set(names)) != len(names):
            twice = sorted({name for name in names if names.count(name) > 1})
            raise ServiceError(400, "bad_request", f"the JSON body names {', '.join(map(repr, twice))} twice")
        return dict(items)

    try:
        json.loads(body, object_pairs_hook=pairs)
    except ValueError:
        return


def too_large(limit: int) -> str:
    return f"the request body is larger than {limit} bytes"


class RateLimits:
    """Token buckets by (kind, key id); ``clock`` is injectable so tests need no waiting."""

    #: buckets looked at between two sweeps of the idle ones
    SWEEP_EVERY = 1024

    def __init__(self, rates: dict[str, tuple[int, float] | None], clock: Callable[[], float] = time.monotonic):
        """``rates``: per kind, (burst, refill per second) as ``ServiceSettings.rates`` gives them."""
        self.rates, self.clock = rates, clock
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}  # tokens, when
        self._lock = threading.Lock()
        self._since_sweep = 0

    def _sweep(self, now: float) -> None:
        """Drop the buckets that have refilled: a full bucket is the same as none (lock held), so the
        buckets kept are bounded by the keys active within a refill period, not by every key ever seen."""
        self._since_sweep = 0
        for (kind, key_id), (tokens, then) in list(self._buckets.items()):
            rate = self.rates.get(kind)
            if rate is None or tokens + (now - then) * rate[1] >= rate[0]:
                del self._buckets[(kind, key_id)]

    def __len__(self) -> int:
        return len(self._buckets)

    def wait_seconds(self, kind: str, key_id: str) -> float:
        """0 when the request may go (a token is taken), else how long until a token is there."""
        rate = self.rates.get(kind)
        if rate is None:
            return 0.0
        burst, per_second = rate
        now = self.clock()
        with self._lock:
            self._since_sweep += 1
            if self._since_sweep >= self.SWEEP_EVERY:
                self._sweep(now)
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
