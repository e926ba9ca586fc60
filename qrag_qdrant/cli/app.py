"""The ``qrag-qdrant`` command line: ingest, query, collections, token, eval, serve and mcp here;
gate train, key (add, list, revoke, rotate) and feedback export in ``cli_admin``. What they print
is drawn by ``cli_render``.

Every expected failure is one line on stderr and a non-zero exit, never a traceback
(set QRAG_DEBUG=1 to see one for an unexpected error).
"""

from __future__ import annotations

import dataclasses
import gc
import os
import re
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..config.settings import load_settings
from ..errors import ConfigError
from ..results import Answer
from ..store.access import groups_of
from ..version import __version__
from .admin import feedback_app, gate_app, plugins
from .chat import chat
from .documents import documents_app
from .eval import evaluate
from .keys import key_app
from .logs import LogFormat, configure_logging
from .operator import audit, serve, usage
from .options import (
    AfterOption,
    AsGroupsOption,
    BeforeOption,
    ConfigOption,
    JsonOption,
    NamespaceOption,
    ReadersOption,
    StoreOption,
    WhereOption,
    as_groups,
    document_filter,
    open_rag,
)
from .render import (
    AnswerStream,
    err,
    friendly_errors,
    ingest_progress,
    out,
    plural,
    print_answer_checks,
    print_evidence,
    print_ingest_report,
    print_json,
    print_table,
)
from .retrievers import retrievers_app
from .sources import sources_app
from .threads import one_blas_thread

#: the global options, which a user may also type after the command (``qrag-qdrant query -v ...``)
GLOBAL_FLAGS = re.compile(r"^-v+$|^--verbose$")
GLOBAL_OPTIONS = ("--log-format",)


def global_options_first(argv: list[str]) -> list[str]:
    """``argv`` with the global options moved before the command, wherever they were typed (up to
    a ``--``, after which everything is an argument)."""
    moved, rest, index = [], [], 0
    while index < len(argv):
        word = argv[index]
        if word == "--":
            rest += argv[index:]
            break
        if GLOBAL_FLAGS.match(word):
            moved.append(word)
        elif word in GLOBAL_OPTIONS and index + 1 < len(argv):
            moved += [word, argv[index + 1]]
            index += 1
        elif word.startswith(tuple(f"{option}=" for option in GLOBAL_OPTIONS)):
            moved.append(word)
        else:
            rest.append(word)
        index += 1
    return moved + rest


class GlobalOptionsAnywhere(TyperGroup):
    """The command group, with ``-v``/``--log-format`` taken wherever they are typed."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, global_options_first(args))


app = typer.Typer(
    cls=GlobalOptionsAnywhere,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain click help: flags without a type, and "[default: ...]" shown as written
    help="Quorum RAG on Qdrant: answers only from evidence several retrievers agree on.",
)
app.add_typer(gate_app, name="gate")
app.add_typer(key_app, name="key")
app.add_typer(feedback_app, name="feedback")
app.add_typer(documents_app, name="documents")
app.add_typer(sources_app, name="sources")
app.add_typer(retrievers_app, name="retrievers")
app.command("eval")(evaluate)
app.command("chat")(chat)
app.command("audit")(audit)
app.command("usage")(usage)
app.command("serve")(serve)
app.command("plugins")(friendly_errors(plugins))


#: Qdrant's advice: about this many collections per cluster at most.
COLLECTIONS_ADVISED = 1000


def _print_version(wanted: bool) -> None:
    if wanted:
        sys.stdout.write(f"qrag-qdrant {__version__}\n")
        raise typer.Exit()


@app.callback()
def options(
    ctx: typer.Context,
    verbose: Annotated[
        int,
        typer.Option(
            "-v",
            "--verbose",
            count=True,
            help="log each stage's work to stderr (-vv: in detail); before or after the command",
        ),
    ] = 0,
    log_format: Annotated[
        LogFormat, typer.Option("--log-format", help="text, or json: one object a line, for log shippers")
    ] = "text",
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Quorum RAG on Qdrant: answers only from evidence several retrievers agree on."""
    configure_logging(verbose, log_format)
    ctx.obj = {"log_format": log_format}


