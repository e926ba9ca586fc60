"""``qrag-qdrant retrievers``: the configured retrievers, a model of ``[embeddings]`` added to a
namespace or taken out of it, and the namespace re-embedded with a new ``[embedding]`` model, without
reading a document again."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from .options import ConfigOption, JsonOption, NamespaceOption, StoreOption, open_rag
from .render import err, friendly_errors, out, plural, print_json, print_table, progress_bar

if TYPE_CHECKING:
    from rich.progress import Progress

    from ..ingest.vectors import EmbeddingProgress, VectorsReport

retrievers_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    help="The namespace's retrievers: list them; add or remove a model of [embeddings], or re-embed with a new "
    "[embedding] model, without reading documents again.",
)
ModelArgument = Annotated[str, typer.Argument(help="a model's name in [embeddings.<name>]")]


@retrievers_app.command("list")
@friendly_errors
def list_retrievers(
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the configured retrievers: each one's collection, model, and whether the namespace holds its vectors."""
    from rich.table import Table

    with open_rag(config, store, namespace) as rag:
        states = rag.retrievers()
        namespace = rag.settings.namespace
    if as_json:
        print_json({"namespace": namespace, "retrievers": [state.model_dump() for state in states]})
        return
    table = Table(title=f"{plural(len(states), 'retriever')} in namespace {namespace!r}")
    for column in ("retriever", "collection", "model", "state"):
        table.add_column(column)
    for state in states:
        table.add_row(state.name, state.collection, state.model, state.state)
    print_table(table)
    if missing := sorted({s.model for s in states if s.state in ("missing", "other model")}):
        err.print(
            f"note: the namespace lacks vectors of {', '.join(missing)}: run retrievers add NAME (a model of "
            "[embeddings]) or retrievers reembed ([embedding]'s)",
            markup=False,
        )


@retrievers_app.command("add")
@friendly_errors
def add_model(
    model: ModelArgument,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Embed the namespace's chunks with a model of [embeddings] that the config's retrievers name, into
    new versions of their collections; queries read the old ones until every collection is done."""
    _changed(model, True, config, store, namespace, as_json)


@retrievers_app.command("remove")
@friendly_errors
def remove_model(
    model: ModelArgument,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take a model's vectors out of the namespace's collections, once the config's retrievers no longer name it."""
    _changed(model, False, config, store, namespace, as_json)


@retrievers_app.command("reembed")
@friendly_errors
def reembed(
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Re-embed the namespace's chunks with the config's [embedding] model, after it changed, into new
    versions of its collections; queries with the old config read the old ones until every collection is done."""
    with open_rag(config, store, namespace) as rag, embedding_progress() as progress:
        report = rag.reembed(progress)
    _printed(report, as_json)


def _changed(
    model: str, adding: bool, config: Path | None, store: Path | None, namespace: str | None, as_json: bool
) -> None:
    with open_rag(config, store, namespace) as rag, embedding_progress() as progress:
        report = rag.change_vectors(model, adding, progress)
    _printed(report, as_json)


def _printed(report: VectorsReport, as_json: bool) -> None:
    if as_json:
        print_json(report.model_dump() | {"chunks_per_second": round(report.chunks_per_second, 1)})
        return
    print_report(report)


def print_report(report: VectorsReport) -> None:
    if not report.changed:
        out.print(f"Nothing to do: every collection is as the config asks for {report.model!r}", markup=False)
        return
    embedded = any(change.added for change in report.changed)
    rate = f", {report.chunks_per_second:.0f} chunks embedded a second" if embedded else ""
    out.print(
        f"{report.model!r}: {plural(len(report.changed), 'collection')} changed in {report.seconds:.1f} s{rate}",
        markup=False,
    )
    for change in report.changed:
        done = [
            *(f"re-embedded {name}" if name in change.removed else f"added {name}" for name in change.added),
            *(f"took out {name}" for name in change.removed if name not in change.added),
        ]
        out.print(f"  {change.alias} -> {change.collection}: {change.points} chunks, {', '.join(done)}", markup=False)


class LineEmbeddingProgress:
    """Where stderr is no terminal: a line per batch, with the rate and what is left."""

    def __init__(self) -> None:
        self.total = self.done = 0
        self.started = time.perf_counter()

    def chunks_queued(self, count: int) -> None:
        self.total += count

    def chunks_embedded(self, count: int) -> None:
        self.done += count
        rate = self.done / max(time.perf_counter() - self.started, 1e-9)
        left = (self.total - self.done) / rate if rate else 0.0
        err.print(
            f"retrievers: {self.done} of {self.total} chunks embedded ({rate:.0f}/s, about {left:.0f} s left)",
            markup=False,
        )


class RichEmbeddingProgress:
    """A bar of the chunks embedded, with their rate and the time left, on stderr."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.task = progress.add_task("embedded", total=0, rate="")
        self.started = time.perf_counter()

    def chunks_queued(self, count: int) -> None:
        self.progress.update(self.task, total=(self.progress.tasks[self.task].total or 0) + count)

    def chunks_embedded(self, count: int) -> None:
        done = self.progress.tasks[self.task].completed + count
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        self.progress.update(self.task, completed=done, rate=f"{rate:.0f} chunks/s")


@contextlib.contextmanager
def embedding_progress() -> Iterator[EmbeddingProgress]:
    """Bars on a terminal, plain lines elsewhere; on stderr, so --json output on stdout stays clean."""
    if not err.is_terminal:
        yield LineEmbeddingProgress()
        return
    from rich.progress import TextColumn, TimeRemainingColumn

    with progress_bar(TextColumn("{task.fields[rate]}"), TimeRemainingColumn()) as bar:
        yield RichEmbeddingProgress(bar)
