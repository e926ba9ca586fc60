"""The administrative command groups: ``gate train|calibrate`` and ``feedback export``; ``cli``
adds them to the ``qrag-qdrant`` command (``keys.py`` has ``key``)."""

from __future__ import annotations

import json
import time
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..config.settings import load_settings
from ..errors import QragError
from ..service.feedback import FeedbackFile, gate_rows
from .options import ConfigOption, JsonOption, NamespaceOption, StoreOption, open_rag
from .render import (
    err,
    friendly_errors,
    out,
    plural,
    print_json,
    print_table,
    progress_bar,
    rate_text,
)

if TYPE_CHECKING:
    from ..calibration.namespace import CalibrationResult


class QuestionWriter(StrEnum):
    auto = "auto"
    model = "model"
    sentences = "sentences"


gate_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="The evidence gate: fit it to your own corpus."
)


@gate_app.command("train")
@friendly_errors
def gate_train(
    rows: Annotated[list[Path], typer.Argument(help="JSONL rows from `qrag-qdrant eval ... --rows-out FILE`")],
    out_path: Annotated[Path, typer.Option("--out", help="where to write the gate's weights (JSON)")],
    test_share: Annotated[
        float, typer.Option("--test-share", min=0.05, max=0.95, help="share of articles held out for the report")
    ] = 0.5,
    seed: Annotated[int, typer.Option("--seed", help="seed of the train/test split by article")] = 0,
    target_abstain: Annotated[
        float,
        typer.Option(
            "--target-abstain",
            min=0.0,
            max=0.5,
            help="the threshold abstains on at most this share of answerable training questions",
        ),
    ] = 0.02,
    as_json: JsonOption = False,
) -> None:
    """Fit a logistic gate per system from eval rows; use it with retrieval.gate_model = FILE."""
    from ..calibration.fitting import CATEGORIES
    from ..calibration.gate_training import read_rows, train_gate

    model, report = train_gate(read_rows(rows), test_share, seed, target_abstain, [str(r) for r in rows])
    out_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(out_path)
    if as_json:
        print_json(report)
        return
    from rich.table import Table

    table = Table(
        title=f"held-out articles ({len(model.info['trained_on']['test_articles'])}); "
        f"threshold chosen on the training articles"
    )
    for column in (
        "system",
        "model",
        "AUC",
        "AURC",
        "threshold",
        *(f"abstain {c}" for c in CATEGORIES),
        "recall",
        "answered recall",
    ):
        table.add_column(column, justify="right")
    for name, models in report.items():
        if "skipped" in models:
            out.print(f"{name}: no gate ({models['skipped']})")
            continue
        for result in models.values():
            table.add_row(
                name,
                result["model"],
                rate_text(result["auc"]),
                rate_text(result["aurc"]),
                f"{result['threshold']:.3f}",
                *(rate_text(result["abstain_rate"][c]) for c in CATEGORIES),
                rate_text(result["recall"]),
                rate_text(result["answered_recall"]),
            )
    print_table(table)
    out.print(f'wrote {out_path}: set retrieval.gate_model = "{out_path}" (QRAG_RETRIEVAL_GATE_MODEL) to use it')


PassagesOption = Annotated[int, typer.Option("--passages", min=10, help="passages drawn, one question each")]
HoldOutOption = Annotated[
    float,
    typer.Option(
        "--hold-out",
        min=0.05,
        max=0.8,
        help="share of the documents held out of the index, whose questions become out-of-corpus",
    ),
]
QuestionsOption = Annotated[
    QuestionWriter,
    typer.Option(
        "--questions",
        help="who writes the questions: model (the generation backend), sentences (the passages' "
        "own words), auto: model if one opens",
    ),
]
TargetAbstainOption = Annotated[
    float,
    typer.Option(
        "--target-abstain",
        min=0.0,
        max=0.5,
        help="the threshold abstains on at most this share of in-corpus questions",
    ),
]
BlendOption = Annotated[
    float | None,
    typer.Option(
        "--blend",
        min=0.0,
        max=1.0,
        help="how far the kept threshold moves from the shipped one toward the one "
        "the synthetic questions give (1: all the way) [default: the gate file's weight for the question writer, "
        "measured across corpora]",
    ),
]
SeedOption = Annotated[int, typer.Option("--seed", help="seed of the passages drawn and the documents held out")]
RemoveOption = Annotated[
    bool, typer.Option("--remove", help="drop the namespace's calibration: the shipped gate applies again")
]


