"""``qrag-qdrant key``: the service's team keys, added, listed, revoked, rotated, and the groups
each reads as; every change is a line in the audit log."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..config.service import Role
from ..config.settings import Settings, load_settings
from ..errors import ConfigError
from ..service.auth.keys import KeyEntry, KeyFile, digest
from ..store.access import split_groups
from .options import ConfigOption, JsonOption, KeyOption
from .render import err, friendly_errors, key_view, out, print_json, print_table

GroupsOption = Annotated[
    str | None,
    typer.Option(
        "--groups",
        help="groups whose documents it reads besides everyone's, comma-separated (hr,legal); '*' reads every "
        "document [default: none]",
    ),
]
key_app = typer.Typer(no_args_is_help=True, rich_markup_mode=None, help="Team keys for `qrag-qdrant serve`.")


@key_app.command("add")
@friendly_errors
def key_add(
    namespace: Annotated[str, typer.Option("--namespace", help="the one namespace this key reaches")],
    read_only: Annotated[bool, typer.Option("--read-only", help="query only, no ingest")] = False,
    admin: Annotated[bool, typer.Option("--admin", help="may also ingest a folder on the server's disk")] = False,
    name: Annotated[str | None, typer.Option("--name", help="a name to list, revoke or rotate it by")] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="lifetime: 90m, 12h, 30d, 2w [default: none]")
    ] = None,
    groups: GroupsOption = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mint a key for a team's namespace, store its SHA-256 in the key file, and print the key once.
    A running service accepts it from its next request."""
    from ..store.tokens import parse_ttl

    if read_only and admin:
        raise ConfigError("--read-only and --admin exclude each other")
    settings = load_settings(config, namespace=namespace)  # validates the namespace's name
    role: Role = "read" if read_only else "admin" if admin else "read-write"
    keys = KeyFile.load(settings.service.keys)
    ttl = parse_ttl(expires, "--expires") if expires else None
    key = keys.add(settings.namespace, role, name, ttl, split_groups(groups))
    entry = next(e for e in keys.entries() if e.sha256 == digest(key))
    audited(settings, "added", entry)
    if as_json:
        print_json({"key": key, "key_file": str(settings.service.keys.resolve()), **key_view(entry)})
    else:
        sys.stdout.write(key + "\n")
        err.print(f"stored its SHA-256 in {settings.service.keys.resolve()} (service.keys)", markup=False)


def audited(settings: Settings, action: str, entry: KeyEntry) -> None:
    """A key change's line in the audit log (service.audit): who it is for, never the key."""
    from ..service.audit import append_now

    fields: dict[str, Any] = {"action": action, "key": entry.id, "name": entry.name, "namespace": entry.namespace}
    fields |= {"groups": list(entry.groups)} if entry.groups else {}
    append_now(settings.service, "key", **fields, role=entry.role)


@key_app.command("list")
@friendly_errors
def key_list(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """The keys in the key file: id, name, namespace, role, created and expiry; never a key or its hash."""
    entries = [key_view(entry) for entry in KeyFile.load(load_settings(config).service.keys).entries()]
    if as_json:
        print_json(entries)
        return
    from rich.table import Table

    columns = ("id", "name", "namespace", "role", "groups", "created", "expires")
    table = Table(*columns)
    for entry in entries:
        entry["groups"] = ",".join(entry["groups"])
        table.add_row(*(str(entry[column] or "-") for column in columns))
    print_table(table)


@key_app.command("revoke")
@friendly_errors
def key_revoke(which: KeyOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Remove a key: a running service refuses it from its next request."""
    settings = load_settings(config)
    entry = KeyFile.load(settings.service.keys).revoke(which)
    audited(settings, "revoked", entry)
    if as_json:
        print_json({"revoked": key_view(entry)})
    else:
        out.print(
            f"revoked key {entry.id}" + (f" ({entry.name})" if entry.name else "") + f" of namespace {entry.namespace}",
            markup=False,
        )


@key_app.command("groups")
@friendly_errors
def key_groups(
    which: KeyOption,
    groups: Annotated[
        str, typer.Option("--set", help="the groups whose documents it reads, comma-separated; '' for none; '*' all")
    ],
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set the groups a key reads as: a running service applies them from its next request."""
    settings = load_settings(config)
    entry = KeyFile.load(settings.service.keys).set_groups(which, split_groups(groups))
    audited(settings, "groups", entry)
    if as_json:
        print_json(key_view(entry))
    else:
        who = ", ".join(entry.groups) or "none: the documents everyone in the namespace may read"
        out.print(f"key {entry.id} of namespace {entry.namespace} reads as groups {who}", markup=False)


@key_app.command("rotate")
@friendly_errors
def key_rotate(which: KeyOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Replace a key with a new one (same namespace, role, name and lifetime) and print it once; the
    old key stops working at the service's next request."""
    settings = load_settings(config)
    key, entry = KeyFile.load(settings.service.keys).rotate(which)
    audited(settings, "rotated", entry)
    if as_json:
        print_json({"key": key, **key_view(entry)})
    else:
        sys.stdout.write(key + "\n")
