"""``qrag-qdrant sources``: the folders and git repositories a namespace follows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError

from ..errors import ConfigError, QragError
from ..store.access import groups_of
from .options import ConfigOption, JsonOption, NamespaceOption, ReadersOption, StoreOption, open_rag
from .render import friendly_errors, ingest_progress, out, plural, print_json, print_table

if TYPE_CHECKING:  # the sources' modules load when a command runs
    from ..ingest.sources import SyncResult

sources_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The folders and git repositories the namespace follows: add, list, sync, remove.",
)
NameArgument = Annotated[str, typer.Argument(help="the source's name, as `sources list` shows it")]


def option_pairs(pairs: list[str]) -> dict[str, str]:
    """``["branch=main"]`` -> ``{"branch": "main"}``; a pair without "=" is a one-line error."""
    found: dict[str, str] = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise ConfigError(f"--set {pair!r}: write KEY=VALUE (git: branch=main, under=docs)")
        found[key.strip()] = value.strip()
    return found


@sources_app.command("add")
@friendly_errors
def add_source(
    name: Annotated[str, typer.Argument(help="its name: its documents are named NAME/<path>")],
    kind: Annotated[str, typer.Argument(help="folder, git, or a plug-in's kind (`qrag-qdrant plugins`)")],
    location: Annotated[str, typer.Argument(help="the folder, or the repository's path or URL")],
    settings: Annotated[
        list[str] | None, typer.Option("--set", help="the kind's own setting, KEY=VALUE (git: branch, under)")
    ] = None,
    every: Annotated[
        float | None, typer.Option("--every", min=1, help="seconds between the service's syncs (default: on demand)")
    ] = None,
    watch: Annotated[
        bool, typer.Option("--watch", help="the service syncs it as soon as its folder changes (a folder source)")
    ] = False,
    readers: ReadersOption = None,
    sync: Annotated[bool, typer.Option("--sync/--no-sync", help="sync it at once")] = True,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Follow a folder or a git repository; its documents are synced now and on every `sources sync`."""
    from ..ingest.sources import SourceSpec

    try:
        spec = SourceSpec(
            name=name,
            kind=kind,
            location=location,
            options=option_pairs(settings or []),
            readers=None if readers is None else tuple(groups_of(readers)),
            every=every,
            watch=watch,
        )
    except ValidationError as exc:
        raise ConfigError(one_line(exc)) from None
    with open_rag(config, store, namespace) as rag:
        sources = rag.sources()
        recorded = sources.add(spec)
        if sync:
            try:
                with ingest_progress() as progress:
                    result = sources.sync(name, progress)
            except BaseException:  # a source whose first sync fails is not added
                sources.remove(name)
                raise
            recorded = recorded.model_copy(update={"last": result, "last_success": result})
    if as_json:
        print_json(recorded.model_dump(mode="json"))
        return
    out.print(f"Added source {name!r} ({kind} {location})", markup=False)
    if recorded.last is not None:
        print_result(name, recorded.last)


def one_line(exc: ValidationError) -> str:
    """A validation error's first complaint, as one line ("every: Input should be greater than 0")."""
    first = exc.errors()[0]
    return f"{'.'.join(map(str, first['loc']))}: {first['msg']}"


