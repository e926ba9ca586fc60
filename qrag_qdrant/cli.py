"""The ``qrag-qdrant`` command line: ingest, query, collections, token, serve, mcp, key (add, list,
revoke, rotate), feedback export, eval and gate train.

Every expected failure is one line on stderr and a non-zero exit, never a traceback
(set QRAG_DEBUG=1 to see one for an unexpected error).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import os
import signal
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import click
import typer

from .api import QuorumRAG
from .config import load_settings
from .corpus import UNSUPPORTED_FORMAT
from .errors import ConfigError, QragError
from .evidence import Answer, Evidence
from .service.auth import KeyEntry, KeyFile, digest
from .service.feedback import FeedbackFile, gate_rows

if TYPE_CHECKING:  # imported where they are used (ingest, token, printing): a query starts sooner
    from rich.console import Console
    from rich.progress import Progress
    from rich.table import Table

    from .ingest import IngestProgress

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Quorum RAG on Qdrant: answers only from evidence several retrievers agree on.")


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


def print_table(table: Table) -> None:
    """On a terminal, fitted to its width; in a log or a pipe, whole, with nothing wrapped."""
    from rich.console import Console

    (out if out.is_terminal else Console(highlight=False, width=240)).print(table)


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def progress_bar() -> Progress:
    """A transient bar on stderr, so --json output on stdout stays clean."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:>16}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err.console, transient=True)


class LineIngestProgress:
    """Where stderr is no terminal (a log, a pipe): one line per embedded batch, nothing redrawn."""

    def __init__(self) -> None:
        self.files = self.total_files = self.embedded = 0

    def files_found(self, total: int) -> None:
        self.total_files = total

    def file_done(self) -> None:
        self.files += 1

    def chunks_queued(self, count: int) -> None: ...

    def chunks_embedded(self, count: int) -> None:
        self.embedded += count
        err.print(f"ingest: {self.embedded} chunks embedded, {self.files} of {self.total_files} files read",
                  markup=False)


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
    path: Annotated[Path, typer.Argument(
        help="folder (searched recursively) or one file: .txt, .md, .pdf, .html, .docx")],
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
        with ingest_progress() as progress:
            report = rag.ingest(path, prune=prune, rebuild=rebuild, progress=progress)
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
        formats = Counter(s.reason for s in report.skipped if s.reason.startswith(UNSUPPORTED_FORMAT))
        for skipped in report.skipped:
            if skipped.reason not in formats:
                out.print(f"  {skipped.source}: {skipped.reason}", markup=False)
        if formats:  # often many (a docs folder's images and data); --json lists each
            counts = ", ".join(f"{reason.removeprefix(UNSUPPORTED_FORMAT).strip(' ()')} ({count})"
                               for reason, count in formats.most_common())
            out.print(f"  {plural(formats.total(), 'file')} of unsupported formats: {counts}", markup=False)


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
            result = Answer.from_evidence(evidence)
        elif as_json or evidence.abstained:
            result = rag.answer(question, evidence=evidence)
        else:
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


