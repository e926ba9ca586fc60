"""The ``qrag-qdrant`` command line: ingest, query, collections, token, eval, serve and mcp here;
gate train, key (add, list, revoke, rotate) and feedback export in ``cli_admin``. What they print
is drawn by ``cli_render``.

Every expected failure is one line on stderr and a non-zero exit, never a traceback
(set QRAG_DEBUG=1 to see one for an unexpected error).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import json
import signal
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from .api import QuorumRAG
from .cli_admin import feedback_app, gate_app, key_app
from .cli_options import ConfigOption, JsonOption, NamespaceOption, StoreOption, open_rag
from .cli_render import (AnswerStream, err, friendly_errors, ingest_progress, out, plural, print_answer_checks,
                         print_evidence, print_ingest_report, print_json, print_table, progress_bar)
from .config import load_settings
from .errors import ConfigError
from .evidence import Answer
from .plugins import install_hint
from .service.auth import KeyFile
from .threads import one_blas_thread

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Quorum RAG on Qdrant: answers only from evidence several retrievers agree on.")
app.add_typer(gate_app, name="gate")
app.add_typer(key_app, name="key")
app.add_typer(feedback_app, name="feedback")


#: Qdrant's advice: about this many collections per cluster at most.
COLLECTIONS_ADVISED = 1000


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
    else:
        print_ingest_report(report, prune)


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
    hold_out: Annotated[float, typer.Option("--hold-out", help="share of the corpus files NOT ingested (and "
                                            "removed if an earlier run indexed them): their questions "
                                            "become out-of-corpus (split by document)")] = 0.0,
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
        raise ConfigError(f"the service needs its extra: {install_hint('service')}") from None
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
        rag.warm()
        local = LocalNamespace(rag)
        build_server(lambda ctx: local).run("stdio")


def main() -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `qrag-qdrant ... | head` ends quietly, like other tools
    one_blas_thread()
    try:
        app()
    finally:
        # The command is done and its store closed. Without this the interpreter's exit walks every
        # object for cycles: 0.1 s of a 1.4 s query. Frozen objects are left to the OS to free.
        gc.freeze()