@app.command()
@friendly_errors
def ingest(
    path: Annotated[
        Path, typer.Argument(help="folder (searched recursively) or one file: .txt, .md, .pdf, .html, .docx")
    ],
    prune: Annotated[bool, typer.Option("--prune", help="remove the chunks of files that are gone")] = False,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="build fresh collections from PATH, then switch the namespace to them at once "
            "(queries see the old index until then; needs the server's API key)",
        ),
    ] = False,
    readers: ReadersOption = None,
    follow_links: Annotated[
        bool,
        typer.Option(
            "--follow-links",
            help="read what links inside PATH point to, even outside it (without it such links are skipped "
            "and reported)",
        ),
    ] = False,
    metadata: Annotated[
        Path | None,
        typer.Option(
            "--metadata",
            help="JSON Lines of the documents' title, publisher (source), author, published_at, url and readers, "
            'one object per document naming it by "doc" (its path under PATH)',
        ),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="fail, writing nothing, when --metadata names a file PATH lacks")
    ] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Chunk, embed and store every document once per retriever config."""
    groups = None if readers is None else groups_of(readers)
    with open_rag(config, store, namespace) as rag:
        with ingest_progress() as progress:
            report = rag.ingest(
                path,
                prune=prune,
                rebuild=rebuild,
                progress=progress,
                ingested_by="cli",
                readers=groups,
                metadata=metadata,
                follow_links=follow_links,
                strict=strict,
            )
    if as_json:
        print_json(dataclasses.asdict(report))
    else:
        print_ingest_report(report, prune)


@app.command()
@friendly_errors
def query(
    question: Annotated[str, typer.Argument(help="the question")],
    no_generate: Annotated[bool, typer.Option("--no-generate", help="show the evidence only")] = False,
    groups: AsGroupsOption = None,
    where: WhereOption = None,
    after: AfterOption = None,
    before: BeforeOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer from the evidence the retrievers agree on, or abstain."""
    readers, documents = as_groups(groups), document_filter(where, after, before)
    with open_rag(config, store, namespace) as rag:
        evidence = rag.retrieve(question, readers=readers, where=documents)
        if no_generate:
            result = Answer.from_evidence(evidence)
        elif as_json or evidence.abstained:
            result = rag.answer(question, evidence=evidence)
        else:
            if note := rag.loading_note(evidence):
                err.print(f"{note} ...", markup=False, style="dim")
            stream = AnswerStream()
            result = rag.answer(question, evidence=evidence, on_token=stream)
            if stream.started:
                out.print()
            if not result.complete and result.answer:
                out.print("[yellow](answer incomplete: the stream was cut off)[/yellow]")
    if as_json:
        print_json(result.model_dump())
    else:
        print_answer_checks(result)
        print_evidence(result, rag.settings.retrieval.quorum)
    if result.error:
        err.print(f"error: {result.error}", markup=False)
        raise typer.Exit(2)


@app.command()
@friendly_errors
def collections(
    all_namespaces: Annotated[bool, typer.Option("--all", help="every namespace (needs the server's API key)")] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the namespace's collections with point counts, model and retrievers."""
    with open_rag(config, store, namespace) as rag:
        infos = rag.collections(all_namespaces)
        namespace = rag.settings.namespace
    where = "every namespace" if all_namespaces else f"namespace {namespace!r}"
    if as_json:
        print_json(
            {
                "namespace": None if all_namespaces else namespace,
                "count": len(infos),
                "namespaces": len({i.namespace for i in infos}),
                "collections": [i.model_dump() for i in infos],
            }
        )
        return
    from rich.table import Table

    table = Table(title=f"{plural(len(infos), 'collection')} in {where}")
    for column in ("alias", "collection", "points", "model", "chunk", "retrievers"):
        table.add_column(column)
    for info in infos:
        table.add_row(
            info.name,
            info.collection,
            str(info.points),
            "\n".join([info.model, *(f"{name}: {model}" for name, model in info.vectors.items())]),
            f"{info.size}/{info.overlap}",
            ", ".join(info.retrievers) or "(not in config)",
        )
    print_table(table)
    if len(infos) > COLLECTIONS_ADVISED // 2:
        err.print(
            f"note: Qdrant advises at most about {COLLECTIONS_ADVISED} collections per cluster; "
            "see docs/design.md for the one-collection-per-config alternative"
        )


@app.command()
@friendly_errors
def token(
    read_only: Annotated[bool, typer.Option("--read-only", help="search only, no writes")] = False,
    ttl: Annotated[str, typer.Option("--ttl", help="lifetime: 90m, 12h, 30d, 2w")] = "30d",
    config: ConfigOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mint a JWT for the namespace's collections, signed with the server's API key (QRAG_QDRANT_API_KEY).

    The server must run with JWT RBAC on (QDRANT__SERVICE__JWT_RBAC=true).
    """
    settings = load_settings(config, namespace=namespace)
    if settings.qdrant.api_key is None:
        raise ConfigError("set QRAG_QDRANT_API_KEY to the server's API key: tokens are signed with it")
    from ..store.tokens import mint_token, parse_ttl

    minted = mint_token(
        settings.qdrant.api_key.get_secret_value(),
        [spec.name for spec in settings.collections],
        read_only,
        parse_ttl(ttl),
    )
    if as_json:
        print_json({"namespace": settings.namespace, "token": minted.token, **minted.claims})
        return
    sys.stdout.write(minted.token + "\n")


@app.command("mcp")
@friendly_errors
def mcp_stdio(
    groups: AsGroupsOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Serve the namespace to a local agent over MCP (stdio): the tools search_evidence, ask, list_documents and
    list_collections.
    Agents on other machines use the service's /v1/mcp/ with a team key instead."""
    from ..mcp import LocalNamespace, build_server

    readers = as_groups(groups)
    with open_rag(config, store, namespace) as rag:
        rag.warm()
        local = LocalNamespace(rag, readers)
        build_server(lambda ctx: local).run("stdio")


#: what qrag-qdrant writes (the store, the service's jobs, uploads, feedback and keys) holds teams'
#: documents and questions: readable by its owner only, folders 0700, files 0600
PRIVATE_UMASK = 0o077


def main() -> None:
    os.umask(PRIVATE_UMASK)
    if hasattr(signal, "SIGPIPE"):  # POSIX: `qrag-qdrant ... | head` ends quietly, like other tools
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    one_blas_thread()
    try:
        app()
    finally:
        # The command is done and its store closed. Without this the interpreter's exit walks every
        # object for cycles: 0.1 s of a 1.4 s query. Frozen objects are left to the OS to free.
        gc.freeze()