@gate_app.command("calibrate")
@friendly_errors
def gate_calibrate(
    passages: PassagesOption = 600,
    hold_out: HoldOutOption = 0.25,
    questions: QuestionsOption = QuestionWriter.auto,
    target_abstain: TargetAbstainOption = 0.05,
    blend: BlendOption = None,
    seed: SeedOption = 0,
    remove: RemoveOption = False,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
    as_json: JsonOption = False,
) -> None:
    """Fit the gate's threshold to this namespace's own corpus, with no labels; kept with its collections."""
    from ..calibration.namespace import QuestionCache, calibrate, question_writer, save
    from ..embedding.packaged import cache_dir

    with open_rag(config, store, namespace) as rag:
        names = [spec.name for spec in rag.settings.collections]
        rag.coordinator.searcher.collections  # noqa: B018 (says what to do when nothing is ingested)
        if remove:
            save(rag.store, names, None)
            out.print(f"removed the calibrated gate of namespace {rag.settings.namespace!r}")
            return
        rag.warm()  # a few hundred retrievals follow
        cache = QuestionCache(cache_dir() / "calibration" / f"{rag.settings.namespace}.jsonl")
        writer_name, write = question_writer(rag.settings, rag.generator, questions.value, seed, cache)
        err.print(f"questions written by: {writer_name}")
        if writer_name == "sentences":
            err.print(
                "warning: queries cut from the passages' own sentences are far easier than real questions "
                "(at their own cut, 19-34% of real in-corpus questions abstained), so the threshold moves only "
                "a little toward theirs; use a model (docs/benchmarks.md)"
            )
        started = time.perf_counter()
        with progress_bar() as bar:
            task = bar.add_task("calibrating", total=2 * passages)

            def counted(passage: str) -> str:
                bar.advance(task)
                return write(passage)

            result = calibrate(
                rag.settings,
                rag.store,
                rag.pipeline,
                counted,
                writer_name,
                passages,
                hold_out,
                seed,
                target_abstain,
                advance=lambda: bar.advance(task),
                blend=blend,
            )
        save(rag.store, names, result.gate)
    seconds = (time.perf_counter() - started) / max(len(result.rows), 1)
    if as_json:
        print_json(result.as_json() | {"seconds_per_question": round(seconds, 3)})
        return
    print_calibration(result, seconds)


def print_calibration(result: CalibrationResult, seconds: float) -> None:
    from rich.table import Table

    info = result.gate.info["calibrated_on"]
    table = Table(
        title=f"namespace {info['namespace']!r}: {info['passages']} questions by {info['questions']}, "
        f"{info['held_out_documents']} documents held out"
    )
    for column in (
        "answerable kept (target)",
        "threshold",
        "abstain: in-corpus",
        "abstain: out-of-corpus",
        "error among answered",
    ):
        table.add_column(column, justify="right")
    for row in result.risk_coverage:
        table.add_row(
            f"{row['target_answerable_kept']:.2f}",
            f"{row['threshold']:.3f}",
            rate_text(row["abstain_answerable"]),
            rate_text(row["abstain_out_of_corpus"]),
            rate_text(row["error_answered"]),
        )
    print_table(table)
    rates = info["abstain_rate"]
    out.print(
        f"the synthetic questions' threshold {info['synthetic_threshold']:.3f}, the shipped one "
        f"{info['shipped_threshold']:.3f}: kept {info['blend']:.2f} of the way between them"
    )
    out.print(
        f"kept threshold {result.gate.systems['quorum'].threshold:.3f} (weights {info['weights']}): abstains on "
        f"{rate_text(rates['answerable'])} in-corpus, {rate_text(rates['out_of_corpus'])} out-of-corpus; "
        f"AURC {result.aurc:.3f}; {seconds:.2f} s per question"
    )


feedback_app = typer.Typer(
    no_args_is_help=True, rich_markup_mode=None, help="Thumbs up and down given through `serve`."
)


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


def plugins(as_json: JsonOption = False) -> None:
    """List what each extension point has installed (stores, generation backends, embedders,
    loaders, expansions, BM25 sources, kinds of source) and which package each comes from."""
    from ..embedding import BM25_SOURCES, EMBEDDERS
    from ..generation import BACKENDS
    from ..ingest.loaders import LOADERS
    from ..ingest.sources import SOURCES
    from ..retrieval.expansion import EXPANSIONS
    from ..store import STORES

    registries = (STORES, BACKENDS, EMBEDDERS, LOADERS, EXPANSIONS, BM25_SOURCES, SOURCES)
    found = {registry.group: registry.origins() for registry in registries}
    if as_json:
        print_json(found)
        return
    for registry in registries:
        named = ", ".join(f"{name} ({origin})" for name, origin in sorted(found[registry.group].items()))
        out.print(f"{registry.kind}s ({registry.group}): {named or 'none'}", markup=False)
