"""The service's config section: keys, sign-in, limits, the audit log, usage and quotas."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from .names import NAMESPACE_PATTERN
from .sections import Section
from .sources import DeclaredSource
from .values import parse_rate

#: what a caller may do in its namespace: read (query), read-write (also ingest uploaded files and
#: remove documents) or admin (also ingest a path on the server's own disk)
Role = Literal["read", "read-write", "admin"]
ROLES: tuple[Role, ...] = ("read", "read-write", "admin")
#: what a token may be signed with: public-key algorithms only, so a key the provider publishes can
#: never be used as a shared secret (and "none" is never among them)
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class OidcSettings(Section):
    """Sign-in through the company's identity provider, beside the keys: a bearer token (a JWT access
    token) is checked against the provider's published keys, and its groups claim decides the
    namespace and role."""

    issuer: str | None = Field(
        None,
        description="the identity provider's issuer URL (https; http only on a loopback address), exactly as its "
        "tokens' iss claim has it; unset: keys only",
    )
    audience: str | None = Field(
        None, description="the aud claim a token must hold: the id the provider gives this service"
    )
    claim: str = Field(
        "groups",
        description="the token claim whose values are mapped (a string or a list; a dotted path reads nested claims)",
    )
    groups_claim: str = Field(
        "groups",
        description="the token claim whose values are the groups it reads documents as (a string or a list; a "
        "dotted path reads nested claims); values that are not group names are ignored",
    )
    mapping: dict[str, str] = Field(
        default_factory=dict,
        description='claim value -> "namespace:role": "team-a-writers" = "team-a:read-write"; a token none of whose '
        "values is mapped gets 403",
    )
    algorithms: tuple[str, ...] = Field(
        ("RS256", "ES256"), description=f"signature algorithms accepted, among {', '.join(SIGNING_ALGORITHMS)}"
    )
    leeway_seconds: NonNegativeInt = Field(60, description="clock skew allowed on exp, nbf and iat")
    jwks_cache_seconds: PositiveInt = Field(
        300, description="how long the provider's signing keys are kept before they are read again"
    )
    jwks_refresh_seconds: NonNegativeFloat = Field(
        30.0,
        description="a token signed by a key the kept set lacks (a rotated key) reads the set again, at most this "
        "often",
    )
    timeout_seconds: PositiveFloat = Field(5.0, description="how long a request to the provider may take")
    client_id: str | None = Field(
        None,
        description="the web page's client id at the provider (a public client: authorization code with PKCE); "
        "unset: the page asks for a key",
    )
    scope: str = Field("openid", description="the scopes the web page asks for")

    @model_validator(mode="after")
    def _complete(self) -> OidcSettings:
        if self.issuer is None:
            return self
        address = urlsplit(self.issuer)
        if address.scheme != "https" and not (address.scheme == "http" and address.hostname in LOOPBACK):
            raise ValueError(f"issuer {self.issuer!r}: use https (http only on a loopback address)")
        if not self.audience:
            raise ValueError("audience is needed with issuer")
        unknown = [alg for alg in self.algorithms if alg not in SIGNING_ALGORITHMS]
        if unknown or not self.algorithms:
            raise ValueError(f"algorithms: use {', '.join(SIGNING_ALGORITHMS)}, not {unknown or 'none'}")
        for value, grant in self.mapping.items():
            namespace, _, role = grant.rpartition(":")
            if not NAMESPACE_PATTERN.match(namespace) or role not in ROLES:
                raise ValueError(
                    f'mapping[{value!r}] = {grant!r}: write "namespace:role", role one of ' + ", ".join(ROLES)
                )
        return self

    @property
    def page_signs_in(self) -> bool:
        """The web page can sign in through the provider: it has an issuer and a client id there."""
        return bool(self.issuer and self.client_id)

    def grants(self) -> dict[str, tuple[str, Role]]:
        """The mapping as claim value -> (namespace, role)."""
        pairs = {value: grant.rpartition(":") for value, grant in self.mapping.items()}
        return {value: (namespace, cast(Role, role)) for value, (namespace, _, role) in pairs.items()}


class Quota(Section):
    """What one namespace, or one key (``"key:<id>"``), may use; unset: no cap."""

    queries_per_day: PositiveInt | None = Field(None, description="questions asked, evidence-only ones included")
    answers_per_day: PositiveInt | None = Field(None, description="answers the model writes")
    tokens_per_day: PositiveInt | None = Field(None, description="prompt and completion tokens of answers")
    tokens_per_month: PositiveInt | None = Field(None, description="the same, per calendar month (UTC)")
    ingest_bytes_per_day: PositiveInt | None = Field(
        None, description="bytes uploaded for ingest and read by the namespace's sources' syncs"
    )


#: the service's own files, in the store's folder unless set, so that `serve`, `key add` and `audit`
#: find them from whatever folder they run in
STATE_FILES = {"keys": ".keys.toml", "audit_log": ".audit.jsonl", "usage_db": ".usage.sqlite3"}
#: where they were kept before, in the working folder: read, with a warning, while only they exist
FORMER_STATE_FILES = {"keys": ".qrag-keys.toml", "audit_log": ".qrag-audit.jsonl", "usage_db": ".qrag-usage.sqlite3"}


def state_file(store: Path, name: str) -> Path:
    """Where the service keeps its file ``name`` (``STATE_FILES``) when it is not set: in ``store``,
    or in the working folder where only the former file exists there (a warning says to move it)."""
    placed, former = store / STATE_FILES[name], Path(FORMER_STATE_FILES[name])
    if former.exists() and not placed.exists():
        warnings.warn(
            f"service.{name}: {former} in the working folder is read; move it to {placed}, where it is kept "
            f"unless service.{name} is set",
            FutureWarning,
            stacklevel=2,
        )
        return former
    return placed


class ServiceSettings(Section):
    """``qrag-qdrant serve``."""

    host: str = Field("127.0.0.1", description="the address `serve` listens on")
    port: int = Field(8000, ge=1, le=65535, description="the port `serve` listens on")
    keys: Path = Field(
        Path(".qrag/.keys.toml"),
        description="the key file: each team's key (hashed), namespace and role; `qrag-qdrant key add` writes it; "
        "unset: .keys.toml in the store's folder (store)",
    )
    oidc: OidcSettings = Field(default_factory=OidcSettings, description="sign-in through an OpenID Connect provider")
    ingest_roots: dict[str, list[Path]] = Field(
        default_factory=dict,
        description='folders on the server an admin key may ingest from, per namespace ("*": every namespace): '
        '[service.ingest_roots] team-a = ["/srv/docs/team-a"]; a path is resolved (links, "..") before it is '
        "checked; none: uploads are the only way in",
    )
    sources: list[DeclaredSource] = Field(
        default_factory=list,
        description='sources the service syncs, each for a namespace: [[service.sources]] namespace = "team-a" '
        'name = "handbook" kind = "git" location = "https://git.example.org/handbook.git" every = 600; a folder, '
        "or a repository on the server's disk, must be inside the namespace's ingest_roots, a URL must start with "
        "one of source_urls",
    )
    source_urls: list[str] = Field(
        default_factory=list,
        description='the URLs a source may be fetched from, by prefix ("https://git.example.org/"); none: no URL',
    )
    max_body_bytes: PositiveInt = Field(1 << 20, description="a larger request body is refused with 413")
    max_upload_bytes: PositiveInt = Field(256 << 20, description="the same for the files of one POST /v1/ingest")
    cache_entries: NonNegativeInt = Field(
        1024, description="repeated questions answered from the result cache (per service, all namespaces); 0: off"
    )
    max_queued_upload_bytes: PositiveInt = Field(
        1 << 30, description="uploads one namespace may have waiting for or in an ingest; more is refused with 413"
    )
    rate_query: str | None = Field(
        "120/minute",
        description="queries per key: COUNT/second|minute|hour, a token "
        "bucket (COUNT at once, refilled at that rate); None: no limit",
    )
    rate_ingest: str | None = Field("20/minute", description="ingest jobs per key, the same way")
    rate_feedback: str | None = Field("30/minute", description="feedback ratings per key, the same way")
    rate_lookup: str | None = Field(
        "600/minute", description="lookups per key (a document, the collections, a job's progress), the same way"
    )
    queue_capacity: PositiveInt = Field(
        64,
        description="answers that may wait for the model at once, all teams together (taken in turn, team by "
        "team); past that, 503 with Retry-After",
    )
    queue_share: float = Field(
        0.5,
        gt=0.0,
        le=1.0,
        description="the share of queue_capacity one namespace may hold (at least one place): a team's burst is "
        "refused past it, so another team's answer still finds room; 1: no cap",
    )
    header_timeout: PositiveFloat = Field(
        10.0,
        description="seconds a request has to send its headers, after its connection opens or the previous "
        "response ends; a slower connection is closed",
    )
    body_timeout: PositiveFloat = Field(
        10.0,
        description="seconds a request body has to arrive, plus one for every body_min_rate bytes it brings; a "
        "slower body gets 408 and its connection is closed",
    )
    body_min_rate: PositiveInt = Field(
        16384, description="bytes per second a long body must keep up to extend its deadline (see body_timeout)"
    )
    jobs_kept: PositiveInt = Field(
        1000, description="finished ingest jobs whose records are kept, the newest (a running job is always kept)"
    )
    jobs_kept_days: PositiveFloat = Field(7.0, description="finished ingest jobs older than this are forgotten")
    job_threads: PositiveInt | None = Field(
        None,
        description="onnxruntime threads the service's ingest and sync jobs embed documents with; None: one fewer "
        "than the cores (at least 1), so a job leaves a core to every team's questions",
    )
    job_niceness: int = Field(
        19,
        ge=0,
        le=19,
        description="how much lower than questions' the CPU priority of ingest and sync jobs is (a Linux nice "
        "value, per thread): where a job and a team's questions want the same core, the questions win, and an "
        "idle core is the job's; 0: jobs run at the questions' priority",
    )
    preload_model: bool = Field(
        False,
        description="load the answer model when the service starts (serve --preload), not on the first answer: "
        "/readyz?answers=true is ready once it is in",
    )
    openai_mark_in_text: bool = Field(
        True,
        description="the OpenAI-compatible endpoint writes an answer's mark other than supported as one plain line "
        "under the answer ('Not supported: ...', 'Ambiguous: ...'), and how an answer computed from the documents "
        "was computed ('Computed from the values the passages state: ...'), so a chat client that shows only the "
        "message text shows them; false: the text is the answer alone. Both are always in the response's qrag field",
    )
    stream_ping_seconds: PositiveFloat = Field(
        15.0,
        description="a streamed answer sends a comment line this often while it has nothing else to send (it "
        "waits for the model), so proxies that cut idle connections keep it open",
    )
    max_connections: PositiveInt = Field(
        1000, description="connections the service holds at once; past that it answers 503"
    )
    drain_seconds: PositiveFloat = Field(
        30.0,
        description="on SIGTERM: how long answers in flight and ingest jobs "
        "may take to finish; jobs still running then stop and read 'interrupted'",
    )
    audit: bool = Field(
        True,
        description="keep an audit log: one JSON line per query, answer, ingest, removal, key "
        "change and refused request",
    )
    audit_log: Path = Field(
        Path(".qrag/.audit.jsonl"),
        description="the audit log's file; rotated files get .1, .2, ...; unset: .audit.jsonl in the store's folder",
    )
    audit_questions: bool = Field(
        False, description="write each question's text into the audit log; false: only its sha256"
    )
    audit_max_bytes: PositiveInt = Field(10 << 20, description="the audit log is rotated when it reaches this size")
    audit_backups: NonNegativeInt = Field(5, description="rotated audit files kept; older ones are deleted")
    usage_db: Path = Field(
        Path(".qrag/.usage.sqlite3"),
        description="usage per namespace, key and day (SQLite), kept across restarts; unset: .usage.sqlite3 in the "
        "store's folder",
    )
    quotas: dict[str, Quota] = Field(
        default_factory=dict,
        description='caps per namespace, or per key as "key:<id>": [service.quotas.team-a] answers_per_day = 500',
    )
    metrics: bool = Field(
        True, description="serve /metrics (Prometheus): latency histograms, answers, refusals, the queue, the process"
    )
    metrics_per_namespace: bool = Field(
        False,
        description="/metrics also gives today's usage per namespace (at most 100, the busiest): it then names "
        "the teams to whoever can reach it",
    )
    quota_fallback: Literal["refuse", "evidence"] = Field(
        "refuse",
        description="a question over its answer or token quota: refuse: 429 quota_exceeded; evidence: the "
        "evidence without an answer",
    )

    @model_validator(mode="after")
    def _rates_parse(self) -> ServiceSettings:
        for rate in (self.rate_query, self.rate_ingest, self.rate_feedback, self.rate_lookup):
            if rate is not None:
                parse_rate(rate)
        return self

    def document_threads(self) -> int:
        """``job_threads``, or one fewer than the cores this process may run on (at least 1)."""
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return self.job_threads or max(1, cores - 1)

    def ingest_root_of(self, namespace: str, path: Path) -> Path | None:
        """The configured root that holds ``path`` for ``namespace`` (both resolved: links and ".."
        followed), or None when no root does."""
        resolved = path.resolve()
        for root in [*self.ingest_roots.get(namespace, []), *self.ingest_roots.get("*", [])]:
            if resolved.is_relative_to(root.resolve()):
                return root
        return None

    def rates(self) -> dict[str, tuple[int, float] | None]:
        """Each kind of request's (burst, refill per second), or None: unlimited."""
        return {
            kind: parse_rate(rate) if rate else None
            for kind, rate in (
                ("query", self.rate_query),
                ("ingest", self.rate_ingest),
                ("feedback", self.rate_feedback),
                ("lookup", self.rate_lookup),
            )
        }
