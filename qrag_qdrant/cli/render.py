"""What the command line prints: the consoles, one-line errors, progress, answers and evidence.

The commands (``cli``, ``cli_admin``) decide what to show; this module decides how it looks, so
text and ``--json`` output are chosen in one place per command and drawn here.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import click
import typer

from ..errors import QragError
from ..ingest.corpus import UNSUPPORTED_FORMAT, SkippedFile
from ..results import Answer, Evidence
from ..service.auth.keys import KeyEntry

if TYPE_CHECKING:  # imported where they are used (ingest, tables): a query starts sooner
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn
    from rich.table import Table

    from ..ingest.progress import IngestProgress, IngestReport

F = TypeVar("F", bound=Callable[..., Any])


class LazyConsole:
    """rich's Console, made when first used: importing rich takes about 40 ms, which a --json
    command that prints no message never needs."""

    def __init__(self, **options: Any) -> None:
        self._options = options

    @functools.cached_property
    def console(self) -> Console:
        from rich.console import Console

        return Console(**self._options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)


out = LazyConsole(highlight=False, soft_wrap=True)
err = LazyConsole(stderr=True, highlight=False, soft_wrap=True)


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
            err.print(f"error: unexpected {type(exc).__name__}: {exc} (set QRAG_DEBUG=1 for a traceback)", markup=False)
            raise typer.Exit(1) from None

    return wrapper  # type: ignore[return-value]


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def print_table(table: Table) -> None:
    """On a terminal, fitted to its width; in a log or a pipe, whole, with nothing wrapped. Cells are
    shown as written, never read as markup: they hold what clients sent (a request's path, a
    document's name), and ``[bold red]`` or ``[/]`` in one must neither restyle the view nor break it."""
    from rich.console import Console

    (out if out.is_terminal else Console(highlight=False, width=240)).print(table, markup=False)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def progress_bar(*timing: ProgressColumn) -> Progress:
    """A transient bar on stderr, so --json output on stdout stays clean. ``timing``: the columns
    after the count (default: the time elapsed)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description:>16}"),
        BarColumn(),
        MofNCompleteColumn(),
        *(timing or (TimeElapsedColumn(),)),
        console=err.console,
        transient=True,
    )


class LineIngestProgress:
    """Where stderr is no terminal (a log, a pipe): a line per file read or skipped (with why) and
    per embedded batch, nothing redrawn."""

    def __init__(self) -> None:
        self.files = self.total_files = self.embedded = 0

    def files_found(self, total: int) -> None:
        self.total_files = total
        err.print(f"ingest: {plural(total, 'file')} found", markup=False)

    def file_read(self, source: str) -> None:
        self.files += 1
        err.print(f"ingest: read {source} ({self.files} of {self.total_files})", markup=False)

    def file_skipped(self, skipped: SkippedFile) -> None:
        self.files += 1
        err.print(
            f"ingest: skipped {skipped.source}: {skipped.reason} ({self.files} of {self.total_files})", markup=False
        )

    def chunks_queued(self, count: int) -> None: ...

    def chunks_embedded(self, count: int) -> None:
        self.embedded += count
        err.print(f"ingest: {self.embedded} chunks embedded", markup=False)


@contextlib.contextmanager
def ingest_progress() -> Iterator[IngestProgress]:
    """Bars on a terminal, plain lines elsewhere; on stderr, so --json output on stdout stays clean."""
    if not err.is_terminal:
        yield LineIngestProgress()
        return
    with progress_bar() as bar:
        yield RichIngestProgress(bar)


class RichIngestProgress:
    """Files read, chunks found and chunks embedded, on stderr."""

    def __init__(self, progress: Progress):
        self.progress = progress
        self.files = progress.add_task("files read", total=None)
        self.skipped = 0
        self.chunks = progress.add_task("chunks to embed", total=None)
        self.embedded = progress.add_task("embedded", total=0)

    def files_found(self, total: int) -> None:
        self.progress.update(self.files, total=total)

    def file_read(self, source: str) -> None:
        self.progress.advance(self.files)

    def file_skipped(self, skipped: SkippedFile) -> None:
        """Counted on the bar; a file that could not be read, not merely of another format, is
        named above it with the reason (the report lists them all at the end)."""
        self.skipped += 1
        self.progress.update(self.files, advance=1, description=f"files read ({self.skipped} skipped)")
        if not skipped.reason.startswith(UNSUPPORTED_FORMAT):
            self.progress.console.print(f"skipped {skipped.source}: {skipped.reason}", markup=False)

    def chunks_queued(self, count: int) -> None:
        self.progress.advance(self.chunks, count)
        self.progress.update(self.embedded, total=self.progress.tasks[self.chunks].completed)

    def chunks_embedded(self, count: int) -> None:
        self.progress.advance(self.embedded, count)


def print_ingest_report(report: IngestReport, pruned: bool) -> None:
    out.print(
        f"Ingested {plural(report.documents, 'document')} from {report.root} in {report.seconds:.1f} s "
        f"({report.unchanged} unchanged, {report.embedded_chunks} chunks embedded"
        + (f", {report.pruned_sources} removed files pruned)" if pruned else ")")
    )
    for name, count in report.chunks.items():
        out.print(f"  {name} -> {report.collections.get(name, name)}: {count} chunks")
    if report.dropped:
        out.print(f"Dropped {plural(len(report.dropped), 'collection')}: {', '.join(report.dropped)}", markup=False)
    if report.unmatched_metadata:
        named = ", ".join(report.unmatched_metadata[:5]) + (" ..." if len(report.unmatched_metadata) > 5 else "")
        out.print(
            f"The metadata names {plural(len(report.unmatched_metadata), 'document')} the folder lacks: {named}",
            markup=False,
        )
    if report.skipped:
        out.print(f"Skipped {plural(len(report.skipped), 'file')}:")
        formats = Counter(s.reason for s in report.skipped if s.reason.startswith(UNSUPPORTED_FORMAT))
        for skipped in report.skipped:
            if skipped.reason not in formats:
                out.print(f"  {skipped.source}: {skipped.reason}", markup=False)
        if formats:  # often many (a docs folder's images and data); --json lists each
            counts = ", ".join(
                f"{reason.removeprefix(UNSUPPORTED_FORMAT).strip(' ()')} ({count})"
                for reason, count in formats.most_common()
            )
            out.print(f"  {plural(formats.total(), 'file')} of unsupported formats: {counts}", markup=False)


def print_answer_checks(answer: Answer) -> None:
    """The answer's mark in plain words under the streamed answer (``Answer.mark``, as every
    interface shows it), each claim a check failed, and the warnings."""
    if answer.abstain_reason == "unsupported_answer":
        out.print("No answer: the answer is withheld; the evidence follows.", markup=False)
    if answer.computed:
        out.print(f"computed {answer.computed}", markup=False)
    agreement = answer.agreement
    if agreement is not None:
        out.print(f"{agreement.agreeing} of {agreement.readings} readings agree", markup=False)
    if answer.mark is not None and answer.mark != "no evidence":
        style = {"supported": "green", "ambiguous": "yellow"}.get(answer.mark, "red")
        out.print(f"{answer.mark}: {answer.mark_reason}", markup=False, style=style)
    failed = [claim for claim in answer.claims if claim.supported is False]
    for claim in failed[1:] if failed and answer.mark != "supported" else []:  # the first is the mark's reason
        out.print(f"not supported ({answer.claim_reason(claim)}): {claim.text}", markup=False, style="red")
    for warning in answer.warnings:
        out.print(f"note: {warning}", markup=False, style="yellow")


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


def print_expansions(evidence: Evidence) -> None:
    """What the model wrote and was searched beside the question, or why an expansion was not used."""
    if evidence.expansions:
        out.print("[bold]Searched beside the question[/bold] (retrieval.expansions)")
    for expansion in evidence.expansions:
        if expansion.error:
            out.print(f"  {expansion.kind}: not used: {expansion.error}", markup=False)
        for label, text in zip(expansion.labels, expansion.texts):
            out.print(f"  {label}: {' '.join(text.split())}", markup=False)


def print_evidence(evidence: Evidence, quorum: int) -> None:
    print_expansions(evidence)
    if evidence.clarification is not None:
        out.print(evidence.clarification.question, markup=False, style="bold")
        for number, reading in enumerate(evidence.clarification.readings, 1):
            out.print(f"  {number}. {reading}", markup=False)
        return
    if evidence.abstain_reason == "no_quorum":
        out.print(
            f"No answer: the retrievers did not agree on any evidence (no cluster reached the quorum "
            f"of {quorum} of {evidence.retrievers} retrievers)."
        )
        return
    for number, part in enumerate(evidence.parts, 1):
        found = f"passages {', '.join(f'[{n}]' for n in part.citations)}" if part.citations else "no passage"
        found += f" (passages naming {' or '.join(part.names_first)} first)" if part.names_first else ""
        named = f'"{part.searched_for}"' if part.label == f"part {number}" else part.label
        out.print(f"Part {number} ({named}): {part.missing or found}", markup=False)
    if evidence.abstain_reason == "part_missing":
        out.print(f"No answer: a part of the question has no evidence: {evidence.missing_part}.", markup=False)
        out.print("[bold]The other parts' evidence[/bold]")
    elif evidence.abstain_reason == "low_confidence":
        out.print(
            f"No answer: the retrievers agreed on evidence, but it is too weak to answer from "
            f"(confidence {evidence.confidence:.3f}, below the gate's {evidence.gate_threshold or 0:.3f}; "
            "retrieval.min_confidence). The documents probably do not hold the answer."
        )
        out.print("[bold]Weak evidence[/bold]")
    else:
        out.print(
            f"[bold]Evidence[/bold] (confidence {evidence.confidence:.3f}; {evidence.context_words} words sent, "
            f"{evidence.context_policy})"
        )
    for cluster in evidence.clusters:
        out.print(
            f"#{cluster.rank} score {cluster.score:.3f} · support {cluster.support}/{evidence.retrievers} "
            f"retrievers ({', '.join(cluster.retrievers)})"
            + (f", also found by {', '.join(cluster.expansions)}" if cluster.expansions else ""),
            markup=False,
        )
        for passage in cluster.passages:
            byline = f" ({passage.byline})" if passage.byline else ""
            out.print(
                f"  [{passage.citation}] {passage.location}{byline} chars {passage.start}-{passage.end}", markup=False
            )
            out.print(f"      {' '.join(passage.text.split())}", markup=False, style="dim")


def key_view(entry: KeyEntry) -> dict[str, Any]:
    """What may be shown of a key: never the key or its hash."""
    return {
        "id": entry.id,
        "name": entry.name,
        "namespace": entry.namespace,
        "role": entry.role,
        "groups": list(entry.groups),
        "created": entry.created and entry.created.isoformat(),
        "expires": entry.expires and entry.expires.isoformat(),
    }


def rate_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"
