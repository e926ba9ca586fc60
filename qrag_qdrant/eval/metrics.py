"""Metrics per system. IR metrics come from ir-measures (trec_eval), not hand-written code."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .dataset import EvalQuestion

ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(ARTICLES.sub(" ", text.lower().translate(PUNCTUATION)).split())


def holds_answer(text: str, answers: Sequence[str]) -> bool:
    """A gold answer occurs in the text as whole normalised words."""
    haystack = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(answer)} " in haystack for answer in answers if normalize_answer(answer))


@dataclass
class SystemAnswer:
    """What one system gave for one question.

    ``units`` is the context in rank order: a unit is a chunk for the chunk systems and a
    cluster (its merged passages) for quorum. ``docs`` is the system's full ranking of
    source documents, for the relevance metrics.
    """

    units: list[list[str]]
    docs: list[str] = field(default_factory=list)
    latency_ms: float = 0.0
    support: int | None = None

    @property
    def abstained(self) -> bool:
        return not self.units

    @property
    def words(self) -> int:
        return sum(len(text.split()) for unit in self.units for text in unit)


def first_answer_rank(answer: SystemAnswer, answers: Sequence[str]) -> int | None:
    for rank, unit in enumerate(answer.units, start=1):
        if holds_answer(" ".join(unit), answers):
            return rank
    return None


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def common_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    latencies = [a.latency_ms for a in answers]
    return {"context_words": float(np.mean([a.words for a in answers])),
            "p50_ms": percentile(latencies, 50), "p95_ms": percentile(latencies, 95)}


def qa_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    answerable = [(q, a) for q, a in zip(questions, answers) if q.answerable]
    unanswerable = [a for q, a in zip(questions, answers) if not q.answerable]
    ranks = [first_answer_rank(a, q.answers) for q, a in answerable]
    return {
        "answer_recall": _mean([r is not None for r in ranks]),
        "mrr": _mean([1.0 / r if r else 0.0 for r in ranks]),
        **common_metrics(questions, answers),
        "abstain_rate": {"answerable": _mean([a.abstained for _, a in answerable]),
                         "unanswerable": _mean([a.abstained for a in unanswerable])},
    }


def relevance_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    import ir_measures
    from ir_measures import R, nDCG

    qrels = {q.id: {doc: 1 for doc in q.relevant_docs} for q in questions}
    run = {q.id: {doc: 1.0 / rank for rank, doc in enumerate(a.docs, start=1)} for q, a in zip(questions, answers)}
    scores = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], qrels, run)
    return {"ndcg@10": float(scores[nDCG @ 10]), "recall@100": float(scores[R @ 100]),
            **common_metrics(questions, answers),
            "abstain_rate": {"answerable": _mean([a.abstained for a in answers]), "unanswerable": None}}


def support_profile(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer],
                    kind: str) -> dict[str, dict[str, float]]:
    """Per top-cluster support: how many questions, how often the top cluster was right,
    and (QA) how many unanswerable questions got that support.

    Right means it holds a gold answer (QA) or comes from a relevant document (relevance).
    """
    rows: dict[int, dict[str, float]] = {}
    for question, answer in zip(questions, answers):
        if answer.support is None:
            continue
        row = rows.setdefault(answer.support, {"questions": 0, "right": 0, "unanswerable": 0})
        if kind == "qa" and not question.answerable:
            row["unanswerable"] += 1
            continue
        row["questions"] += 1
        row["right"] += (holds_answer(" ".join(answer.units[0]), question.answers) if kind == "qa"
                         else bool(answer.docs) and answer.docs[0] in question.relevant_docs)
    return {str(support): {"questions": row["questions"],
                           "top_cluster_right": row["right"] / row["questions"] if row["questions"] else None,
                           **({"unanswerable": row["unanswerable"]} if kind == "qa" else {})}
            for support, row in sorted(rows.items())}


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None
