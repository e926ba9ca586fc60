"""A real OpenID Connect provider for the sign-in tests: ``oidc-provider`` (npm, a certified
implementation) under node, on a loopback port, with signing keys made here, so a test can also
sign tokens of its own with the provider's key (expired ones, for another audience) without waiting.

It needs ``node`` and ``npm ci --prefix tests/oidc`` (CI runs it); without them the tests skip."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

HERE = Path(__file__).parent / "oidc"
AUDIENCE = "https://qrag.test/api"
#: the client-credentials clients ("robots") and their groups
ROBOTS = {
    "robot-a": ["team-a-readers"],
    "robot-a-writer": ["team-a-writers", "team-a-readers"],
    "robot-x": ["contractors"],
}
#: people who sign in on the provider's login page (any password)
ACCOUNTS = {"alice": ["team-a-writers"]}
MAPPING = {"team-a-readers": "team-a:read", "team-a-writers": "team-a:read-write", "team-b-readers": "team-b:read"}


def needs_node() -> None:
    if shutil.which("node") is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
        pytest.skip("the OIDC provider needs node and: npm ci --prefix tests/oidc (CI runs it)")


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))

    def jwk(self) -> dict[str, Any]:
        return {**json.loads(RSAAlgorithm.to_jwk(self.private)), "kid": self.kid, "use": "sig", "alg": "RS256"}

    def sign(self, claims: dict[str, Any], **headers: Any) -> str:
        return jwt.encode(claims, self.private, algorithm="RS256", headers={"kid": self.kid, **headers})


@dataclass
class Provider:
    folder: Path
    redirect_uris: list[str]
    keys: list[SigningKey]
    port: int = 0
    issuer: str = ""
    process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        setup = self.folder / "provider.json"
        robots = {
            robot: {"secret": f"{robot}-secret-" + "x" * 32, "groups": groups} for robot, groups in ROBOTS.items()
        }
        setup.write_text(
            json.dumps(
                {
                    "port": self.port,
                    "jwks": [key.jwk() for key in self.keys],
                    "redirect_uris": self.redirect_uris,
                    "audience": AUDIENCE,
                    "accounts": ACCOUNTS,
                    "robots": robots,
                }
            )
        )
        self.process = subprocess.Popen(
            ["node", str(HERE / "provider.mjs"), str(setup)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # written once it listens: an observable event
        assert line, "the OIDC provider did not start"
        self.issuer = json.loads(line)["issuer"]
        self.port = int(self.issuer.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(30)
            self.process = None

    def rotate(self, keys: list[SigningKey]) -> None:
        """The provider again, on the same address, publishing and signing with ``keys`` only."""
        self.stop()
        self.keys = keys
        self.start()

    def token(self, robot: str) -> str:
        """An access token the provider issues to ``robot`` (the client-credentials grant)."""
        response = httpx.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "scope": "api"},
            auth=(robot, f"{robot}-secret-" + "x" * 32),
        )
        response.raise_for_status()
        return response.json()["access_token"]

    def claims(self, **changes: Any) -> dict[str, Any]:
        """Claims as the provider's tokens have them, for a token a test signs itself."""
        now = int(time.time())
        return {"iss": self.issuer, "aud": AUDIENCE, "sub": "crafted", "iat": now, "exp": now + 600, **changes}

    def settings(self, **changes: Any) -> dict[str, Any]:
        """``service.oidc`` for this provider."""
        return {"issuer": self.issuer, "audience": AUDIENCE, "mapping": MAPPING, **changes}


@contextmanager
def oidc_provider(folder: Path, redirect_uris: list[str] | None = None) -> Iterator[Provider]:
    needs_node()
    provider = Provider(folder, redirect_uris or ["http://127.0.0.1:9/"], [SigningKey("key-1")])
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()
