"""``qrag-qdrant documents``: the namespace's documents, listed, shown and removed."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import ConfigError
from ..ingest.documents import MAX_PAGE, DocumentInfo
from ..store.access import groups_of
from .options import AsGroupsOption, ConfigOption, JsonOption, NamespaceOption, StoreOption, as_groups, open_rag
from .render import friendly_errors, out, plural, print_json, print_table

documents_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The namespace's documents: list, show, remove, set who may read one.",
)
SourceArgument = Annotated[str, typer.Argument(help="the document's source, as `documents list` shows it")]


def when(document: DocumentInfo) -> str:
    return document.ingested_at.strftime("%Y-%m-%d %H:%M") if document.ingested_at else "-"


@documents_app.command("list")
@friendly_errors
def list_documents(
    offset: Annotated[int, typer.Option("--offset", min=0, help="documents to skip, sorted by source")] = 0,
    limit: Annotated[int, typer.Option("--limit", min=1, max=MAX_PAGE, help="documents to list")] = 100,
    groups: AsGroupsOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the documents: source, title, publisher, date, size, chunks per collection, when and by whom
    ingested, readers, hash."""
    from rich.table import Table

    with open_rag(config, store, namespace) as rag:
        page = rag.documents(as_groups(groups)).page(offset, limit)
        namespace = rag.settings.namespace
    if as_json:
        print_json(page.model_dump(mode="json"))
        return
    shown = f"{offset + 1}-{offset + len(page.documents)} of " if page.documents else ""
    table = Table(title=f"{shown}{plural(page.total, 'document')} in namespace {namespace!r}")
    for column in (
        "source",
        "title",
        "publisher",
        "published",
        "characters",
        "chunks",
        "ingested",
        "by",
        "readers",
        "sha256",
    ):
        table.add_column(column, justify="right" if column == "characters" else "left")
    for document in page.documents:
        table.add_row(
            document.source,
            document.title or "-",
            document.publisher or "-",
            (document.published or "-")[:10],
            str(document.size),
            " / ".join(str(n) for n in document.chunks.values()),
            when(document),
            document.ingested_by or "-",
            ",".join(document.readers) or "everyone",
            document.content_hash[:12],
        )
    print_table(table)
    if offset + len(page.documents) < page.total:
        out.print(f"more: --offset {offset + len(page.documents)}", markup=False)


@documents_app.command("show")
@friendly_errors
def show_document(
    source: SourceArgument,
    groups: AsGroupsOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show one document and where each of its chunks sits, per collection."""
    with open_rag(config, store, namespace) as rag:
        document = rag.documents(as_groups(groups)).get(source)
    if as_json:
        print_json(document.model_dump(mode="json"))
        return
    out.print(
        f"{document.source}: {document.size} characters, sha256 {document.content_hash}, ingested "
        f"{when(document)} by {document.ingested_by or '-'}; read by {', '.join(document.readers) or 'everyone'}",
        markup=False,
    )
    known = [
        f"{name}: {value}"
        for name in ("title", "publisher", "author", "published", "url", "revision")
        if (value := getattr(document, name))
    ]
    if known:
        out.print("  " + "; ".join(known), markup=False)
    for collection, chunks in document.locations.items():
        spans = ", ".join(f"{c.chunk}: {c.start}-{c.end}" for c in chunks)
        out.print(f"  {collection}: {plural(len(chunks), 'chunk')} ({spans})", markup=False)


@documents_app.command("remove")
@friendly_errors
def remove_document(
    source: SourceArgument,
    groups: AsGroupsOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Remove a document from every collection of the namespace (run it again if it was cut short)."""
    with open_rag(config, store, namespace) as rag:
        report = rag.documents(as_groups(groups)).remove(source)
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    removed = ", ".join(f"{collection} {points}" for collection, points in report.removed.items())
    out.print(f"removed {report.source}: points deleted per collection: {removed}", markup=False)


@documents_app.command("readers")
@friendly_errors
def set_readers(
    source: SourceArgument,
    readers: Annotated[
        str | None, typer.Option("--set", help="the groups that may read it, comma-separated (hr,legal)")
    ] = None,
    everyone: Annotated[bool, typer.Option("--everyone", help="everyone in the namespace may read it")] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Set who may read a document, in every collection, without embedding it again."""
    if (readers is None) == (not everyone):
        raise ConfigError("give --set GROUPS or --everyone (one of them)")
    groups = () if everyone else groups_of(readers)
    if not groups and not everyone:
        raise ConfigError("--set needs at least one group; --everyone lets everyone in the namespace read it")
    with open_rag(config, store, namespace) as rag:
        report = rag.documents().set_readers(source, groups)
        from ..service.audit import append_now

        append_now(
            rag.settings.service, "readers", namespace=rag.settings.namespace, source=source, readers=list(groups)
        )
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    changed = ", ".join(f"{collection} {points}" for collection, points in report.changed.items())
    who = ", ".join(report.readers) or "everyone in the namespace"
    out.print(f"{report.source} is read by {who}; points changed per collection: {changed}", markup=False)
