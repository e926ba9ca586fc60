"""Sign-in through an OpenID Connect provider, beside the team keys (``service.oidc``).

A bearer token that is not a key is read as a JWT access token. PyJWT checks its signature against
the provider's published keys (the JWKS its discovery document names), and its ``exp``, ``nbf``,
``iat``, ``aud`` and ``iss``, with ``leeway_seconds`` of clock skew. Only public-key algorithms are
accepted, so neither ``alg: none`` nor a published key used as an HMAC secret can pass. The token's
``claim`` (``groups`` by default) is mapped to a namespace and role; no mapped value is a 403.

The provider's keys are kept ``jwks_cache_seconds``. A token whose ``kid`` the kept set lacks (the
provider rotated its key) reads the set again, at most every ``jwks_refresh_seconds``, so a client
inventing key ids cannot make the service hammer the provider. A verified token is remembered (by
its SHA-256, until it expires) so a client's next request costs a lookup; the first one is the
audit log's ``sign-in``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt

from ...config.service import OidcSettings, Role
from ...store.access import GROUP, MAX_GROUPS
from .keys import Principal

#: a discovery document or key set larger than this is refused (they are a few KB)
MAX_DOCUMENT_BYTES = 1 << 20
#: verified tokens remembered at once; the oldest is forgotten first
REMEMBERED_TOKENS = 4096
#: the longest ``sub`` kept: it names the caller in rate limits, usage and the audit log
MAX_SUBJECT_CHARS = 255
#: a header naming the namespace, for a token whose groups map to several
NAMESPACE_HEADER = "x-qrag-namespace"
ROLE_ORDER: dict[Role, int] = {"read": 0, "read-write": 1, "admin": 2}


class SignInRefused(Exception):
    """A token that does not sign the caller in: ``status`` 401 (not valid), 403 (valid, but no
    namespace) or 503 (the provider cannot be reached); ``reason`` is safe to show the caller,
    ``logged`` what the audit log keeps (the reason, unless given)."""

    def __init__(self, status: int, reason: str, logged: str | None = None, who: dict[str, str] | None = None):
        super().__init__(reason)
        self.status, self.reason, self.logged = status, reason, logged or reason
        #: what the audit log may name of the caller: the key's id, the token's subject
        self.who = who or {}


@dataclass(frozen=True)
class SignedIn:
    principal: Principal
    subject: str
    #: the token's own expiry (seconds since the epoch)
    expires: float


class ProviderKeys:
    """The provider's signing keys, read through its discovery document and kept for a while."""

    def __init__(self, settings: OidcSettings, clock: Callable[[], float] = time.monotonic):
        self.settings, self.clock = settings, clock
        self._keys: jwt.PyJWKSet | None = None
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def key(self, kid: str | None) -> jwt.PyJWK:
        """The key ``kid`` names (or the only key, for a token without ``kid``); an unknown one reads
        the set again when the last read is older than ``jwks_refresh_seconds``."""
        with self._lock:  # concurrent sign-ins wait for one read, and share its result
            since = self.clock() - self._read_at
            if self._keys is None and since < self.settings.jwks_refresh_seconds:
                raise SignInRefused(503, "the identity provider could not be read a moment ago; try again shortly")
            if self._keys is None or since > self.settings.jwks_cache_seconds:
                self._read()
            found = self._find(kid)
            if found is None and self.clock() - self._read_at >= self.settings.jwks_refresh_seconds:
                self._read()
                found = self._find(kid)
        if found is None:
            raise SignInRefused(401, "the token is signed by a key the identity provider does not publish")
        return found

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        keys = self._keys.keys if self._keys is not None else []
        if kid is None:
            return keys[0] if len(keys) == 1 else None
        return next((key for key in keys if key.key_id == kid), None)

    def _read(self) -> None:
        issuer = str(self.settings.issuer).rstrip("/")
        try:
            with httpx.Client(timeout=self.settings.timeout_seconds, follow_redirects=False) as client:
                discovery = _json(client, f"{issuer}/.well-known/openid-configuration")
                if str(discovery.get("issuer", "")).rstrip("/") != issuer:
                    raise ValueError("its discovery document names another issuer")
                self._keys = jwt.PyJWKSet.from_dict(_json(client, str(discovery["jwks_uri"])))
        except (httpx.HTTPError, ValueError, KeyError, jwt.PyJWKSetError) as exc:
            raise SignInRefused(503, f"the identity provider cannot be read ({type(exc).__name__})") from None
        finally:
            self._read_at = self.clock()  # read or not: a provider that is down is not asked again at once


def _json(client: httpx.Client, url: str) -> dict[str, Any]:
    with client.stream("GET", url, headers={"Accept": "application/json"}) as response:
        response.raise_for_status()
        body = bytearray()
        for part in response.iter_bytes():
            body += part
            if len(body) > MAX_DOCUMENT_BYTES:
                raise ValueError(f"{url} sent more than {MAX_DOCUMENT_BYTES} bytes")
    document = json.loads(body)
    if not isinstance(document, dict):
        raise ValueError(f"{url} did not send a JSON object")
    return document


