"""JWTs for Qdrant's RBAC (``jwt_rbac: true``, Qdrant >= 1.9), scoped to one namespace.

Qdrant checks a token's ``access`` list against the collection name of each request, by
exact name. Readers and incremental writers address a namespace only through its aliases
(``<namespace>-c<size>-o<overlap>``), which survive rebuilds, so a token lists those.
It cannot create collections or move aliases: a namespace's first ingest and its rebuilds
need the server's API key (see the README).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import jwt

from ..errors import ConfigError

TTL = re.compile(r"^(?P<amount>\d+)(?P<unit>[smhdw])$")
SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_ttl(text: str, option: str = "--ttl") -> int:
    """``90m``, ``12h``, ``30d``, ``2w`` -> seconds."""
    match = TTL.match(text.strip().lower())
    if not match or int(match["amount"]) == 0:
        raise ConfigError(f"{option} {text!r}: use a positive number and a unit, e.g. 90m, 12h, 30d or 2w")
    return int(match["amount"]) * SECONDS[match["unit"]]


@dataclass(frozen=True)
class MintedToken:
    token: str
    claims: dict[str, Any]


def mint_token(
    api_key: str, collections: list[str], read_only: bool, ttl_seconds: int, now: float | None = None
) -> MintedToken:
    """A token, signed with the server's API key (HS256), for exactly these collections."""
    if looks_like_token(api_key):
        raise ConfigError("sign tokens with the server's API key (QRAG_QDRANT_API_KEY), not with a token")
    issued = int(time.time() if now is None else now)
    claims = {
        "exp": issued + ttl_seconds,
        "access": [{"collection": name, "access": "r" if read_only else "rw"} for name in collections],
    }
    return MintedToken(jwt.encode(claims, api_key, algorithm="HS256"), claims)


def looks_like_token(key: str) -> bool:
    return key.count(".") == 2 and key.startswith("eyJ")


def token_claims(key: str) -> dict[str, Any] | None:
    """The claims of a JWT used as the API key (not verified: the server does that), else None."""
    if not looks_like_token(key):
        return None
    try:
        return jwt.decode(key, options={"verify_signature": False})
    except jwt.InvalidTokenError:
        return None


def is_collection_scoped(key: str | None) -> bool:
    """True for a token limited to named collections: it may not list other namespaces."""
    claims = token_claims(key) if key else None
    return claims is not None and isinstance(claims.get("access"), list)
