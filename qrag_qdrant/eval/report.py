"""Eval output: a terminal table, and a Markdown report with matplotlib plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table

from ..calibration.fitting import CATEGORIES
from ..errors import QragError
from ..plugins import install_hint
from .runner import EvalResult

QA_COLUMNS = ("answer_recall", "answered_recall", "mrr", "context_words", "abstain_rate", "aurc", "p50_ms", "p95_ms")
RELEVANCE_COLUMNS = ("ndcg@10", "recall@100", "context_words", "abstain_rate", "aurc", "p50_ms", "p95_ms")
#: abstain_rate's parts (the question categories), as the tables name them
ABSTAIN_PARTS = dict(zip(CATEGORIES, ("ans", "unans", "ooc")))


def columns(result: EvalResult) -> tuple[str, ...]:
    return QA_COLUMNS if result.dataset.kind == "qa" else RELEVANCE_COLUMNS


def cell(metric: str, value: Any) -> str:
    if value is None:
        return "-"
    if metric == "abstain_rate":
        return " / ".join(cell("rate", v) for v in value.values() if v is not None)
    if metric.endswith("_ms") or metric == "context_words":
        return f"{value:.1f}"
    return f"{value:.3f}"


def header(metric: str, result: EvalResult) -> str:
    """``abstain (ans / ooc)``: the abstain rate's parts that this data set has."""
    if metric != "abstain_rate":
        return metric
    present = {q.category for q in result.dataset.questions}
    return f"abstain ({' / '.join(short for part, short in ABSTAIN_PARTS.items() if part in present)})"


def systems_table(result: EvalResult) -> Table:
    table = Table(title=f"{result.dataset.name}: {len(result.dataset.questions)} questions")
    table.add_column("system")
    for metric in columns(result):
        table.add_column(header(metric, result), justify="right")
    for name, metrics in result.systems.items():
        table.add_row(name, *(cell(m, metrics[m]) for m in columns(result)))
    return table


#: the columns of the documents-in-the-context table (``metrics.evidence_docs``)
EVIDENCE_DOC_COLUMNS = ("coverage", "all_evidence", "doc_recall@4", "doc_recall@10", "abstain_rate")


def evidence_doc_rows(result: EvalResult) -> list[list[str]]:
    """system × question kind: how much of each question's gold documents reached the context."""
    return [
        [name, kind, str(row["questions"]), *(cell(m, row[m]) for m in EVIDENCE_DOC_COLUMNS)]
        for name, metrics in result.systems.items()
        for kind, row in metrics.get("evidence_docs", {}).items()
    ]


def evidence_docs_table(result: EvalResult) -> Table | None:
    rows = evidence_doc_rows(result)
    if not rows:
        return None
    table = Table(title="the questions' gold documents in the context, by kind")
    for column in ("system", "kind", "questions", *EVIDENCE_DOC_COLUMNS[:-1], header("abstain_rate", result)):
        table.add_column(column, justify="left" if column in ("system", "kind") else "right")
    for row in rows:
        table.add_row(*row)
    return table


def expansions_table(result: EvalResult) -> Table | None:
    """Each expanded system against quorum on the same questions, and what its model calls cost."""
    expanded = {name: m for name, m in result.systems.items() if "vs_quorum" in m}
    if not expanded:
        return None
    table = Table(title="query expansions against quorum (paired)")
    for column in (
        "system",
        "metric",
        "difference",
        "wins / losses / ties",
        "p",
        "model s (mean / p50)",
        "added ms p50",
        "failed",
    ):
        table.add_column(column, justify="left" if column in ("system", "metric") else "right")
    for name, metrics in expanded.items():
        cost = metrics["expansion"]
        for metric, paired in metrics["vs_quorum"].items():
            table.add_row(
                name,
                metric,
                f"{paired['mean_difference']:+.4f}",
                f"{paired['wins']} / {paired['losses']} / {paired['ties']}",
                cell("p", paired["p_value"]),
                f"{cell('s', cost['model_seconds_mean'])} / {cell('s', cost['model_seconds_p50'])}",
                cell("added_ms", cost["added_ms_p50"]),
                str(cost["failed"]),
            )
    return table


def sweep_table(result: EvalResult) -> Table:
    keys = [k for k in result.sweep[0] if k not in columns(result)]
    table = Table(title="quorum sweep")
    for key in (*keys, *columns(result)):
        table.add_column(header(key, result), justify="right")
    for point in result.sweep:
        table.add_row(*(str(point[k]) for k in keys), *(cell(m, point[m]) for m in columns(result)))
    return table