class OidcSignIn:
    """Who a token's bearer is: verified once, then remembered until the token expires."""

    def __init__(self, settings: OidcSettings, keys: ProviderKeys | None = None):
        self.settings = settings
        self.keys = keys or ProviderKeys(settings)
        self.grants = settings.grants()
        self._verified: OrderedDict[str, SignedIn] = OrderedDict()
        self._lock = threading.Lock()

    def remembered(self, token: str, namespace: str | None) -> Principal | None:
        """The principal of a token verified before and not yet expired (no signature check, no I/O)."""
        with self._lock:
            known = self._verified.get(_digest(token, namespace))
        if known is None or time.time() > known.expires + self.settings.leeway_seconds:
            return None
        return known.principal

    def sign_in(self, token: str, namespace: str | None) -> SignedIn:
        """Verify ``token`` (may read the provider's keys: call it off the event loop)."""
        claims = self.claims(token)
        signed_in = SignedIn(self.principal(claims, namespace), str(claims["sub"]), float(claims["exp"]))
        with self._lock:
            self._verified[_digest(token, namespace)] = signed_in
            while len(self._verified) > REMEMBERED_TOKENS:
                self._verified.popitem(last=False)
        return signed_in

    def claims(self, token: str) -> dict[str, Any]:
        settings = self.settings
        try:
            header = jwt.get_unverified_header(token)
            algorithm = header.get("alg")
            if algorithm not in settings.algorithms:
                raise SignInRefused(401, f"tokens signed with {str(algorithm)[:20]!r} are not accepted")
            claims: dict[str, Any] = jwt.decode(
                token,
                self.keys.key(header.get("kid")),
                algorithms=[algorithm],
                audience=settings.audience,
                issuer=settings.issuer,
                leeway=settings.leeway_seconds,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.InvalidTokenError as exc:
            raise SignInRefused(401, f"the token is not valid: {_reason(exc)}") from None
        if not isinstance(claims["sub"], str) or not 0 < len(claims["sub"]) <= MAX_SUBJECT_CHARS:
            raise SignInRefused(401, "the token's sub claim is not a string of at most 255 characters")
        return claims

    def principal(self, claims: dict[str, Any], namespace: str | None) -> Principal:
        """The namespace and role the token's claim values map to; several namespaces need the
        ``X-Qrag-Namespace`` header to pick one."""
        values = claim_values(claims, self.settings.claim)
        roles: dict[str, Role] = {}
        for granted, role in (self.grants[v] for v in values if v in self.grants):
            if granted not in roles or ROLE_ORDER[role] > ROLE_ORDER[roles[granted]]:
                roles[granted] = role  # the highest role the values give, per namespace
        if namespace is not None:
            roles = {namespace: roles[namespace]} if namespace in roles else {}
        if not roles:
            where = f"the namespace {namespace!r}" if namespace else "any namespace"
            refusal = f"the token's {self.settings.claim} claim gives no access to {where}"
            raise SignInRefused(403, refusal, who={"subject": f"oidc:{claims['sub']}"})
        if len(roles) > 1:
            names = ", ".join(sorted(roles))
            refusal = f"the token gives access to {names}: name one in the X-Qrag-Namespace header"
            raise SignInRefused(403, refusal, who={"subject": f"oidc:{claims['sub']}"})
        ((granted, role),) = roles.items()
        groups = sorted({v for v in claim_values(claims, self.settings.groups_claim) if GROUP.fullmatch(v)})
        return Principal(granted, role, f"oidc:{claims['sub']}", tuple(groups[:MAX_GROUPS]))


def claim_values(claims: dict[str, Any], path: str) -> list[str]:
    """The strings of the claim at the dotted ``path``: a string or a list of strings; any other
    shape (an object of flags, a number) holds none."""
    value: Any = claims
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _digest(token: str, namespace: str | None) -> str:
    return hashlib.sha256(f"{namespace or ''}\n{token}".encode()).hexdigest()


def _reason(exc: jwt.InvalidTokenError) -> str:
    """PyJWT's reason, which names the failed check and never the token."""
    reasons = {
        jwt.ExpiredSignatureError: "it has expired",
        jwt.ImmatureSignatureError: "it is not valid yet",
        jwt.InvalidAudienceError: "it is for another audience",
        jwt.InvalidIssuerError: "another issuer made it",
        jwt.MissingRequiredClaimError: "a required claim is missing",
        jwt.InvalidSignatureError: "its signature does not match",
        jwt.DecodeError: "it is not a well-formed JWT",
    }
    return next((text for kind, text in reasons.items() if isinstance(exc, kind)), "it failed a check")


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: what a content security policy names."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"
