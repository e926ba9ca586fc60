"""The ``qrag-qdrant`` command line: ingest, query, collections, eval, token.

Every expected failure is one line on stderr and a non-zero exit, never a traceback
(set QRAG_DEBUG=1 to see one for an unexpected error).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import signal
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .api import QuorumRAG
from .config import load_settings
from .errors import ConfigError, QragError
from .evidence import Answer, Evidence
from .tokens import mint_token, parse_ttl

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Quorum RAG on Qdrant: answers only from evidence several retrievers agree on.")
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)
F = TypeVar("F", bound=Callable[..., Any])

ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML config [default: configs/default.toml]")]
StoreOption = Annotated[Path | None, typer.Option("--store", help="embedded store folder (QRAG_STORE) [default: .qrag]")]
NamespaceOption = Annotated[str | None, typer.Option("--namespace", help="team namespace (QRAG_NAMESPACE)")]
JsonOption = Annotated[bool, typer.Option("--json", help="print one JSON object instead of text")]
#: Qdrant's advice: about this many collections per cluster at most.
COLLECTIONS_ADVISED = 1000


def one_line_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    err.print(f"warning: {message}", markup=False)


def friendly_errors(command: F) -> F:
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        warnings.showwarning = one_line_warning  # libraries' warnings, without file and line
        try:
            return command(*args, **kwargs)
        except (typer.Exit, click.exceptions.Exit, click.ClickException):
            raise
        except QragError as exc:
            err.print(f"error: {exc}", markup=False)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("interrupted: the store is consistent; run the command again to resume")
            raise typer.Exit(130) from None
        except OSError as exc:  # a full disk, a read-only folder, a permission: the system's words
            where = f" ({exc.filename})" if exc.filename else ""
            err.print(f"error: {exc.strerror or exc}{where}", markup=False)
            raise typer.Exit(1) from None
        except Exception as exc:
            if os.environ.get("QRAG_DEBUG"):
                raise
            err.print(f"error: unexpected {type(exc).__name__}: {exc} (set QRAG_DEBUG=1 for a traceback)",
                      markup=False)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def open_rag(config: Path | None, store: Path | None, namespace: str | None) -> QuorumRAG:
    return QuorumRAG.from_config(config, store=store, namespace=namespace)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def progress_bar() -> Progress:
    """A transient bar on stderr, so --json output on stdout stays clean."""
    return Progress(TextColumn("{task.description:>16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=True)


class RichIngestProgress:
    """Files read, chunks found and chunks embedded, on stderr."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.files = progress.add_task("files", total=None)
        self.chunks = progress.add_task("chunks to embed", total=None)
        self.embedded = progress.add_task("embedded", total=0)

    def files_found(self, total: int) -> None:
        self.progress.update(self.files, total=total)

    def file_done(self) -> None:
        self.progress.advance(self.files)

    def chunks_queued(self, count: int) -> None:
        self.progress.advance(self.chunks, count)
        self.progress.update(self.embedded, total=self.progress.tasks[self.chunks].completed)

    def chunks_embedded(self, count: int) -> None:
        self.progress.advance(self.embedded, count)


