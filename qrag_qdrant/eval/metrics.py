"""Metrics per system. IR metrics come from ir-measures (trec_eval), not hand-written code."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..calibration.fitting import CATEGORIES, risk_curve
from ..generation.checks.agreement import normalize_answer
from ..results import Evidence, Passage, QueryExpansion
from .dataset import EvalQuestion


def holds_answer(text: str, answers: Sequence[str]) -> bool:
    """A gold answer occurs in the text as whole normalised words."""
    haystack = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(answer)} " in haystack for answer in answers if normalize_answer(answer))


def exact_match(prediction: str, answers: Sequence[str]) -> bool:
    """SQuAD's EM: the normalised prediction equals a normalised gold answer."""
    return any(normalize_answer(prediction) == normalize_answer(answer) for answer in answers)


def token_f1(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD's F1: word overlap with the best-matching gold answer."""
    predicted = normalize_answer(prediction).split()
    best = 0.0
    for answer in answers:
        gold = normalize_answer(answer).split()
        common = sum((Counter(predicted) & Counter(gold)).values())
        if common:
            precision, recall = common / len(predicted), common / len(gold)
            best = max(best, 2 * precision * recall / (precision + recall))
    return best


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
    #: the system's gate: its confidence that the context holds the answer (None: no gate for it)
    confidence: float | None = None
    features: dict[str, float] = field(default_factory=dict)
    #: the gate withheld this context (low confidence); ``units`` keep what retrieval found
    gated: bool = False
    #: the context as numbered passages, what a model is shown (``eval --generate``)
    passages: list[Passage] = field(default_factory=list)
    #: what the model wrote for an expanded system (``quorum+mq``, ``quorum+hyde``)
    expansion: QueryExpansion | None = None
    #: quorum's evidence as the query path returned it, answered through the same answer path
    evidence: Evidence | None = None

    @property
    def abstained(self) -> bool:
        return not self.units or self.gated

    @property
    def words(self) -> int:
        return sum(len(text.split()) for unit in self.units for text in unit)


def first_answer_rank(answer: SystemAnswer, answers: Sequence[str]) -> int | None:
    for rank, unit in enumerate(answer.units, start=1):
        if holds_answer(" ".join(unit), answers):
            return rank
    return None


def is_correct(question: EvalQuestion, answer: SystemAnswer, kind: str) -> bool:
    """The context (ungated) holds a gold answer (QA) or comes from a relevant document among its
    first units (relevance). A question nothing in the index answers is never correct."""
    if not question.answerable:
        return False
    if kind == "qa":
        return first_answer_rank(answer, question.answers) is not None
    return any(doc in question.relevant_docs for doc in answer.docs[: max(len(answer.units), 1)])


def risk_coverage(
    questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer], kind: str, points: int = 50
) -> dict[str, Any]:
    """Risk against coverage (``risk_curve``) and its area ``aurc`` (lower is better); a system
    without a gate answers in no particular order, so its curve is flat at its error rate."""
    if not answers:
        return {"aurc": None, "curve": []}
    correct = np.array([is_correct(q, a, kind) for q, a in zip(questions, answers)])
    if any(a.confidence is not None for a in answers):
        risk = risk_curve(
            correct, np.array([a.confidence or 0.0 for a in answers]), np.array([bool(a.units) for a in answers])
        )
    else:
        risk = np.full(len(answers), 1.0 - correct.mean())
    picks = np.unique(np.linspace(0, len(answers) - 1, min(points, len(answers))).round().astype(int))
    return {
        "aurc": float(risk.mean()),
        "curve": [[round(float((i + 1) / len(answers)), 4), round(float(risk[i]), 4)] for i in picks],
    }


def abstain_rates(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, float | None]:
    """Share abstained (no quorum, or the gate) per kind of question; None where there is none."""
    return {
        category: mean_of([a.abstained for q, a in zip(questions, answers) if q.category == category])
        for category in CATEGORIES
    }


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def common_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer], kind: str) -> dict[str, Any]:
    latencies = [a.latency_ms for a in answers]
    curve = risk_coverage(questions, answers, kind)
    return {
        "context_words": float(np.mean([a.words for a in answers])),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "abstain_rate": abstain_rates(questions, answers),
        "aurc": curve["aurc"],
        "risk_coverage": curve["curve"],
    }


