"""Team keys: a bearer key maps to exactly one namespace and a role: read (query), read-write
(also ingest uploaded files) or admin (also ingest a path on the server's own disk).

The key file (TOML, ``service.keys``) holds each key's SHA-256, never the key: whoever reads
the file cannot call the service. One design serves both stores: the embedded one has no
token system of its own, and on a server the service holds the Qdrant key itself, so teams
never see it. ``qrag-qdrant key add`` mints a key and prints it once.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import ConfigError

Role = Literal["read", "read-write", "admin"]
ROLES: tuple[Role, ...] = ("read", "read-write", "admin")
KEY_PREFIX = "qrag_"


@dataclass(frozen=True)
class Principal:
    namespace: str
    role: Role

    @property
    def can_write(self) -> bool:
        return self.role in ("read-write", "admin")

    @property
    def can_read_server_paths(self) -> bool:
        return self.role == "admin"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class KeyFile:
    path: Path
    principals: dict[str, Principal]  # by the key's sha256

    @classmethod
    def load(cls, path: Path) -> KeyFile:
        """The keys in ``path``; a missing file means no team can call the service yet."""
        if not path.is_file():
            return cls(path, {})
        try:
            entries = tomllib.loads(path.read_text(encoding="utf-8")).get("keys", [])
            principals = {str(e["sha256"]): Principal(str(e["namespace"]), e["role"]) for e in entries}
        except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
            raise ConfigError(f"key file {path} is not valid: {exc}") from None
        bad = [p.role for p in principals.values() if p.role not in ROLES]
        if bad:
            raise ConfigError(f"key file {path}: role {bad[0]!r} is not one of {', '.join(ROLES)}")
        return cls(path, principals)

    def principal(self, key: str) -> Principal | None:
        wanted = digest(key)
        for known, principal in self.principals.items():
            if hmac.compare_digest(known, wanted):
                return principal
        return None

    def add(self, namespace: str, role: Role) -> str:
        """Mint a key for ``namespace``, append its hash to the file, and return the key (shown once)."""
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:
            file.write(f'\n[[keys]]\nnamespace = "{namespace}"\nrole = "{role}"\nsha256 = "{digest(key)}"\n')
        self.principals[digest(key)] = Principal(namespace, role)
        return key