def print_answer_checks(answer: Answer) -> None:
    """What the verifier found, under the streamed answer."""
    if answer.abstain_reason == "model_declined":
        odds = f" (it gave that reply {answer.decline_probability:.0%})" if answer.decline_probability is not None else ""
        out.print(f"No answer: the model found that the passages do not hold the answer{odds}.")
    elif answer.abstain_reason == "unsupported_answer":
        out.print("No answer: the answer made claims its cited passages do not support (generation.unsupported = "
                  "'refuse'); the evidence follows.")
    for claim in answer.claims:
        if claim.supported is False or claim.invalid_citations:
            why = ("cites passages that were not shown" if claim.invalid_citations else
                   "not in the passages it cites" if not claim.grounded else f"the judge's score {claim.score:.2f}")
            out.print(f"[yellow]unsupported[/yellow] ({why}): {claim.text}")
    for warning in answer.warnings:
        out.print(f"[yellow]note:[/yellow] {warning}")


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
    if evidence.abstain_reason == "no_quorum":
        out.print(f"No answer: the retrievers did not agree on any evidence (no cluster reached the quorum "
                  f"of {quorum} of {evidence.retrievers} retrievers).")
        return
    if evidence.abstain_reason == "low_confidence":
        out.print(f"No answer: the retrievers agreed on evidence, but it is too weak to answer from "
                  f"(confidence {evidence.confidence:.3f}, below the gate's {evidence.gate_threshold or 0:.3f}; "
                  "retrieval.min_confidence). The documents probably do not hold the answer.")
        out.print("[bold]Weak evidence[/bold]")
    else:
        out.print(f"[bold]Evidence[/bold] (confidence {evidence.confidence:.3f}; {evidence.context_words} words sent, "
                  f"{evidence.context_policy})")
    for cluster in evidence.clusters:
        out.print(f"#{cluster.rank} score {cluster.score:.3f} · support {cluster.support}/{evidence.retrievers} "
                  f"retrievers ({', '.join(cluster.retrievers)})"
                  + (f", also found by {', '.join(cluster.expansions)}" if cluster.expansions else ""), markup=False)
        for passage in cluster.passages:
            out.print(f"  [{passage.citation}] {passage.location} chars {passage.start}-{passage.end}", markup=False)
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
    from rich.table import Table

    table = Table(title=f"{plural(len(infos), 'collection')} in {where}")
    for column in ("alias", "collection", "points", "model", "chunk", "retrievers"):
        table.add_column(column)
    for info in infos:
        table.add_row(info.name, info.collection, str(info.points), info.model, f"{info.size}/{info.overlap}",
                      ", ".join(info.retrievers) or "(not in config)")
    print_table(table)
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
    from .tokens import mint_token, parse_ttl

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
    systems: Annotated[str | None, typer.Option("--systems", help="comma-separated systems [default: all but "
                                                "quorum+mq and quorum+hyde, which call the model per question]")] = None,
    top_k: Annotated[int | None, typer.Option("--top-k", min=1, help="candidates per retriever "
                                               "[default: retrieval.top_k for QA, 100 for relevance]")] = None,
    chunks: Annotated[int | None, typer.Option("--chunks", min=1, help="chunks each chunk system (a retriever "
                                               "alone, qdrant-hybrid, rrf-all) sends [default: "
                                               "retrieval.context_clusters]")] = None,
    hold_out: Annotated[float, typer.Option("--hold-out", help="share of the corpus files NOT ingested: their "
                                            "questions become out-of-corpus (split by document)")] = 0.0,
    split_seed: Annotated[int, typer.Option("--split-seed", help="seed of the --hold-out split")] = 0,
    articles: Annotated[str | None, typer.Option("--articles", help="tune: only questions on the fixed quarter of "
                                                 "the documents used to choose prompts and thresholds; test: only "
                                                 "the others (the whole corpus is indexed)")] = None,
    foreign: Annotated[Path | None, typer.Option("--foreign", help="add another data set's questions as "
                                                 "out-of-corpus (as many as --sample)")] = None,
    generate: Annotated[int | None, typer.Option(
        "--generate", min=1, help="also answer this many of the questions with the model (generation.backend), "
        "from quorum's and qdrant-hybrid's context (or the --systems given), and score the answers")] = None,
    generate_kinds: Annotated[str | None, typer.Option(
        "--generate-kinds", help="with --generate: draw only questions of these kinds (answerable, unanswerable, "
        "out_of_corpus; comma-separated), e.g. to see what reaches the model of the ones it should not answer")] = None,
    answers_out: Annotated[Path | None, typer.Option("--answers-out", help="with --generate: write each answer "
                                                     "as a JSON line as soon as it is scored")] = None,
    expansions_cache: Annotated[Path | None, typer.Option(
        "--expansions-cache", help="with quorum+mq or quorum+hyde: reuse the expansions this JSONL file holds "
        "and add the new ones, so a rerun asks the model only for new questions")] = None,
    json_out: Annotated[Path | None, typer.Option("--json-out", help="write the metrics as JSON")] = None,
    rows_out: Annotated[Path | None, typer.Option("--rows-out", help="write each question's gate features and "
                                                  "label as JSONL, for `qrag-qdrant gate train`")] = None,
    report: Annotated[Path | None, typer.Option("--report", help="write report.md and plots into this folder")] = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="[default: eval-<data set name>]")] = None,
) -> None:
    """Run every system on the same questions of a public data set and compare them."""
    from .eval import Evaluation, load_dataset, parse_sweep
    from .eval.report import answers_table, decline_table, expansions_table, systems_table, sweep_table, write_report

    if sweep_points and not sweep:
        raise typer.BadParameter(f"unexpected arguments {' '.join(sweep_points)} (did you mean --sweep?)")
    grid = parse_sweep(sweep_points or []) if sweep else []
    dataset = load_dataset(dataset_dir, sample=sample, seed=seed, hold_out=hold_out, split_seed=split_seed,
                           foreign=foreign, articles=articles)
    namespace = namespace or dataset.namespace
    with open_rag(config, store, namespace) as rag:
        with ingest_progress() as progress:
            rag.ingest(dataset.corpus, progress=progress, exclude=dataset.held_out)
        evaluation = Evaluation(rag, dataset, systems.split(",") if systems else None, top_k, expansions_cache, chunks)
        with progress_bar() as bar:
            task = bar.add_task("questions", total=len(dataset.questions))
            result = evaluation.run(grid, advance=lambda: bar.advance(task))
        if generate:
            result.generation = answer_questions(rag, result, generate, seed, evaluation.systems if systems else None,
                                                 answers_out, generate_kinds.split(",") if generate_kinds else None)
    print_table(systems_table(result))
    if (expanded := expansions_table(result)) is not None:
        print_table(expanded)
    if result.generation:
        print_table(answers_table(result.generation))
        if (declines := decline_table(result.generation)) is not None:
            print_table(declines)
    if result.sweep:
        print_table(sweep_table(result))
    if json_out:
        json_out.write_text(json.dumps(result.as_json(), indent=2) + "\n")
    if rows_out:
        rows_out.write_text("".join(json.dumps(row) + "\n" for row in result.rows))
    if report:
        path = write_report(result, report, "qrag-qdrant " + " ".join(sys.argv[1:]))
        out.print(f"report: {path}")