def qa_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    """Recall and MRR are over every answerable question, gate or not (the evidence's quality);
    ``answered_recall`` is over those the system did not abstain on. A set whose questions name
    their gold documents (MultiHop-RAG) also gets ``evidence_docs``."""
    answerable = [(q, a) for q, a in zip(questions, answers) if q.answerable]
    ranks = [first_answer_rank(a, q.answers) for q, a in answerable]
    documents = {"evidence_docs": evidence_docs(questions, answers)} if any(q.relevant_docs for q in questions) else {}
    return {
        "answer_recall": mean_of([r is not None for r in ranks]),
        "answered_recall": mean_of([r is not None for r, (_, a) in zip(ranks, answerable) if not a.abstained]),
        "mrr": mean_of([1.0 / r if r else 0.0 for r in ranks]),
        **common_metrics(questions, answers, "qa"),
        **documents,
    }


def evidence_docs(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    """Whether a question's gold documents reach the context, for questions that need several:
    ``coverage`` (the share of its gold documents the context holds), ``all_evidence`` (the share
    of questions with every one of them in it), ``doc_recall@4`` and ``@10`` of the system's
    document ranking, over the answerable questions that name gold documents, gate or not; and the
    abstention rates. For all questions (``all``) and per the data set's kind of question."""

    def summary(pairs: list[tuple[EvalQuestion, SystemAnswer]]) -> dict[str, Any]:
        gold = [(set(q.relevant_docs), a) for q, a in pairs if q.answerable and q.relevant_docs]
        shown = [(docs, {p.source for p in a.passages}, a.docs) for docs, a in gold]
        return {
            "questions": len(pairs),
            "coverage": mean_of([len(docs & context) / len(docs) for docs, context, _ in shown]),
            "all_evidence": mean_of([docs <= context for docs, context, _ in shown]),
            "doc_recall@4": mean_of([len(docs & set(ranking[:4])) / len(docs) for docs, _, ranking in shown]),
            "doc_recall@10": mean_of([len(docs & set(ranking[:10])) / len(docs) for docs, _, ranking in shown]),
            "abstain_rate": abstain_rates([q for q, _ in pairs], [a for _, a in pairs]),
        }

    pairs = list(zip(questions, answers))
    kinds = sorted({q.question_kind for q in questions if q.question_kind})
    return {"all": summary(pairs)} | {
        kind: summary([(q, a) for q, a in pairs if q.question_kind == kind]) for kind in kinds
    }


def trec_judgements(
    questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """The judged queries' relevant documents (qrels) and each system's document ranking (run)."""
    judged = [(q, a) for q, a in zip(questions, answers) if q.answerable]
    qrels = {q.id: {doc: 1 for doc in q.relevant_docs} for q, _ in judged}
    run = {q.id: {doc: 1.0 / rank for rank, doc in enumerate(a.docs, start=1)} for q, a in judged}
    return qrels, run


def relevance_metrics(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, Any]:
    import ir_measures
    from ir_measures import R, nDCG

    scores = ir_measures.calc_aggregate([nDCG @ 10, R @ 100], *trec_judgements(questions, answers))
    return {
        "ndcg@10": float(scores[nDCG @ 10]),
        "recall@100": float(scores[R @ 100]),
        **common_metrics(questions, answers, "relevance"),
    }


def per_question_ndcg(questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer]) -> dict[str, float]:
    """nDCG@10 of each judged query (trec_eval's, through ir-measures)."""
    import ir_measures
    from ir_measures import nDCG

    qrels, run = trec_judgements(questions, answers)
    scores = {m.query_id: float(m.value) for m in ir_measures.iter_calc([nDCG @ 10], qrels, run)}
    return {qid: scores.get(qid, 0.0) for qid in qrels}


def paired_comparison(
    questions: Sequence[EvalQuestion], first: Sequence[SystemAnswer], second: Sequence[SystemAnswer], kind: str
) -> dict[str, dict[str, Any]]:
    """``first`` against ``second`` on the same questions, two-sided, per metric. QA: answer
    recall, with an exact McNemar test (a binomial test on the questions only one of them
    answers), and MRR, and for questions that name their gold documents the context's coverage of
    them and all of them in it (McNemar); relevance: nDCG@10 per query. MRR and nDCG use a Wilcoxon signed-rank
    test (ties split between the signs)."""
    if kind == "qa":
        answerable = [(q, a, b) for q, a, b in zip(questions, first, second) if q.answerable]
        ranks = [(first_answer_rank(a, q.answers), first_answer_rank(b, q.answers)) for q, a, b in answerable]
        compared = {
            "answer_recall": paired_test(
                [(float(a is not None), float(b is not None)) for a, b in ranks], exact_mcnemar=True
            ),
            "mrr": paired_test([(1.0 / a if a else 0.0, 1.0 / b if b else 0.0) for a, b in ranks]),
        }

        # questions that need several documents: the share of the gold ones in each context
        def share(gold: set[str], answer: SystemAnswer) -> float:
            return len(gold & {p.source for p in answer.passages}) / len(gold)

        shares = [(share(gold, a), share(gold, b)) for q, a, b in answerable if (gold := set(q.relevant_docs))]
        if shares:
            compared["coverage"] = paired_test(shares)
            compared["all_evidence"] = paired_test(
                [(float(a == 1.0), float(b == 1.0)) for a, b in shares], exact_mcnemar=True
            )
        return compared
    firsts, seconds = per_question_ndcg(questions, first), per_question_ndcg(questions, second)
    return {"ndcg@10": paired_test([(firsts[qid], seconds[qid]) for qid in firsts])}


def paired_test(pairs: Sequence[tuple[float, float]], exact_mcnemar: bool = False) -> dict[str, Any]:
    """Per-question (first, second) scores: wins, losses, ties and a two-sided p-value."""
    from scipy.stats import binomtest, wilcoxon

    difference = np.array([a - b for a, b in pairs])
    wins, losses = int((difference > 0).sum()), int((difference < 0).sum())
    p_value = None
    if wins + losses:
        p_value = float(
            binomtest(wins, wins + losses).pvalue
            if exact_mcnemar
            else wilcoxon(difference, zero_method="zsplit").pvalue
        )
    return {
        "questions": len(pairs),
        "mean_difference": float(difference.mean()) if pairs else None,
        "wins": wins,
        "losses": losses,
        "ties": len(pairs) - wins - losses,
        "p_value": p_value,
    }


def support_profile(
    questions: Sequence[EvalQuestion], answers: Sequence[SystemAnswer], kind: str
) -> dict[str, dict[str, float | None]]:
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
        row["right"] += (
            holds_answer(" ".join(answer.units[0]), question.answers)
            if kind == "qa"
            else bool(answer.docs) and answer.docs[0] in question.relevant_docs
        )
    return {
        str(support): {
            "questions": row["questions"],
            "top_cluster_right": row["right"] / row["questions"] if row["questions"] else None,
            **({"unanswerable": row["unanswerable"]} if kind == "qa" else {}),
        }
        for support, row in sorted(rows.items())
    }


def mean_of(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def expansion_metrics(answers: Sequence[SystemAnswer], plain: Sequence[SystemAnswer] | None) -> dict[str, Any]:
    """What an expanded system's model calls cost, and how often they failed (searched without)."""
    reports = [a.expansion for a in answers if a.expansion is not None]
    seconds = [r.seconds for r in reports if r.seconds is not None]
    added = [a.latency_ms - b.latency_ms for a, b in zip(answers, plain)] if plain else []
    return {
        "model_seconds_mean": mean_of(seconds),
        "model_seconds_p50": percentile(seconds, 50),
        "model_seconds_p95": percentile(seconds, 95),
        "failed": sum(r.error is not None for r in reports),
        "failures": dict(Counter(r.error for r in reports if r.error)),
        "texts_mean": mean_of([len(r.texts) for r in reports]),
        "added_ms_p50": percentile(added, 50) if added else None,
        "added_ms_mean": mean_of(added) if added else None,
    }


def accuracy_by_kind(rows: Sequence[Any]) -> dict[str, dict[str, Any]] | None:
    """Per kind of question (and ``all``) of scored answers (``answering.GeneratedAnswer``): the
    share answered as MultiHop-RAG's paper scores it (``accurate``), and the share a reply of "yes"
    would have scored (``yes_holds``); None when the data set names no kinds."""
    kinds = sorted({r.kind for r in rows if r.kind})
    if not kinds:
        return None
    return {
        kind: {
            "questions": len(chosen),
            "accuracy": mean_of([r.accurate for r in chosen]),
            "constant_yes": mean_of([r.yes_holds for r in chosen]),
        }
        for kind in ("all", *kinds)
        if (chosen := [r for r in rows if kind in ("all", r.kind)])
    }