#: eval --generate's columns: (header, how to read the value from a system's answer metrics)
ANSWER_COLUMNS: tuple[tuple[str, Any], ...] = (
    ("EM", lambda m: cell("rate", m["em"])),
    ("F1", lambda m: cell("rate", m["f1"])),
    ("holds gold", lambda m: cell("rate", m["holds_gold"])),
    ("answered (ans / unans / ooc)", lambda m: cell("abstain_rate", m["answered_rate"])),
    ("same, unsupported refused", lambda m: cell("abstain_rate", m["answered_rate_if_refused"])),
    (
        "citations valid / cite unshown / uncited",
        lambda m: f"{cell('rate', m['citations_valid'])} / {m['cites_unshown']} / {cell('rate', m['uncited'])}",
    ),
    (
        "supported: share / P / R",
        lambda m: " / ".join(cell("rate", m["grounding"][k]) for k in ("supported", "precision", "recall")),
    ),
    ("unans. shown supported", lambda m: cell("rate", m["grounding"]["unanswerable_shown_supported"])),
    ("context words", lambda m: cell("context_words", m["context_words"])),
    ("prompt tokens (p50)", lambda m: cell("context_words", m["prompt_tokens_p50"])),
    ("cached", lambda m: cell("rate", m["cached_share"])),
    ("tokens/s", lambda m: cell("context_words", m["tokens_per_second"])),
    ("s/answer", lambda m: cell("context_words", m["seconds_per_answer"])),
)


def answer_rows(generation: dict[str, Any]) -> list[list[str]]:
    return [[name, *(read(metrics) for _, read in ANSWER_COLUMNS)] for name, metrics in generation["systems"].items()]


def paired_line(generation: dict[str, Any]) -> str | None:
    paired = generation.get("paired_f1")
    if not paired:
        return None
    first, second = paired["systems"]
    gold = generation["paired_holds_gold"]
    return (
        f"{first} against {second} on {paired['questions']} answerable questions: F1 difference "
        f"{paired['mean_difference']:+.3f} ({paired['wins']} wins, {paired['losses']} losses, Wilcoxon p = "
        f"{p_text(paired['p_value'])}); holds gold {gold['mean_difference']:+.3f} ({gold['wins']} wins, "
        f"{gold['losses']} losses, exact McNemar p = {p_text(gold['p_value'])})"
    )


def p_text(p_value: float | None) -> str:
    return "-" if p_value is None else f"{p_value:.2g}"


def answers_table(generation: dict[str, Any]) -> Table:
    table = Table(
        title=f"answers: {generation['questions']} questions, {generation['model']}", caption=paired_line(generation)
    )
    table.add_column("system")
    for name, _ in ANSWER_COLUMNS:
        table.add_column(name, justify="right")
    for row in answer_rows(generation):
        table.add_row(*row)
    return table


def accuracy_rows(generation: dict[str, Any]) -> list[list[str]]:
    """Per system and kind of question: the paper's accuracy beside answering "yes" to all."""
    return [
        [name, kind, str(scores["questions"]), cell("rate", scores["accuracy"]), cell("rate", scores["constant_yes"])]
        for name, metrics in generation["systems"].items()
        for kind, scores in (metrics.get("accuracy_by_kind") or {}).items()
    ]


ACCURACY_HEADERS = ["system", "kind", "questions", "accuracy", "all answered yes"]


