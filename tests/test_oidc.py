"""Sign-in through a real OpenID Connect provider (``oidc-provider`` under node, see
``oidc_provider``): its tokens sign a caller in to the namespace its groups map to, beside the
team keys; forged, expired and misdirected tokens are refused with a reason; a rotated signing key
is read again; and the audit log has the sign-in, never the token."""

from __future__ import annotations

import base64
import json
import re

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.errors import ConfigError
from qrag_qdrant.service.auth.oidc import OidcSignIn, ProviderKeys

from .oidc_provider import SigningKey, oidc_provider
from .service_helpers import BEES, free_port, sources

pytest.importorskip("fastapi", reason="the service extra brings FastAPI")

GEARS = "What modelled the motions of the Sun and Moon with bronze gears?"


@pytest.fixture
def provider(tmp_path):
    with oidc_provider(tmp_path) as started:
        yield started


def bearer(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def ask(client, token: str, question: str = BEES, **headers: str):
    return client.post("/v1/query", json={"question": question, "generate": False}, headers=bearer(token, **headers))


def test_a_providers_token_signs_in_where_its_groups_map_and_keys_keep_working(teams, provider, tmp_path):
    start, auth = teams
    log = tmp_path / "audit.jsonl"
    reader, writer = provider.token("robot-a"), provider.token("robot-a-writer")
    with start(service={"oidc": provider.settings(), "audit_log": log}) as client:
        evidence = [ask(client, reader) for _ in range(2)]
        refused_upload = client.post("/v1/ingest", files=[("files", ("x.txt", b"text"))], headers=bearer(reader))
        upload = client.post("/v1/ingest", files=[("files", ("owls.txt", b"Barn owls hunt."))], headers=bearer(writer))
        by_key = ask(client, auth["b"]["Authorization"].split()[1], GEARS)
    assert [e.status_code for e in evidence] == [200, 200]
    assert sources(evidence[0].json()) and "gears.txt" not in sources(evidence[0].json())  # team a's documents
    assert refused_upload.status_code == 403  # team-a-readers: read
    assert upload.status_code == 202, upload.text  # team-a-writers beats team-a-readers: read-write
    assert by_key.status_code == 200 and sources(by_key.json()) == {"gears.txt"}
    written = [json.loads(line) for line in log.read_text().splitlines()]
    sign_ins = [line for line in written if line["event"] == "sign-in"]
    assert [(s["key"], s["namespace"], s["role"]) for s in sign_ins] == [
        ("oidc:robot-a", "team-a", "read"),  # once: the second request's token is remembered
        ("oidc:robot-a-writer", "team-a", "read-write"),
    ]
    queries = [line for line in written if line["event"] == "query"]
    assert {q["key"] for q in queries} >= {"oidc:robot-a"}
    text = log.read_text()
    assert reader not in text and writer not in text and reader.split(".")[2] not in text  # never a token


def test_forged_expired_and_misdirected_tokens_are_refused_with_a_reason(teams, provider):
    start, _ = teams
    key = provider.keys[0]
    real = provider.token("robot-a")
    head, payload, signature = real.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["groups"] = ["team-b-readers"]
    tampered = ".".join([head, base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode(), signature])
    public_pem = key.private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    groups = {"groups": ["team-a-readers"]}
    unsigned = jwt.encode(provider.claims(**groups), None, algorithm="none", headers={"kid": key.kid})
    hmac_with_public_key = _hs256(provider.claims(**groups), public_pem, key.kid)
    forged = {
        "expired": (key.sign(provider.claims(exp=1_000_000_000, iat=999_999_000, **groups)), "expired"),
        "not yet valid": (key.sign(provider.claims(nbf=4_000_000_000, **groups)), "not valid yet"),
        "another audience": (key.sign(provider.claims(aud="https://other.test", **groups)), "another audience"),
        "another issuer": (key.sign(provider.claims(iss="https://evil.test", **groups)), "another issuer"),
        "no sub": (key.sign({k: v for k, v in provider.claims(**groups).items() if k != "sub"}), "claim is missing"),
        "tampered": (tampered, "signature does not match"),
        "alg none": (unsigned, "'none'"),
        "HS256 with the public key": (hmac_with_public_key, "'HS256'"),
        "a key the provider does not publish": (SigningKey("key-1").sign(provider.claims(**groups)), "signature"),
        "an unknown kid": (SigningKey("key-9").sign(provider.claims(**groups)), "does not publish"),
        "not a JWT": ("not-a-token", "well-formed"),
    }
    with start(service={"oidc": provider.settings(jwks_refresh_seconds=0)}) as client:
        answers = {name: ask(client, token) for name, (token, _) in forged.items()}
        assert ask(client, real).status_code == 200  # the real one, for contrast
    for name, (_, reason) in forged.items():
        answer = answers[name]
        assert answer.status_code == 401, (name, answer.text)
        assert answer.json()["code"] == "unauthorized" and reason in answer.json()["message"], (name, answer.json())


def _hs256(claims: dict, secret: bytes, kid: str) -> str:
    """A token "signed" with HMAC using the provider's public key as the secret (the old key
    confusion attack); PyJWT itself refuses to encode it, so it is assembled by hand."""
    import hashlib
    import hmac

    def part(data: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    signing_input = f"{part({'alg': 'HS256', 'typ': 'JWT', 'kid': kid})}.{part(claims)}"
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{base64.urlsafe_b64encode(mac).rstrip(b'=').decode()}"


def test_groups_that_map_to_no_namespace_get_403_and_several_need_the_header(teams, provider, tmp_path):
    start, _ = teams
    log = tmp_path / "audit.jsonl"
    both = provider.keys[0].sign(provider.claims(sub="both", groups=["team-a-readers", "team-b-readers"]))
    with start(service={"oidc": provider.settings(), "audit_log": log}) as client:
        contractor = ask(client, provider.token("robot-x"))
        unnamed = ask(client, both)
        team_b = ask(client, both, GEARS, **{"X-Qrag-Namespace": "team-b"})
        not_granted = ask(client, both, **{"X-Qrag-Namespace": "team-c"})
    assert contractor.status_code == 403 and contractor.json()["code"] == "forbidden"
    assert "groups claim gives no access to any namespace" in contractor.json()["message"]
    assert (
        unnamed.status_code == 403 and "team-a, team-b: name one in the X-Qrag-Namespace" in unnamed.json()["message"]
    )
    assert team_b.status_code == 200 and sources(team_b.json()) == {"gears.txt"}
    assert not_granted.status_code == 403 and "'team-c'" in not_granted.json()["message"]
    refusals = [json.loads(line) for line in log.read_text().splitlines() if '"refused"' in line]
    assert refusals[0]["status"] == 403 and "no access" in refusals[0]["reason"]


def test_a_rotated_signing_key_is_read_again_and_the_old_one_stops_working(teams, provider):
    start, _ = teams
    old_key, new_key = provider.keys[0], SigningKey("key-2")
    with start(service={"oidc": provider.settings(jwks_refresh_seconds=0)}) as client:
        assert ask(client, provider.token("robot-a")).status_code == 200  # key-1 read and kept
        provider.rotate([new_key])
        rotated = provider.token("robot-a")
        assert jwt.get_unverified_header(rotated)["kid"] == "key-2"
        assert ask(client, rotated).status_code == 200  # an unknown kid: the keys are read again
        old = ask(client, old_key.sign(provider.claims(groups=["team-a-readers"])))
    assert old.status_code == 401 and "does not publish" in old.json()["message"]


def test_unknown_key_ids_read_the_providers_keys_at_most_once_per_refresh_period(provider, monkeypatch):
    now = [1000.0]
    settings = load_settings(service={"oidc": provider.settings(jwks_refresh_seconds=30)}).service.oidc
    keys = ProviderKeys(settings, clock=lambda: now[0])
    reads = []
    read = keys._read
    monkeypatch.setattr(keys, "_read", lambda: (reads.append(now[0]), read()))
    sign_in = OidcSignIn(settings, keys)
    for kid in ("invented-1", "invented-2", "invented-3"):
        with pytest.raises(Exception, match="does not publish"):
            sign_in.claims(SigningKey(kid).sign(provider.claims(groups=["team-a-readers"])))
    assert reads == [1000.0]  # the first read; the invented kids inside the period read nothing
    now[0] += 31
    with pytest.raises(Exception, match="does not publish"):
        sign_in.claims(SigningKey("invented-4").sign(provider.claims()))
    assert reads == [1000.0, 1031.0]


@pytest.mark.slow
def test_an_unreachable_provider_is_a_503_and_keys_still_work(teams):
    start, auth = teams
    nobody = f"http://127.0.0.1:{free_port()}"
    settings = {"issuer": nobody, "audience": "https://qrag.test/api", "mapping": {"g": "team-a:read"}}
    token = SigningKey("k").sign({"iss": nobody, "aud": "https://qrag.test/api", "sub": "s", "exp": 4_000_000_000})
    with start(service={"oidc": settings}) as client:
        down = ask(client, token)
        by_key = ask(client, auth["a"]["Authorization"].split()[1])
    assert down.status_code == 503 and down.json()["code"] == "identity_provider_unavailable"
    assert "ConnectError" in down.json()["message"] and "127.0.0.1" not in down.json()["message"]
    assert by_key.status_code == 200


@pytest.mark.parametrize(
    ("oidc", "message"),
    [
        ({"issuer": "http://idp.example.com", "audience": "a"}, "use https"),
        ({"issuer": "https://idp.example.com"}, "audience is needed"),
        ({"issuer": "https://idp.example.com", "audience": "a", "algorithms": ["none"]}, "not ['none']"),
        ({"issuer": "https://idp.example.com", "audience": "a", "algorithms": ["HS256"]}, "not ['HS256']"),
        ({"issuer": "https://idp.example.com", "audience": "a", "mapping": {"g": "team-a"}}, "namespace:role"),
        ({"issuer": "https://idp.example.com", "audience": "a", "mapping": {"g": "Team A:read"}}, "namespace:role"),
    ],
)
def test_a_sign_in_setting_that_cannot_work_is_a_config_error(oidc, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_settings(service={"oidc": oidc})


def test_the_page_learns_how_to_sign_in_only_when_a_client_is_set(teams, provider):
    start, _ = teams
    with start(service={"oidc": provider.settings()}) as client:
        assert client.get("/sign-in.json").status_code == 404
    with start(service={"oidc": provider.settings(client_id="qrag-web")}) as client:
        page = client.get("/sign-in.json")
        policy = client.get("/").headers["content-security-policy"]
    assert page.json() == {"issuer": provider.issuer, "client_id": "qrag-web", "scope": "openid"}
    assert f"connect-src 'self' {provider.issuer};" in policy
