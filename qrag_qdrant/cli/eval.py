"""``qrag-qdrant eval``: every system on the same questions of a public data set, and
``eval --generate``'s answers, through the same query path users get."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..api import QuorumRAG
from ..errors import ConfigError
from .options import ConfigOption, StoreOption, open_rag
from .render import friendly_errors, ingest_progress, out, print_table, progress_bar

DatasetDirOption = Annotated[
    Path,
    typer.Argument(
        help="data set folder: corpus/ and questions.jsonl or queries.jsonl; a name that is no folder here is looked "
        "up in $QRAG_DATA (benchmarks/prepare_data.py makes such folders from the official files)"
    ),
]
SweepPointsOption = Annotated[
    list[str] | None,
    typer.Argument(metavar="[NAME=V1,V2 ...]", help="with --sweep: the grid, e.g. quorum=1,2,3 rrf_k=10,60"),
]
SweepOption = Annotated[bool, typer.Option("--sweep", help="run the quorum pipeline over the grid that follows")]
SampleOption = Annotated[int | None, typer.Option("--sample", min=1, help="questions to draw")]
SeedOption = Annotated[int, typer.Option("--seed", help="seed of the draw")]
SystemsOption = Annotated[
    str | None,
    typer.Option(
        "--systems",
        help="comma-separated systems [default: all but quorum+mq and quorum+hyde, which call the model per question]",
    ),
]
TopKOption = Annotated[
    int | None,
    typer.Option(
        "--top-k", min=1, help="candidates per retriever [default: retrieval.top_k for QA, 100 for relevance]"
    ),
]
ChunksOption = Annotated[
    int | None,
    typer.Option(
        "--chunks",
        min=1,
        help="chunks each chunk system (a retriever "
        "alone, qdrant-hybrid, rrf-all) sends [default: "
        "retrieval.context.clusters]",
    ),
]
HoldOutOption = Annotated[
    float,
    typer.Option(
        "--hold-out",
        help="share of the corpus files NOT ingested (and "
        "removed if an earlier run indexed them): their questions "
        "become out-of-corpus (split by document)",
    ),
]
SplitSeedOption = Annotated[int, typer.Option("--split-seed", help="seed of the --hold-out split")]
ArticlesOption = Annotated[
    str | None,
    typer.Option(
        "--articles",
        help="tune: only questions on the fixed quarter of "
        "the documents used to choose prompts and thresholds; test: only "
        "the others (the whole corpus is indexed)",
    ),
]
ForeignOption = Annotated[
    Path | None,
    typer.Option("--foreign", help="add another data set's questions as out-of-corpus (as many as --sample)"),
]
GenerateOption = Annotated[
    int | None,
    typer.Option(
        "--generate",
        min=1,
        help="also answer this many of the questions with the model (generation.backend), "
        "from quorum's and qdrant-hybrid's context (or the --systems given), and score the answers",
    ),
]
GenerateKindsOption = Annotated[
    str | None,
    typer.Option(
        "--generate-kinds",
        help="with --generate: draw only questions of these kinds (answerable, unanswerable, "
        "out_of_corpus; comma-separated), e.g. to see what reaches the model of the ones it should not answer",
    ),
]
AnswersOutOption = Annotated[
    Path | None,
    typer.Option("--answers-out", help="with --generate: write each answer as a JSON line as soon as it is scored"),
]
ExpansionsCacheOption = Annotated[
    Path | None,
    typer.Option(
        "--expansions-cache",
        help="with quorum+mq or quorum+hyde: reuse the expansions this JSONL file holds "
        "and add the new ones, so a rerun asks the model only for new questions",
    ),
]
GoldDocumentsOption = Annotated[
    bool,
    typer.Option(
        "--gold-documents",
        help="quorum searches only each question's gold documents (a set's relevant_docs): with --generate, "
        "the answers' ceiling when retrieval misses nothing",
    ),
]
JsonOutOption = Annotated[Path | None, typer.Option("--json-out", help="write the metrics as JSON")]
RowsOutOption = Annotated[
    Path | None,
    typer.Option(
        "--rows-out", help="write each question's gate features and label as JSONL, for `qrag-qdrant gate train`"
    ),
]
VariantsOption = Annotated[
    str,
    typer.Option(
        "--variants",
        help="conversational data sets: how follow-ups are read, comma-separated: last (the question alone), "
        "rewrite (retrieval.conversation.mode = rewrite), human (the data set's own stand-alone rewrite)",
    ),
]
ReportOption = Annotated[Path | None, typer.Option("--report", help="write report.md and plots into this folder")]


@friendly_errors
def evaluate(
    dataset_dir: DatasetDirOption,
    sweep_points: SweepPointsOption = None,
    sweep: SweepOption = False,
    sample: SampleOption = None,
    seed: SeedOption = 0,
    systems: SystemsOption = None,
    top_k: TopKOption = None,
    chunks: ChunksOption = None,
    hold_out: HoldOutOption = 0.0,
    split_seed: SplitSeedOption = 0,
    articles: ArticlesOption = None,
    foreign: ForeignOption = None,
    generate: GenerateOption = None,
    generate_kinds: GenerateKindsOption = None,
    answers_out: AnswersOutOption = None,
    expansions_cache: ExpansionsCacheOption = None,
    gold_documents: GoldDocumentsOption = False,
    json_out: JsonOutOption = None,
    rows_out: RowsOutOption = None,
    report: ReportOption = None,
    variants: VariantsOption = "last,rewrite,human",
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="[default: eval-<data set name>]")] = None,
) -> None:
    """Run every system on the same questions of a public data set and compare them; on a
    conversational data set (conversations.jsonl), every way of reading a follow-up."""
    from ..eval import Evaluation, load_dataset, parse_sweep

    if (in_data_folder(dataset_dir) / "conversations.jsonl").is_file():
        conversation_eval(
            in_data_folder(dataset_dir),
            variants,
            sample,
            seed,
            generate,
            answers_out,
            json_out,
            config,
            store,
            namespace,
        )
        return
    if sweep_points and not sweep:
        raise typer.BadParameter(f"unexpected arguments {' '.join(sweep_points)} (did you mean --sweep?)")
    grid = parse_sweep(sweep_points or []) if sweep else []
    dataset = load_dataset(
        in_data_folder(dataset_dir),
        sample=sample,
        seed=seed,
        hold_out=hold_out,
        split_seed=split_seed,
        foreign=foreign,
        articles=articles,
    )
    namespace = namespace or dataset.namespace
    with open_rag(config, store, namespace) as rag:
        with ingest_progress() as progress:
            rag.ingest(dataset.corpus, progress=progress, exclude=dataset.held_out, metadata=dataset.metadata)
        evaluation = Evaluation(
            rag, dataset, systems.split(",") if systems else None, top_k, expansions_cache, chunks, gold_documents
        )
        with progress_bar() as bar:
            task = bar.add_task("questions", total=len(dataset.questions))
            result = evaluation.run(grid, advance=lambda: bar.advance(task))
        if generate:
            result.generation = answer_questions(
                rag,
                result,
                generate,
                seed,
                evaluation.systems if systems else None,
                answers_out,
                generate_kinds.split(",") if generate_kinds else None,
            )
    show_result(result, json_out, rows_out, report)


def show_result(result: Any, json_out: Path | None, rows_out: Path | None, report: Path | None) -> None:
    """The tables on the terminal, and the files asked for."""
    from ..eval.report import (
        accuracy_table,
        answers_table,
        decline_table,
        evidence_docs_table,
        expansions_table,
        sweep_table,
        systems_table,
        write_report,
    )

    print_table(systems_table(result))
    if (documents := evidence_docs_table(result)) is not None:
        print_table(documents)
    if (expanded := expansions_table(result)) is not None:
        print_table(expanded)
    if result.generation:
        print_table(answers_table(result.generation))
        if (accuracy := accuracy_table(result.generation)) is not None:
            print_table(accuracy)
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


#: where ``eval NAME`` finds a data set that is not a path from here: ``$QRAG_DATA/NAME``
DATA_VARIABLE = "QRAG_DATA"


def in_data_folder(dataset_dir: Path) -> Path:
    """``dataset_dir`` as given, or under ``$QRAG_DATA`` when it is not a folder from here."""
    data = os.environ.get(DATA_VARIABLE)
    if dataset_dir.exists() or not data or dataset_dir.is_absolute():
        return dataset_dir
    return Path(data) / dataset_dir


def answer_questions(
    rag: QuorumRAG,
    result: Any,
    count: int,
    seed: int,
    systems: list[str] | None,
    answers_out: Path | None,
    kinds: list[str] | None = None,
) -> dict[str, Any]:
    """``eval --generate``: answers for ``count`` of the evaluated questions (of ``kinds`` only, if
    given), drawn with ``seed``."""
    from ..calibration.fitting import CATEGORIES
    from ..eval.answering import AnswerEvaluation, draw
    from ..eval.runner import HYBRID, QUORUM

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
            questions, contexts, advance=lambda: bar.advance(task), on_answer=keep
        )


def conversation_eval(
    root: Path,
    variants: str,
    sample: int | None,
    seed: int,
    generate: int | None,
    answers_out: Path | None,
    json_out: Path | None,
    config: Path | None,
    store: Path | None,
    namespace: str | None,
) -> None:
    """``eval`` on a conversational data set: each variant of reading follow-ups on every turn
    (``--sample`` conversations), and ``--generate`` answerable follow-ups answered by each."""
    from ..eval.conversations import conversation_table, evaluate_conversations, load_conversations, row, to_answer
    from ..eval.dataset import Dataset
    from ..retrieval import Coordinator

    turns = load_conversations(root, sample, seed)
    namespace = namespace or Dataset(root.resolve().name, root, "qa", []).namespace
    names = [v.strip() for v in variants.split(",") if v.strip()]
    with open_rag(config, store, namespace) as rag, contextlib.ExitStack() as stack:
        with ingest_progress() as progress:
            rag.ingest(root / "corpus", progress=progress)
        sink = stack.enter_context(answers_out.open("w")) if answers_out else None

        def pipeline(variant: str) -> Coordinator:
            """The variant's pipeline on the same store, embedding model and language model."""
            retrieval = rag.settings.retrieval.updated(
                {"conversation.mode": "rewrite" if variant == "rewrite" else "last"}
            )
            coordinator = rag.pipeline(rag.settings.model_copy(update={"retrieval": retrieval}))
            stack.callback(coordinator.close)
            return coordinator

        with progress_bar() as bar:
            task = bar.add_task("turns", total=len(turns) * len(names))
            result = evaluate_conversations(
                rag,
                pipeline,
                turns,
                names,
                to_answer(turns, generate or 0, seed),
                advance=lambda: bar.advance(task),
                on_result=(lambda r: print(row(r), end="", file=sink, flush=True)) if sink else None,
            )
    for split in ("tune", "test"):
        print_table(conversation_table(result, split))
    if json_out:
        json_out.write_text(json.dumps(result, indent=2) + "\n")