@sources_app.command("list")
@friendly_errors
def list_sources(
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the sources: kind, location, when each was last synced and what it did."""
    from rich.table import Table

    with open_rag(config, store, namespace) as rag:
        recorded = rag.sources().list()
        namespace = rag.settings.namespace
    if as_json:
        print_json({"sources": [r.model_dump(mode="json") for r in recorded]})
        return
    table = Table(title=f"{plural(len(recorded), 'source')} in namespace {namespace!r}")
    for column in ("name", "kind", "location", "synced", "last sync", "revision", "+ / ~ / -", "error"):
        table.add_column(column)
    for source in recorded:
        last, spec = source.last, source.spec
        table.add_row(
            spec.name,
            spec.kind,
            spec.location,
            ", ".join([*(["on change"] if spec.watch else []), *([f"every {spec.every:g} s"] if spec.every else [])])
            or "on demand",
            last.started_at.strftime("%Y-%m-%d %H:%M:%S") if last else "never",
            (last.revision or "-")[:12] if last else "-",
            f"{last.added} / {last.changed} / {last.removed}" if last else "-",
            (last.error or "-") if last else "-",
        )
    print_table(table)


@sources_app.command("sync")
@friendly_errors
def sync_sources(
    names: Annotated[list[str] | None, typer.Argument(help="the sources to sync (default: all)")] = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Bring the namespace to what its sources hold now: new and changed documents in, gone ones out."""
    with open_rag(config, store, namespace) as rag:
        sources = rag.sources()
        chosen = names or [recorded.spec.name for recorded in sources.list()]
        if not chosen:
            raise ConfigError(f"namespace {rag.settings.namespace!r} follows no source (sources add adds one)")
        results = {}
        for name in chosen:
            with ingest_progress() as progress:
                results[name] = sources.sync(name, progress)
    if as_json:
        print_json({name: result.model_dump(mode="json") for name, result in results.items()})
        return
    for name, result in results.items():
        print_result(name, result)


@sources_app.command("watch")
@friendly_errors
def watch_sources(
    names: Annotated[
        list[str] | None, typer.Argument(help="the folder sources to watch (default: all of them)")
    ] = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Sync folder sources now, then again whenever their folders change, until Ctrl-C."""
    import threading

    from ..ingest.sources.base import SOURCES, watched_folder
    from ..ingest.sources.watch import changed_sources

    with open_rag(config, store, namespace) as rag:
        sources = rag.sources()
        recorded = {r.spec.name: r.spec for r in sources.list()}
        chosen = names or [name for name, spec in recorded.items() if spec.kind == "folder"]
        if not chosen:
            raise ConfigError(f"namespace {rag.settings.namespace!r} follows no folder (sources add NAME folder PATH)")
        folders = {}
        for name in chosen:
            spec = sources.register.get(name).spec
            if (folder := watched_folder(SOURCES.get(spec.kind)(spec))) is None:
                raise ConfigError(f"source {name!r} ({spec.kind}) cannot be watched: sync it with sources sync")
            folders[name] = folder
        try:
            for changed in changed_sources(folders, threading.Event()):
                if not changed:  # watched from now on: what changed before syncs first
                    changed = set(folders)
                    out.print(f"Watching {plural(len(folders), 'folder')} (Ctrl-C stops)", markup=False)
                for name in sorted(changed):
                    try:
                        print_result(name, sources.sync(name))
                    except QragError as exc:  # one failed sync: the watch goes on
                        out.print(f"error: {name}: {exc}", markup=False)
        except KeyboardInterrupt:  # during a sync: what it wrote is whole, the next sync finishes it
            pass
        out.print("Stopped watching", markup=False)


@sources_app.command("remove")
@friendly_errors
def remove_source(
    name: NameArgument,
    keep_documents: Annotated[
        bool, typer.Option("--keep-documents", help="leave its documents in the namespace")
    ] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Stop following a source, and remove its documents from the namespace."""
    with open_rag(config, store, namespace) as rag:
        removed = rag.sources().remove(name, keep_documents)
    if as_json:
        print_json({"source": name, "documents_removed": removed})
        return
    out.print(f"Removed source {name!r} and {plural(removed, 'document')}", markup=False)


def print_result(name: str, result: SyncResult) -> None:
    revision = f" at {result.revision[:12]}" if result.revision else ""
    out.print(
        f"Synced {name!r}{revision} in {result.seconds:.1f} s: {result.added} added, {result.changed} changed, "
        f"{result.removed} removed, {result.unchanged} unchanged ({plural(result.files_read, 'file')} read)",
        markup=False,
    )
    for source, reason in result.skipped.items():
        out.print(f"  skipped {source}: {reason}", markup=False)