def answer_questions(rag: QuorumRAG, result: Any, count: int, seed: int, systems: list[str] | None,
                     answers_out: Path | None, kinds: list[str] | None = None) -> dict[str, Any]:
    """``eval --generate``: answers for ``count`` of the evaluated questions (of ``kinds`` only, if
    given), drawn with ``seed``."""
    from .eval.answering import AnswerEvaluation, draw
    from .eval.dataset import CATEGORIES
    from .eval.runner import HYBRID, QUORUM

    if unknown := set(kinds or ()) - set(CATEGORIES):
        raise ConfigError(f"--generate-kinds {', '.join(sorted(unknown))}: use {', '.join(CATEGORIES)}")
    names = systems or [name for name in (QUORUM, HYBRID) if name in result.contexts]
    eligible = [i for i, q in enumerate(result.dataset.questions) if kinds is None or q.category in kinds]
    picked = [eligible[i] for i in draw(len(eligible), count, seed)]
    questions = [result.dataset.questions[i] for i in picked]
    contexts = {name: [result.contexts[name][i] for i in picked] for name in names}
    with progress_bar() as bar, contextlib.ExitStack() as stack:
        task = bar.add_task("answers", total=len(questions))
        sink = stack.enter_context(answers_out.open("w")) if answers_out else None

        def keep(answer: Any) -> None:
            if sink:
                sink.write(json.dumps(dataclasses.asdict(answer)) + "\n")
                sink.flush()

        return AnswerEvaluation(rag.settings, rag.generator, names).run(
            questions, contexts, advance=lambda: bar.advance(task), on_answer=keep)


gate_app = typer.Typer(no_args_is_help=True, help="The evidence gate: fit it to your own corpus.")
app.add_typer(gate_app, name="gate")


