"""Team keys: a bearer key maps to exactly one namespace and a role: read (query), read-write
(also ingest uploaded files) or admin (also ingest a path on the server's own disk), and to the
groups whose documents it may read (``store/access.py``; ``*``: every document of the namespace).

The key file (TOML, ``service.keys``, mode 0600) holds each key's SHA-256, never the key:
whoever reads the file cannot call the service. One design serves both stores: the embedded
one has no token system of its own, and on a server the service holds the Qdrant key itself,
so teams never see it. ``qrag-qdrant key add`` mints a key and prints it once; ``key revoke``,
``key rotate`` and ``key list`` manage the rest.

A running service sees every change at its next request: each lookup compares the file's
modification time, size and inode with what it last read (one ``stat``), and reads it again
when they differ. Writes replace the file whole, under a lock, so a reader never sees half.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import tomllib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ...config.service import ROLES, Role
from ...errors import ConfigError, RequestError
from ...store.access import EVERY_GROUP, Access, checked_groups
from ...store.files import write_atomically

KEY_PREFIX = "qrag_"
#: what ``key add --name`` accepts: written into the TOML file as it is
KEY_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: how many hex digits of a key's SHA-256 name it in ``key list`` and ``key revoke``
ID_DIGITS = 12


@dataclass(frozen=True)
class Principal:
    namespace: str
    role: Role
    #: the key's id, for per-key rate limits; not part of who the caller is
    key_id: str = field(default="", compare=False)
    #: the groups whose documents it reads besides everyone's (``*``: every document)
    groups: tuple[str, ...] = ()

    @property
    def access(self) -> Access:
        return Access.of(self.groups)

    @property
    def readers(self) -> tuple[str, ...] | None:
        """The groups to read as (``QuorumRAG``'s ``readers``): None reads every document."""
        return self.access.key

    @property
    def can_write(self) -> bool:
        return self.role in ("read-write", "admin")

    @property
    def can_read_server_paths(self) -> bool:
        return self.role == "admin"


@dataclass(frozen=True)
class KeyEntry:
    """One key as the file holds it: everything but the key."""

    sha256: str
    namespace: str
    role: Role
    name: str | None = None
    created: datetime | None = None
    expires: datetime | None = None
    #: when ``key revoke`` ended it: kept, so a refused request with it is still attributed to it
    revoked: datetime | None = None
    #: the groups whose documents it reads besides everyone's
    groups: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return self.sha256[:ID_DIGITS]

    def expired(self, now: datetime) -> bool:
        return self.revoked is not None or (self.expires is not None and now >= self.expires)

    def toml(self) -> str:
        lines = [
            "[[keys]]",
            *(
                f'{name} = "{value}"'
                for name, value in (
                    ("name", self.name),
                    ("namespace", self.namespace),
                    ("role", self.role),
                    ("sha256", self.sha256),
                    ("created", self.created and self.created.isoformat(timespec="seconds")),
                    ("expires", self.expires and self.expires.isoformat(timespec="seconds")),
                    ("revoked", self.revoked and self.revoked.isoformat(timespec="seconds")),
                )
                if value is not None
            ),
            *([f"groups = [{', '.join(json.dumps(group) for group in self.groups)}]"] if self.groups else []),
        ]
        return "\n".join(lines) + "\n"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def bearer_key(authorization: str | None) -> str | None:
    """The key of an ``Authorization: Bearer <key>`` header, or None."""
    scheme, _, key = (authorization or "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


def _entry(raw: dict[str, object]) -> KeyEntry:
    role = raw["role"]
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    name = raw.get("name")
    if name is not None and not isinstance(name, str):
        raise ValueError(f"name {name!r} is not a string")
    groups = raw.get("groups", [])
    if not isinstance(groups, list) or not all(isinstance(group, str) for group in groups):
        raise ValueError(f"groups {groups!r} is not a list of strings")
    return KeyEntry(
        str(raw["sha256"]),
        str(raw["namespace"]),
        role,
        name,
        created=_when(raw.get("created")),
        expires=_when(raw.get("expires")),
        revoked=_when(raw.get("revoked")),
        groups=key_groups(groups),
    )


def key_groups(groups: Iterable[str]) -> tuple[str, ...]:
    """A key's groups, checked: group names, or ``*`` alone for every document."""
    named = sorted(set(groups))
    if EVERY_GROUP in named:
        if len(named) > 1:
            raise ConfigError(f"groups: {EVERY_GROUP!r} reads every document; name it alone")
        return (EVERY_GROUP,)
    try:
        return checked_groups(named, "groups")
    except RequestError as exc:
        raise ConfigError(str(exc)) from None


def _when(value: object) -> datetime | None:
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class KeyFile:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._entries: dict[str, KeyEntry] = {}  # by sha256
        self._seen: tuple[int, int, int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> KeyFile:
        """The keys in ``path``; a missing file means no team can call the service yet."""
        keys = cls(path)
        keys.refresh()
        return keys

    def refresh(self) -> None:
        """Read the file again if it changed since it was last read (or was removed)."""
        try:
            stat = self.path.stat()
            seen = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        except FileNotFoundError:
            seen = None
        with self._lock:
            if seen != self._seen or seen is None:
                self._entries = self._read() if seen is not None else {}
                self._seen = seen

    def _read(self) -> dict[str, KeyEntry]:
        try:
            entries = [_entry(raw) for raw in tomllib.loads(self.path.read_text(encoding="utf-8")).get("keys", [])]
        except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"key file {self.path} is not valid: {exc}") from None
        return {entry.sha256: entry for entry in entries}

    def entries(self) -> list[KeyEntry]:
        """The keys that still work or have expired: revoked ones are kept for the audit log only."""
        self.refresh()
        return [entry for entry in self._entries.values() if entry.revoked is None]

    def entry_of(self, key: str) -> KeyEntry | None:
        """The file's entry for ``key``, revoked and expired ones included (to name it in a refusal)."""
        self.refresh()
        wanted = digest(key)
        return next((entry for known, entry in self._entries.items() if hmac.compare_digest(known, wanted)), None)

    def principal(self, key: str, now: datetime | None = None) -> Principal | None:
        """Who ``key`` belongs to, if it is in the file and has not expired."""
        self.refresh()
        wanted, now = digest(key), now or datetime.now(UTC)
        found = None
        for known, entry in self._entries.items():  # compare every entry in constant time
            if hmac.compare_digest(known, wanted):
                found = entry
        if found is None or found.expired(now):
            return None
        return Principal(found.namespace, found.role, found.id, found.groups)

    def add(
        self,
        namespace: str,
        role: Role,
        name: str | None = None,
        ttl_seconds: int | None = None,
        groups: Iterable[str] = (),
    ) -> str:
        """Mint a key for ``namespace`` reading as ``groups``, store its hash, and return the key (shown once)."""
        if name is not None and not KEY_NAME.fullmatch(name):
            raise ConfigError(f"key name {name!r}: use 1-64 letters, digits, '.', '_' or '-'")
        checked = key_groups(groups)
        key, created = KEY_PREFIX + secrets.token_urlsafe(32), datetime.now(UTC).replace(microsecond=0)
        expires = created + timedelta(seconds=ttl_seconds) if ttl_seconds else None
        with self._writing() as entries:
            entries.append(KeyEntry(digest(key), namespace, role, name, created, expires, groups=checked))
        return key

    def set_groups(self, which: str, groups: Iterable[str]) -> KeyEntry:
        """The key whose id or name is ``which`` reads as ``groups`` from the service's next request."""
        checked = key_groups(groups)
        with self._writing() as entries:
            entry = self._find(entries, which)
            changed = replace(entry, groups=checked)
            entries[entries.index(entry)] = changed
        return changed

    def revoke(self, which: str) -> KeyEntry:
        """End the key whose id or name is ``which``: the service refuses it from its next request,
        and the audit log still names it when it is tried."""
        with self._writing() as entries:
            entry = self._find(entries, which)
            revoked = replace(entry, revoked=datetime.now(UTC).replace(microsecond=0))
            entries[entries.index(entry)] = revoked
        return revoked

    def rotate(self, which: str) -> tuple[str, KeyEntry]:
        """A new key in place of ``which``: same namespace, role, name and lifetime; the old one stops working."""
        key, created = KEY_PREFIX + secrets.token_urlsafe(32), datetime.now(UTC).replace(microsecond=0)
        with self._writing() as entries:
            old = self._find(entries, which)
            lifetime = old.expires - old.created if old.expires and old.created else None
            new = replace(old, sha256=digest(key), created=created, expires=created + lifetime if lifetime else None)
            entries[entries.index(old)] = new
        return key, new

    @staticmethod
    def _find(entries: list[KeyEntry], which: str) -> KeyEntry:
        found = [e for e in entries if (e.name == which or e.id == which) and e.revoked is None]
        if not found:
            raise ConfigError(f"no key with the id or name {which!r}; see: qrag-qdrant key list")
        if len(found) > 1:
            raise ConfigError(f"{len(found)} keys are named {which!r}: name one by its id (qrag-qdrant key list)")
        return found[0]

    @contextmanager
    def _writing(self) -> Iterator[list[KeyEntry]]:
        """The entries to change, written back whole (mode 0600) when the block ends, under a lock
        that other writers (another ``key add``) wait for."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # the lock is the key file's folder itself: a lock file of its own would be left beside the keys
        import fcntl  # POSIX only, and only key changes need it: the CLI's other commands start anywhere

        lock = os.open(self.path.parent, os.O_RDONLY)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = list(self._read().values()) if self.path.is_file() else []
            yield entries
            write_atomically(
                self.path,
                "# qrag-qdrant service keys: SHA-256 hashes only (qrag-qdrant key add/list/revoke/rotate)\n\n"
                + "\n".join(entry.toml() for entry in entries),
            )
        finally:
            os.close(lock)
        self.refresh()