@app.command()
@friendly_errors
def ingest(
    path: Annotated[Path, typer.Argument(help="folder (searched recursively) or file of .txt/.md")],
    prune: Annotated[bool, typer.Option("--prune", help="remove the chunks of files that are gone")] = False,
    rebuild: Annotated[bool, typer.Option(
        "--rebuild", help="build fresh collections from PATH, then switch the namespace to them at once "
                          "(queries see the old index until then; needs the server's API key)")] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Chunk, embed and store every document once per retriever config."""
    with open_rag(config, store, namespace) as rag:
        with progress_bar() as bar:
            report = rag.ingest(path, prune=prune, rebuild=rebuild, progress=RichIngestProgress(bar))
    if as_json:
        print_json(dataclasses.asdict(report))
        return
    out.print(f"Ingested {plural(report.documents, 'document')} from {report.root} in {report.seconds:.1f} s "
              f"({report.unchanged} unchanged, {report.embedded_chunks} chunks embedded"
              + (f", {report.pruned_sources} removed files pruned)" if prune else ")"))
    for name, count in report.chunks.items():
        out.print(f"  {name} -> {report.collections.get(name, name)}: {count} chunks")
    if report.dropped:
        out.print(f"Dropped {plural(len(report.dropped), 'collection')}: {', '.join(report.dropped)}", markup=False)
    if report.skipped:
        out.print(f"Skipped {plural(len(report.skipped), 'file')}:")
        for skipped in report.skipped:
            out.print(f"  {skipped.source}: {skipped.reason}", markup=False)


@app.command()
@friendly_errors
def query(
    question: Annotated[str, typer.Argument(help="the question")],
    no_generate: Annotated[bool, typer.Option("--no-generate", help="show the evidence only")] = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Answer from the evidence the retrievers agree on, or abstain."""
    with open_rag(config, store, namespace) as rag:
        evidence = rag.retrieve(question)
        if no_generate:
            result = Answer(**evidence.model_dump())
        elif as_json or evidence.abstained:
            result = rag.answer(question, evidence=evidence)
        else:
            result = rag.answer(question, evidence=evidence, on_token=AnswerStream())
            if result.answer:
                out.print()
            if not result.complete and result.answer:
                out.print("[yellow](answer incomplete: the stream was cut off)[/yellow]")
    if as_json:
        print_json(result.model_dump())
    else:
        print_evidence(result, quorum=rag.settings.retrieval.quorum)
    if result.error:
        err.print(f"error: {result.error}", markup=False)
        raise typer.Exit(2)


class AnswerStream:
    """Writes the answer's tokens as they arrive, under a heading printed with the first one."""

    def __init__(self) -> None:
        self.started = False

    def __call__(self, token: str) -> None:
        if not self.started:
            out.print("[bold]Answer[/bold]")
            self.started = True
        sys.stdout.write(token)
        sys.stdout.flush()


def print_evidence(evidence: Evidence, quorum: int) -> None:
    if evidence.abstained:
        out.print(f"No answer: the retrievers did not agree on any evidence (no cluster reached the quorum "
                  f"of {quorum} of {evidence.retrievers} retrievers).")
        return
    out.print("[bold]Evidence[/bold]")
    for cluster in evidence.clusters:
        out.print(f"#{cluster.rank} score {cluster.score:.3f} · support {cluster.support}/{evidence.retrievers} "
                  f"retrievers ({', '.join(cluster.retrievers)})")
        for passage in cluster.passages:
            out.print(f"  [{passage.citation}] {passage.source} chars {passage.start}-{passage.end}", markup=False)
            out.print(f"      {' '.join(passage.text.split())}", markup=False, style="dim")


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
        print_json({"namespace": None if all_namespaces else namespace, "count": len(infos),
                    "namespaces": len({i.namespace for i in infos}), "collections": [i.model_dump() for i in infos]})
        return
    table = Table(title=f"{plural(len(infos), 'collection')} in {where}")
    for column in ("alias", "collection", "points", "model", "chunk", "retrievers"):
        table.add_column(column)
    for info in infos:
        table.add_row(info.name, info.collection, str(info.points), info.model, f"{info.size}/{info.overlap}",
                      ", ".join(info.retrievers) or "(not in config)")
    out.print(table)
    if len(infos) > COLLECTIONS_ADVISED // 2:
        err.print(f"note: Qdrant advises at most about {COLLECTIONS_ADVISED} collections per cluster; "
                  "see docs/design.md for the one-collection-per-config alternative")


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
    minted = mint_token(settings.qdrant.api_key.get_secret_value(), [spec.name for spec in settings.collections],
                        read_only, parse_ttl(ttl))
    if as_json:
        print_json({"namespace": settings.namespace, "token": minted.token, **minted.claims})
        return
    sys.stdout.write(minted.token + "\n")


@app.command("eval")
@friendly_errors
def evaluate(
    dataset_dir: Annotated[Path, typer.Argument(help="data set folder: corpus/ and questions.jsonl or queries.jsonl")],
    sweep_points: Annotated[list[str] | None, typer.Argument(
        metavar="[NAME=V1,V2 ...]", help="with --sweep: the grid, e.g. quorum=1,2,3 rrf_k=10,60")] = None,
    sweep: Annotated[bool, typer.Option("--sweep", help="run the quorum pipeline over the grid that follows")] = False,
    sample: Annotated[int | None, typer.Option("--sample", min=1, help="questions to draw")] = None,
    seed: Annotated[int, typer.Option("--seed", help="seed of the draw")] = 0,
    systems: Annotated[str | None, typer.Option("--systems", help="comma-separated systems [default: all]")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="candidates per retriever "
                                               "[default: retrieval.top_k for QA, 100 for relevance]")] = None,
    json_out: Annotated[Path | None, typer.Option("--json-out", help="write the metrics as JSON")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write report.md and plots into this folder")] = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="[default: eval-<data set name>]")] = None,
) -> None:
    """Run every system on the same questions of a public data set and compare them."""
    from .eval import Evaluation, load_dataset, parse_sweep
    from .eval.report import systems_table, sweep_table, write_report

    if sweep_points and not sweep:
        raise typer.BadParameter(f"unexpected arguments {' '.join(sweep_points)} (did you mean --sweep?)")
    grid = parse_sweep(sweep_points or []) if sweep else []
    dataset = load_dataset(dataset_dir, sample=sample, seed=seed)
    namespace = namespace or dataset.namespace
    with open_rag(config, store, namespace) as rag:
        with progress_bar() as bar:
            rag.ingest(dataset.corpus, progress=RichIngestProgress(bar))
        evaluation = Evaluation(rag, dataset, systems.split(",") if systems else None, top_k)
        with progress_bar() as bar:
            task = bar.add_task("questions", total=len(dataset.questions))
            result = evaluation.run(grid, advance=lambda: bar.advance(task))
    out.print(systems_table(result))
    if result.sweep:
        out.print(sweep_table(result))
    if json_out:
        json_out.write_text(json.dumps(result.as_json(), indent=2) + "\n")
    if report:
        path = write_report(result, report, "qrag-qdrant " + " ".join(sys.argv[1:]))
        out.print(f"report: {path}")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `qrag-qdrant ... | head` ends quietly, like other tools
    app()
