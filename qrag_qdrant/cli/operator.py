"""The operator's commands: ``serve`` (the service, one per store), ``audit`` (the audit log's
lines, filtered by namespace, key, event and time) and ``usage`` (what each namespace and key
used, per day)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from ..config.settings import load_settings
from ..errors import ConfigError
from ..plugins import install_hint
from ..service.auth.keys import KeyFile
from ..store.files import serving
from .logs import start_up_line, uvicorn_log_config
from .options import ConfigOption, JsonOption, StoreOption
from .render import err, friendly_errors, plural, print_json, print_table

COLUMNS = ("time", "event", "outcome", "key", "namespace", "client", "request_id")


def moment(value: str | None, option: str) -> datetime | None:
    """An ISO time (``2026-11-26``, ``2026-11-26T08:00``; UTC unless it says) or an age (``30m``,
    ``2h``, ``7d``) before now."""
    if value is None:
        return None
    units = {"m": "minutes", "h": "hours", "d": "days"}
    if value[-1:] in units and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(**{units[value[-1]]: int(value[:-1])})
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{option} {value!r}: give a time like 2026-11-26T08:00 or an age like 2h or 7d") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def matches(
    line: dict[str, Any], wanted: dict[str, str | None], since: datetime | None, until: datetime | None
) -> bool:
    if any(value is not None and line.get(field) != value for field, value in wanted.items()):
        return False
    at = datetime.fromisoformat(str(line.get("time", "")).replace("Z", "+00:00")) if line.get("time") else None
    return at is not None and (since is None or at >= since) and (until is None or at < until)


@friendly_errors
def audit(
    namespace: Annotated[str | None, typer.Option("--namespace", help="only this namespace's lines")] = None,
    key: Annotated[str | None, typer.Option("--key", help="only this key id's lines (`key list` shows ids)")] = None,
    event: Annotated[
        str | None, typer.Option("--event", help="query, answer, ingest, remove, key, refused or mcp")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="from this time, or this long ago (2h, 7d)")] = None,
    until: Annotated[str | None, typer.Option("--until", help="before this time, or this long ago")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="the most recent lines to show")] = 100,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the service's audit log (service.audit_log), newest last."""
    from ..service.audit import read_lines

    service = load_settings(config).service
    wanted = {"namespace": namespace, "key": key, "event": event}
    start, end = moment(since, "--since"), moment(until, "--until")
    if not service.audit_log.exists():
        raise ConfigError(f"no audit log at {service.audit_log} (service.audit_log); `serve` writes it")
    lines = [line for line in read_lines(service.audit_log, service.audit_backups) if matches(line, wanted, start, end)]
    lines = lines[-limit:]
    if as_json:
        print_json(lines)
        return
    from rich.table import Table

    table = Table(*COLUMNS, "details", title=f"{len(lines)} audit lines")
    for line in lines:
        details = {k: v for k, v in line.items() if k not in COLUMNS}
        table.add_row(*(str(line.get(column) or "-") for column in COLUMNS), json.dumps(details, ensure_ascii=False))
    print_table(table)


@friendly_errors
def usage(
    since: Annotated[
        str | None, typer.Option("--since", help="from this day, or this long ago (7d) [default: 30d]")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="before this day, or this long ago")] = None,
    by_key: Annotated[bool, typer.Option("--by-key", help="a row per key, not per namespace")] = False,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show what each namespace (or key) used per day: queries, answers, tokens, ingested bytes and chunks."""
    from ..service.usage import COUNTS, UsageLedger

    service = load_settings(config).service
    if not service.usage_db.exists():
        raise ConfigError(f"no usage yet at {service.usage_db} (service.usage_db); `serve` counts it")
    start, end = moment(since or "30d", "--since"), moment(until, "--until")
    ledger = UsageLedger(service.usage_db, {})
    try:
        rows = ledger.report(start.date() if start else None, end.date() if end else None, by_key)
    finally:
        ledger.close()
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    keys = ("day", "namespace", *(("key",) if by_key else ()))
    table = Table(
        *keys,
        *(name.replace("_", " ") for name in COUNTS),
        title=f"usage per {'key' if by_key else 'namespace'} and day",
    )
    for row in rows:
        table.add_row(*(str(row[name]) for name in (*keys, *COUNTS)))
    print_table(table)


@friendly_errors
def serve(
    ctx: typer.Context,
    host: Annotated[str | None, typer.Option("--host", help="address to listen on (service.host)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="port (service.port)")] = None,
    preload: Annotated[
        bool,
        typer.Option(
            "--preload",
            help="load the answer model before serving (service.preload_model): no first "
            "answer waits for it, and /readyz?answers=true says when it is in",
        ),
    ] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) with the models and the store kept warm; each team's
    bearer key (qrag-qdrant key add) confines it to its namespace."""
    try:
        import uvicorn

        from ..service.app import create_app
        from ..service.server import server_options
    except ImportError:
        raise ConfigError(f"the service needs its extra: {install_hint('service')}") from None
    settings = load_settings(config, store=store, service={"preload_model": True} if preload else None)
    keys = KeyFile.load(settings.service.keys)
    host, port = host or settings.service.host, port or settings.service.port
    log_format = (ctx.obj or {}).get("log_format", "text")

    def say(message: str, level: int = logging.INFO) -> None:
        err.print(start_up_line(log_format, message, level), markup=False)

    say(f"key file: {settings.service.keys.resolve()} ({plural(len(keys.entries()), 'key')})")
    if not keys.entries():
        say("warning: no keys yet: add one with `qrag-qdrant key add --namespace NAME`", logging.WARNING)
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    log_config = uvicorn_log_config(log_format)
    with serving(Path(settings.store), url):
        say(f"serving on {url}/ (the web page; API docs at {url}/docs); Ctrl-C stops")
        uvicorn.run(create_app(settings, keys), host=host, port=port, **server_options(settings), log_config=log_config)