@gate_app.command("train")
@friendly_errors
def gate_train(
    rows: Annotated[list[Path], typer.Argument(help="JSONL rows from `qrag-qdrant eval ... --rows-out FILE`")],
    out_path: Annotated[Path, typer.Option("--out", help="where to write the gate's weights (JSON)")],
    test_share: Annotated[float, typer.Option("--test-share", min=0.05, max=0.95,
                                              help="share of articles held out for the report")] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="seed of the train/test split by article")] = 0,
    target_abstain: Annotated[float, typer.Option(
        "--target-abstain", min=0.0, max=0.5,
        help="the threshold abstains on at most this share of answerable training questions")] = 0.02,
    as_json: JsonOption = False,
) -> None:
    """Fit a logistic gate per system from eval rows; use it with retrieval.gate_model = FILE."""
    from .eval.dataset import CATEGORIES
    from .eval.gate_training import read_rows, train_gate

    model, report = train_gate(read_rows(rows), test_share, seed, target_abstain, [str(r) for r in rows])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(out_path)
    if as_json:
        print_json(report)
        return
    from rich.table import Table

    table = Table(title=f"held-out articles ({len(model.info['trained_on']['test_articles'])}); "
                        f"threshold chosen on the training articles")
    for column in ("system", "model", "AUC", "AURC", "threshold", *(f"abstain {c}" for c in CATEGORIES),
                   "recall", "answered recall"):
        table.add_column(column, justify="right")
    for name, models in report.items():
        if "skipped" in models:
            out.print(f"{name}: no gate ({models['skipped']})")
            continue
        for result in models.values():
            table.add_row(name, result["model"], _rate(result["auc"]), _rate(result["aurc"]),
                          f"{result['threshold']:.3f}", *(_rate(result["abstain_rate"][c]) for c in CATEGORIES),
                          _rate(result["recall"]), _rate(result["answered_recall"]))
    print_table(table)
    out.print(f"wrote {out_path}: set retrieval.gate_model = \"{out_path}\" (QRAG_RETRIEVAL_GATE_MODEL) to use it")


@app.command()
@friendly_errors
def serve(
    host: Annotated[str | None, typer.Option("--host", help="address to listen on (service.host)")] = None,
    port: Annotated[int | None, typer.Option("--port", help="port (service.port)")] = None,
    config: ConfigOption = None,
    store: StoreOption = None,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) with the models and the store kept warm; each team's
    bearer key (qrag-qdrant key add) confines it to its namespace."""
    try:
        import uvicorn

        from .service.app import create_app
    except ImportError:
        raise ConfigError("the service needs its extra: pip install 'qrag-qdrant[service]'") from None
    settings = load_settings(config, store=store)
    keys = KeyFile.load(settings.service.keys)
    if not keys.entries():
        err.print(f"warning: no keys in {settings.service.keys}: add one with `qrag-qdrant key add --namespace NAME`",
                  markup=False)
    uvicorn.run(create_app(settings, keys), host=host or settings.service.host, port=port or settings.service.port,
                log_level="warning", timeout_graceful_shutdown=settings.service.drain_seconds)


@app.command("mcp")
@friendly_errors
def mcp_stdio(config: ConfigOption = None, store: StoreOption = None, namespace: NamespaceOption = None) -> None:
    """Serve the namespace to a local agent over MCP (stdio): the tools search_evidence, ask and list_collections.
    Agents on other machines use the service's /v1/mcp/ with a team key instead."""
    from .mcp_server import LocalNamespace, build_server

    with open_rag(config, store, namespace) as rag:
        local = LocalNamespace(rag)
        build_server(lambda ctx: local).run("stdio")


key_app = typer.Typer(no_args_is_help=True, help="Team keys for `qrag-qdrant serve`.")
app.add_typer(key_app, name="key")


KeyOption = Annotated[str, typer.Argument(help="the key's id (from `key list`) or name")]


