"""The options every command shares, and the one way a command opens the pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ..api import QuorumRAG
from ..errors import ConfigError, RequestError
from ..store.access import groups_of
from ..store.filters import DocumentFilter

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML config [default: the package's config/default.toml]")
]
StoreOption = Annotated[
    Path | None, typer.Option("--store", help="embedded store folder (QRAG_STORE) [default: .qrag]")
]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", help="team namespace (QRAG_NAMESPACE)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON object instead of text")]
KeyOption = Annotated[str, typer.Argument(help="the key's id (from `key list`) or name")]
ReadersOption = Annotated[
    str | None,
    typer.Option(
        "--readers",
        help="groups that may read the documents, comma-separated (hr,legal) [default: a document keeps "
        "the readers it has; a new one is read by everyone in the namespace]",
    ),
]
AsGroupsOption = Annotated[
    str | None,
    typer.Option(
        "--as-groups",
        help="act as a caller of these groups, comma-separated ('' for none): only the documents they may read "
        "are seen [default: every document]",
    ),
]

WhereOption = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        help="only documents whose publisher, author or path prefix is this: publisher=TechCrunch, "
        "author='Ada Lee', path=reports/ (repeat it; a field given twice passes either value)",
    ),
]
AfterOption = Annotated[
    str | None, typer.Option("--after", help="only documents published at or after this ISO 8601 date or time")
]
BeforeOption = Annotated[
    str | None, typer.Option("--before", help="only documents published before this ISO 8601 date or time")
]
#: what ``--where`` may name
WHERE_FIELDS = ("publisher", "author", "path")


def document_filter(where: list[str] | None, after: str | None, before: str | None) -> DocumentFilter | None:
    """``--where``, ``--after`` and ``--before`` as one filter; a bad one is a one-line ConfigError."""
    fields: dict[str, Any] = {"after": after, "before": before}
    for given in where or []:
        name, _, value = given.partition("=")
        if name.strip() not in WHERE_FIELDS or not value.strip():
            raise ConfigError(f"--where {given!r}: write FIELD=VALUE, FIELD one of {', '.join(WHERE_FIELDS)}")
        name = name.strip()
        if name == "path":
            fields["path"] = value.strip()
        else:
            fields[name] = [*fields.get(name, []), value.strip()]
    try:
        return DocumentFilter.of({key: value for key, value in fields.items() if value is not None})
    except RequestError as exc:
        raise ConfigError(str(exc)) from None


def as_groups(text: str | None) -> tuple[str, ...] | None:
    """``--as-groups``: None reads every document; ``''`` the ones everyone may read."""
    return None if text is None else groups_of(text, "--as-groups")


def open_rag(config: Path | None, store: Path | None, namespace: str | None) -> QuorumRAG:
    return QuorumRAG.from_config(config, store=store, namespace=namespace)
