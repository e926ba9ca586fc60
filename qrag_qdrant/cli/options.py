"""The options every command shares, and the one way a command opens the pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..api import QuorumRAG
from ..store.access import groups_of

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


def as_groups(text: str | None) -> tuple[str, ...] | None:
    """``--as-groups``: None reads every document; ``''`` the ones everyone may read."""
    return None if text is None else groups_of(text, "--as-groups")


def open_rag(config: Path | None, store: Path | None, namespace: str | None) -> QuorumRAG:
    return QuorumRAG.from_config(config, store=store, namespace=namespace)