@key_app.command("add")
@friendly_errors
def key_add(
    namespace: Annotated[str, typer.Option("--namespace", help="the one namespace this key reaches")],
    read_only: Annotated[bool, typer.Option("--read-only", help="query only, no ingest")] = False,
    admin: Annotated[bool, typer.Option("--admin", help="may also ingest a folder on the server's disk")] = False,
    name: Annotated[str | None, typer.Option("--name", help="a name to list, revoke or rotate it by")] = None,
    expires: Annotated[str | None, typer.Option("--expires", help="lifetime: 90m, 12h, 30d, 2w [default: none]")] = None,
    config: ConfigOption = None,
    as_json: JsonOption = False,
) -> None:
    """Mint a key for a team's namespace, store its SHA-256 in the key file, and print the key once.
    A running service accepts it from its next request."""
    from .tokens import parse_ttl

    if read_only and admin:
        raise ConfigError("--read-only and --admin exclude each other")
    settings = load_settings(config, namespace=namespace)  # validates the namespace's name
    role = "read" if read_only else "admin" if admin else "read-write"
    keys = KeyFile.load(settings.service.keys)
    key = keys.add(settings.namespace, role, name, parse_ttl(expires, "--expires") if expires else None)
    if as_json:
        print_json({"key": key, **key_view(next(e for e in keys.entries() if e.sha256 == digest(key)))})
    else:
        sys.stdout.write(key + "\n")


@key_app.command("list")
@friendly_errors
def key_list(config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """The keys in the key file: id, name, namespace, role, created and expiry; never a key or its hash."""
    entries = [key_view(entry) for entry in KeyFile.load(load_settings(config).service.keys).entries()]
    if as_json:
        print_json(entries)
        return
    from rich.table import Table

    table = Table("id", "name", "namespace", "role", "created", "expires")
    for entry in entries:
        table.add_row(*(str(entry[column] or "-") for column in ("id", "name", "namespace", "role", "created",
                                                                   "expires")))
    print_table(table)


@key_app.command("revoke")
@friendly_errors
def key_revoke(which: KeyOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Remove a key: a running service refuses it from its next request."""
    entry = KeyFile.load(load_settings(config).service.keys).revoke(which)
    if as_json:
        print_json({"revoked": key_view(entry)})
    else:
        out.print(f"revoked key {entry.id}" + (f" ({entry.name})" if entry.name else "") +
                  f" of namespace {entry.namespace}", markup=False)


@key_app.command("rotate")
@friendly_errors
def key_rotate(which: KeyOption, config: ConfigOption = None, as_json: JsonOption = False) -> None:
    """Replace a key with a new one (same namespace, role, name and lifetime) and print it once; the
    old key stops working at the service's next request."""
    key, entry = KeyFile.load(load_settings(config).service.keys).rotate(which)
    if as_json:
        print_json({"key": key, **key_view(entry)})
    else:
        sys.stdout.write(key + "\n")


def key_view(entry: KeyEntry) -> dict[str, Any]:
    """What may be shown of a key: never the key or its hash."""
    return {"id": entry.id, "name": entry.name, "namespace": entry.namespace, "role": entry.role,
            "created": entry.created and entry.created.isoformat(), "expires": entry.expires and entry.expires.isoformat()}


feedback_app = typer.Typer(no_args_is_help=True, help="Thumbs up and down given through `serve`.")
app.add_typer(feedback_app, name="feedback")


@feedback_app.command("export")
@friendly_errors
def feedback_export(
    out: Annotated[Path, typer.Option("--out", help="JSON Lines file of gate training rows")],
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Write the namespace's feedback as rows for `qrag-qdrant gate train` (up: the evidence held the answer)."""
    settings = load_settings(config, store=store, namespace=namespace)
    feedback = FeedbackFile(settings.store).rows(settings.namespace)
    if not feedback:
        raise QragError(f"no feedback for namespace {settings.namespace!r} in {settings.store}")
    rows = gate_rows(feedback)
    out.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    err.print(f"Wrote {plural(len(rows), 'row')} ({sum(r['label'] for r in rows)} up) to {out}", markup=False)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `qrag-qdrant ... | head` ends quietly, like other tools
    try:
        app()
    finally:
        # The command is done and its store closed. Without this the interpreter's exit walks every
        # object for cycles: 0.1 s of a 1.4 s query. Frozen objects are left to the OS to free.
        gc.freeze()
