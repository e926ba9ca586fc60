"""The options every command shares, and the one way a command opens the pipeline."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..api import QuorumRAG

ConfigOption = Annotated[
    Path | None, typer.Option("--config", help="TOML config [default: the package's config/default.toml]")
]
StoreOption = Annotated[
    Path | None, typer.Option("--store", help="embedded store folder (QRAG_STORE) [default: .qrag]")
]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", help="team namespace (QRAG_NAMESPACE)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON object instead of text")]
KeyOption = Annotated[str, typer.Argument(help="the key's id (from `key list`) or name")]


def open_rag(config: Path | None, store: Path | None, namespace: str | None) -> QuorumRAG:
    return QuorumRAG.from_config(config, store=store, namespace=namespace)