def accuracy_table(generation: dict[str, Any]) -> Table | None:
    rows = accuracy_rows(generation)
    if not rows:
        return None
    table = Table(title="answer accuracy by kind: the gold answer in the reply, or a decline where there is none")
    for index, name in enumerate(ACCURACY_HEADERS):
        table.add_column(name, justify="left" if index < 2 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def decline_rows(generation: dict[str, Any]) -> tuple[list[str], list[list[str]]] | None:
    """Answered rates per kind had llm.decline_threshold been each t (the backend reported its
    decline probability), to choose the threshold from one run."""
    curves = {
        name: m["answered_rate_if_declined_at"]
        for name, m in generation["systems"].items()
        if m.get("answered_rate_if_declined_at")
    }
    if not curves:
        return None
    thresholds = list(next(iter(curves.values())))
    rows = [
        [f"{name}, {kind}", *(cell("rate", curve[t][kind]) for t in thresholds)]
        for name, curve in curves.items()
        for kind in curve[thresholds[0]]
        if curve[thresholds[0]][kind] is not None
    ]
    return ["answered if llm.decline_threshold were", *thresholds], rows


def decline_table(generation: dict[str, Any]) -> Table | None:
    found = decline_rows(generation)
    if found is None:
        return None
    headers, rows = found
    table = Table(title="answered rate by decline threshold (the model answers below it)")
    for index, name in enumerate(headers):
        table.add_column(name, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def draw_plots(result: EvalResult, folder: Path) -> None:
    """recall_vs_context_words.png, risk_coverage.png and recall_by_support.png in ``folder``."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise QragError(f"--report needs matplotlib: {install_hint('eval')}") from None
    folder.mkdir(parents=True, exist_ok=True)
    quality = columns(result)[0]
    figure, axes = plt.subplots(figsize=(6, 4))
    for name, metrics in result.systems.items():
        axes.scatter(metrics["context_words"], metrics[quality], s=40)
        axes.annotate(
            name, (metrics["context_words"], metrics[quality]), fontsize=8, xytext=(4, 2), textcoords="offset points"
        )
    axes.set_xlabel("mean context words")
    axes.set_ylabel(quality)
    axes.set_title(f"{result.dataset.name}: {quality} against context size")
    figure.tight_layout()
    figure.savefig(folder / "recall_vs_context_words.png", dpi=120)
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(6, 4))
    for name, metrics in result.systems.items():
        curve = metrics["risk_coverage"]
        if curve:
            axes.plot([c for c, _ in curve], [r for _, r in curve], label=f"{name} ({cell('aurc', metrics['aurc'])})")
    axes.set_xlabel("coverage (share of questions answered, most confident first)")
    axes.set_ylabel("risk (error rate among those answered)")
    axes.set_title(f"{result.dataset.name}: risk against coverage (AURC)")
    axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(folder / "risk_coverage.png", dpi=120)
    plt.close(figure)

    figure, axes = plt.subplots(figsize=(6, 4))
    supports = list(result.support)
    axes.bar(supports, [result.support[s]["top_cluster_right"] or 0.0 for s in supports])
    for index, support in enumerate(supports):
        axes.annotate(f"n={result.support[support]['questions']:.0f}", (index, 0.02), ha="center", fontsize=8)
    axes.set_xlabel("support of the top cluster (retrievers)")
    axes.set_ylabel("top cluster right")
    axes.set_ylim(0, 1)
    axes.set_title("Is support a confidence signal?")
    figure.tight_layout()
    figure.savefig(folder / "recall_by_support.png", dpi=120)
    plt.close(figure)


def write_report(result: EvalResult, folder: Path, command: str) -> Path:
    """report.md with the tables, and the plots beside it."""
    draw_plots(result, folder)
    kind, cols = result.dataset.kind, columns(result)
    rows = [[name, *(cell(m, metrics[m]) for m in cols)] for name, metrics in result.systems.items()]
    support_rows = [
        [s, f"{row['questions']:.0f}", cell("rate", row["top_cluster_right"]), str(row.get("unanswerable", "-"))]
        for s, row in result.support.items()
    ]
    parts = [
        f"# Evaluation: {result.dataset.name}",
        "",
        f"{len(result.dataset.questions)} questions ({kind} data set). Command:",
        "",
        f"```\n{command}\n```",
        "",
        markdown_table(["system", *(header(m, result) for m in cols)], rows),
        "",
        *(
            [
                markdown_table(
                    ["system", "kind", "questions", *EVIDENCE_DOC_COLUMNS[:-1], header("abstain_rate", result)],
                    doc_rows,
                ),
                "",
            ]
            if (doc_rows := evidence_doc_rows(result))
            else []
        ),
        "![recall against context words](recall_vs_context_words.png)",
        "",
        "## Abstention: risk against coverage",
        "",
        "Each system answers its most confident questions first (quorum: the evidence gate; the others: a "
        "gate on their own list's top score and score gap). Risk is the error rate among the questions "
        "answered; AURC is the area under the curve (lower is better).",
        "",
        "![risk against coverage](risk_coverage.png)",
        "",
        "## Quorum support",
        "",
        markdown_table(
            ["top-cluster support", "questions", "top cluster right", "unanswerable questions"], support_rows
        ),
        "",
        "![recall by support](recall_by_support.png)",
        "",
    ]
    if result.generation:
        parts += [
            "## Answers",
            "",
            f"{result.generation['questions']} questions, model "
            f"{result.generation['model']}, the same for every system.",
            "",
            markdown_table(["system", *(name for name, _ in ANSWER_COLUMNS)], answer_rows(result.generation)),
            "",
            paired_line(result.generation) or "",
            "",
        ]
        if accuracy := accuracy_rows(result.generation):
            parts += [markdown_table(ACCURACY_HEADERS, accuracy), ""]
        if (declines := decline_rows(result.generation)) is not None:
            parts += [markdown_table(*declines), ""]
    if result.sweep:
        keys = [k for k in result.sweep[0] if k not in cols]
        parts += [
            "## Sweep",
            "",
            markdown_table(
                [*keys, *(header(m, result) for m in cols)],
                [[str(p[k]) for k in keys] + [cell(m, p[m]) for m in cols] for p in result.sweep],
            ),
            "",
        ]
    path = folder / "report.md"
    path.write_text("\n".join(parts))
    return path
