"""Answer-level evaluation (``eval --generate``): one model answers the same questions from each
system's context, and the answers are scored, checked and compared in pairs.

Every answer goes through ``generation.answer.answer_from``, the query path's own code:
quorum's evidence as ``Coordinator.evidence_from`` returned it, the window fit, the grounding
check and the judge. A system whose gate abstained is not asked; its answer counts as
abstained. Scores are SQuAD's (EM and F1 after its normalisation) on the short answer, and
whether the answer holds a gold string. The grounding check ("supported") is scored against
holding the gold answer. Systems are compared on the same questions with a Wilcoxon
signed-rank test of their per-question F1 and an exact McNemar test of holding the gold.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..calibration.fitting import CATEGORIES
from ..config.sections import GenerationSettings
from ..config.settings import Settings
from ..generation import GenerationBackend
from ..generation.answer import answer_from
from ..generation.checks.claims import confident
from ..generation.checks.reading import CITATION
from ..results import Answer, Evidence, EvidenceCluster
from .dataset import EvalQuestion
from .metrics import (
    SystemAnswer,
    accuracy_by_kind,
    exact_match,
    holds_answer,
    mean_of,
    paired_test,
    percentile,
    token_f1,
)


@dataclass
class GeneratedAnswer:
    """One system's answer to one question, scored."""

    id: str
    category: str
    system: str
    answer: str | None
    short_answer: str | None
    #: gate (the context was withheld), model_declined, unsupported_answer, error, or None: answered
    outcome: str | None
    em: bool
    f1: float
    holds_gold: bool
    citations: int
    #: every citation names a passage that was shown (None: nothing cited)
    citations_valid: bool | None
    claims_judged: int
    claims_supported: int
    #: the judge found a claim its passages do not support (None: not judged)
    flagged: bool | None
    #: every claim passed the grounding and relevance checks (and the judge, where on); None: not answered
    supported: bool | None
    seconds: float
    kind: str | None = None  # the data set's kind of question, if it names one
    #: MultiHop-RAG's score: a gold answer in the reply, or for a question with none, a decline
    accurate: bool = False
    yes_holds: bool = False  # a reply of "yes" would hold a gold answer

    context_words: int = 0
    context_policy: str | None = None
    #: the judge's P(yes) per judged claim, to choose its threshold from labelled answers
    claim_scores: list[float] = field(default_factory=list)
    #: the model's probability of declining, from its first token (to choose generation.decline_threshold)
    decline_probability: float | None = None
    #: the lowest relevance of its claims, all grounded (None: a claim is not), to choose generation.min_relevance
    relevance: float | None = None
    #: the model's confidence in its short answer (None: not reported), to choose generation.min_answer_probability
    answer_probability: float | None = None
    #: the gate's confidence in the context (None: no gate), to choose generation.min_evidence_confidence
    confidence: float | None = None
    #: the readings' agreement (generation.samples), to choose generation.min_agreement
    agreement: dict[str, Any] | None = None
    #: the lowest coverage of the question's key words by a claim's sentence, to choose generation.min_coverage
    coverage: float | None = None
    #: a claim's cited passages give another value as well (generation.rivals)
    ambiguous: bool = False
    readings_seconds: float | None = None
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    completion_seconds: float | None = None

    @property
    def answered(self) -> bool:
        return self.outcome is None

    @property
    def reached_model(self) -> bool:
        """The model was asked: neither the gate nor an error stopped the question before it."""
        return self.outcome not in ("gate", "error")

    @property
    def should_not_answer(self) -> bool:
        """An out-of-corpus or unanswerable question whose context reached the model."""
        return self.category != "answerable" and self.reached_model


def score_answer(question: EvalQuestion, system: str, answer: Answer, seconds: float) -> GeneratedAnswer:
    short = answer.short_answer or CITATION.sub("", answer.answer or "")
    outcome = (
        "gate"
        if answer.abstain_reason in ("no_quorum", "low_confidence", "part_missing")
        else ("error" if answer.error else answer.abstain_reason if answer.abstained else None)
    )
    cited = [n for claim in answer.claims for n in claim.citations]
    judged = [c for c in answer.claims if c.score is not None]
    relevances = [c.relevance for c in answer.claims if c.relevance is not None]
    scored = outcome is None and question.answerable
    holds_gold = scored and holds_answer(CITATION.sub("", answer.answer or ""), question.answers)
    return GeneratedAnswer(
        id=question.id,
        category=question.category,
        system=system,
        answer=answer.answer,
        short_answer=answer.short_answer,
        outcome=outcome,
        em=scored and exact_match(short, question.answers),
        f1=token_f1(short, question.answers) if scored else 0.0,
        holds_gold=holds_gold,
        kind=question.question_kind,
        accurate=holds_gold if question.answerable else outcome in ("gate", "model_declined"),
        yes_holds=question.answerable and holds_answer("yes", question.answers),
        citations=len(cited),
        citations_valid=not any(c.invalid_citations for c in answer.claims) if cited else None,
        claims_judged=len(judged),
        claims_supported=sum(bool(c.supported) for c in judged),
        flagged=any(not c.supported for c in judged) if judged else None,
        supported=bool(answer.claims) and all(c.supported for c in answer.claims) if outcome is None else None,
        seconds=seconds,
        context_words=answer.context_words,
        context_policy=answer.context_policy,
        claim_scores=[c.score for c in judged if c.score is not None],
        decline_probability=answer.decline_probability,
        relevance=min(relevances) if answer.claims and len(relevances) == len(answer.claims) else None,
        answer_probability=answer.answer_probability,
        confidence=answer.confidence,
        agreement=answer.agreement.model_dump() if answer.agreement is not None else None,
        coverage=min(c.coverage for c in answer.claims if c.coverage is not None)
        if answer.claims and all(c.coverage is not None for c in answer.claims)
        else None,
        ambiguous=any(c.rival is not None for c in answer.claims),
        readings_seconds=answer.timings_ms["readings"] / 1000 if "readings" in answer.timings_ms else None,
        **(answer.usage.model_dump() if answer.usage is not None else {}),
    )


def chunk_evidence(question: EvalQuestion, system: str, context: SystemAnswer) -> Evidence:
    """A chunk system's context as evidence, so it is answered through the same path as quorum's."""
    reason = "low_confidence" if context.gated else "no_quorum" if not context.units else None
    return Evidence(
        question=question.question,
        abstained=reason is not None,
        abstain_reason=reason,
        confidence=context.confidence,
        retrievers=1,
        timings_ms={},
        clusters=[
            EvidenceCluster(rank=p.citation, score=0.0, support=1, retrievers=[system], passages=[p])
            for p in context.passages
        ],
    )


def generate_for(
    question: EvalQuestion,
    system: str,
    context: SystemAnswer,
    settings: Settings,
    backend: Callable[[], GenerationBackend],
) -> GeneratedAnswer:
    evidence = context.evidence or chunk_evidence(question, system, context)
    started = time.perf_counter()
    answer = answer_from(evidence, backend, settings)
    seconds = 0.0 if evidence.abstained else time.perf_counter() - started
    return score_answer(question, system, answer, seconds)


#: the llm.decline_threshold values whose outcome ``decline_curve`` works out from one run
DECLINE_THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


def decline_curve(rows: Sequence[GeneratedAnswer]) -> dict[str, dict[str, float | None]] | None:
    """The answered rate per question kind had ``llm.decline_threshold`` been t, for each t: the
    model answers when its first token's decline probability is below t, whatever it did here.
    None when the backend reports no decline probability."""
    asked = [r for r in rows if r.reached_model]
    if not asked or any(r.decline_probability is None for r in asked):
        return None
    return {
        f"{t:g}": {
            c: mean_of([r.reached_model and (r.decline_probability or 0.0) < t for r in rows if r.category == c])
            for c in CATEGORIES
        }
        for t in DECLINE_THRESHOLDS
    }


#: per ``answer_metrics`` sweep: the generation setting it varies, and the values whose outcome it
#: works out from one run (each other setting held at the run's own)
SUPPORT_SWEEPS = {
    "supported_at_relevance": ("min_relevance", (0.0, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6)),
    "supported_at_answer_probability": ("min_answer_probability", (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)),
    "supported_at_evidence_confidence": ("min_evidence_confidence", (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)),
    "supported_at_agreement": ("min_agreement", (0.0, 0.5, 0.6, 0.67, 0.75, 0.8, 0.9, 1.0)),
}


def support_scores(
    rows: Sequence[GeneratedAnswer], supported: Callable[[GeneratedAnswer], bool] = lambda r: bool(r.supported)
) -> dict[str, Any]:
    """ "Supported" against holding the gold answer: the share of answers supported, its precision
    and recall on answerable questions, and the share of answers shown as supported among the
    out-of-corpus and unanswerable questions whose context reached the model."""
    checked = [r for r in rows if r.category == "answerable" and r.answered and r.supported is not None]
    kept = [r for r in checked if supported(r)]
    held = sum(r.holds_gold for r in checked)
    reached = [r for r in rows if r.should_not_answer]
    return {
        "supported": mean_of([supported(r) for r in checked]),
        "precision": mean_of([r.holds_gold for r in kept]) if kept else None,
        "recall": sum(r.holds_gold for r in kept) / held if held else None,
        "unanswerable_shown_supported": mean_of([supported(r) for r in reached]) if reached else None,
    }


def supported_under(options: GenerationSettings) -> Callable[[GeneratedAnswer], bool]:
    """The answer step's "supported" rule at ``options``' thresholds, from what a row recorded: every
    claim grounded and relevant, its sentence covering the question, no rival, the model sure enough,
    the readings agreeing enough, the evidence strong enough (the judge aside)."""
    return lambda row: (
        row.relevance is not None
        and row.relevance >= options.min_relevance
        and row.coverage is not None
        and row.coverage >= options.min_coverage
        and not (options.rivals and row.ambiguous)
        and confident(row.answer_probability, options.min_answer_probability)
        and confident(row.agreement["share"] if row.agreement else None, options.min_agreement)
        and confident(row.confidence, options.min_evidence_confidence)
    )


def agreement_histogram(rows: Sequence[GeneratedAnswer]) -> dict[str, dict[str, int]] | None:
    """Per question kind, how many answers had each count of agreeing readings ("4/5"); None
    without generation.samples."""
    counts = Counter((r.category, f"{a['agreeing']}/{a['readings']}") for r in rows if (a := r.agreement))
    if not counts:
        return None
    return {c: {share: n for (kind, share), n in sorted(counts.items()) if kind == c} for c in CATEGORIES}


def answer_metrics(rows: Sequence[GeneratedAnswer], options: GenerationSettings | None = None) -> dict[str, Any]:
    """Per system: scores over answerable questions, abstention per kind, checks and speed.
    ``options``: the run's checks, which each threshold sweep holds fixed but its own."""
    options = options or GenerationSettings()
    answerable = [r for r in rows if r.category == "answerable"]
    answered = [r for r in rows if r.answered]
    asked = [r for r in rows if r.outcome != "gate" and r.prompt_tokens is not None]
    flagged = [r for r in answerable if r.answered and r.flagged is not None]
    wrong = [r for r in flagged if not r.holds_gold]
    caught = [r for r in flagged if r.flagged and not r.holds_gold]
    raised = [r for r in flagged if r.flagged]
    completion_seconds = sum(r.completion_seconds or 0.0 for r in asked)
    return {
        "answers": len(rows),
        "em": mean_of([r.em for r in answerable]),
        "f1": mean_of([r.f1 for r in answerable]),
        "holds_gold": mean_of([r.holds_gold for r in answerable]),
        "accuracy_by_kind": accuracy_by_kind(rows),
        "answered_rate": {c: mean_of([r.answered for r in rows if r.category == c]) for c in CATEGORIES},
        # what the user gets with generation.unsupported = "refuse": flagged answers are refused too
        "answered_rate_if_refused": {
            c: mean_of([r.answered and not r.flagged for r in rows if r.category == c]) for c in CATEGORIES
        },
        "answered_rate_if_declined_at": decline_curve(rows),
        "outcomes": dict(sorted(Counter(r.outcome or "answered" for r in rows).items())),
        # of the answers that cite: all their citations name a passage that was shown
        "citations_valid": mean_of([bool(r.citations_valid) for r in answered if r.citations]),
        "cites_unshown": sum(r.citations_valid is False for r in answered),
        "uncited": mean_of([r.citations == 0 for r in answered]),
        "claims_supported": (
            sum(r.claims_supported for r in answered) / judged
            if (judged := sum(r.claims_judged for r in answered))
            else None
        ),
        "judge": {
            "flagged": len(raised),
            "wrong": len(wrong),
            "precision": len(caught) / len(raised) if raised else None,
            "recall": len(caught) / len(wrong) if wrong else None,
        },
        # "supported" (grounding and relevance checks, and the judge where on) against holding the gold answer
        "grounding": support_scores(rows),
        **{
            sweep: {
                f"{t:g}": support_scores(rows, supported_under(options.model_copy(update={setting: t}))) for t in values
            }
            for sweep, (setting, values) in SUPPORT_SWEEPS.items()
        },
        "agreement": agreement_histogram(rows),
        "readings_p50_seconds": (
            percentile(readings, 50) if (readings := [r.readings_seconds for r in rows if r.readings_seconds]) else None
        ),
        "unanswerable_reached_model": sum(r.should_not_answer for r in rows),
        "context_words": mean_of([r.context_words for r in rows if r.outcome != "gate"]),
        "prompt_tokens": mean_of([r.prompt_tokens or 0 for r in asked]),
        "prompt_tokens_p50": percentile([r.prompt_tokens or 0 for r in asked], 50) if asked else None,
        "cached_share": (
            sum(r.cached_tokens or 0 for r in asked) / total
            if (total := sum(r.prompt_tokens or 0 for r in asked))
            else None
        ),
        "tokens_per_second": (
            sum(r.completion_tokens or 0 for r in asked) / completion_seconds if completion_seconds else None
        ),
        "seconds_per_answer": mean_of([r.seconds for r in rows if r.outcome != "gate"]),
        "p50_seconds": percentile([r.seconds for r in rows if r.outcome != "gate"], 50),
        "p95_seconds": percentile([r.seconds for r in rows if r.outcome != "gate"], 95),
    }


def paired_f1(first: Sequence[GeneratedAnswer], second: Sequence[GeneratedAnswer]) -> dict[str, Any]:
    """The first system's F1 against the second's on the same answerable questions, with a
    two-sided Wilcoxon signed-rank test (scipy; ties split between the signs)."""
    return paired_test([(a.f1, b.f1) for a, b in zip(first, second) if a.category == "answerable"])


class AnswerEvaluation:
    """Generates an answer from each of ``systems``' contexts for every question it is given."""

    def __init__(self, settings: Settings, backend: Callable[[], GenerationBackend], systems: Sequence[str]):
        self.settings, self.backend, self.systems = settings, backend, list(systems)

    def run(
        self,
        questions: Sequence[EvalQuestion],
        contexts: Mapping[str, Sequence[SystemAnswer]],
        advance: Callable[[], None] = lambda: None,
        on_answer: Callable[[GeneratedAnswer], None] = lambda answer: None,
    ) -> dict[str, Any]:
        """``on_answer`` sees each answer as it is scored, so a long run keeps what it has done."""
        rows: dict[str, list[GeneratedAnswer]] = {name: [] for name in self.systems}
        for index, question in enumerate(questions):
            for name in self.systems:
                rows[name].append(generate_for(question, name, contexts[name][index], self.settings, self.backend))
                on_answer(rows[name][-1])
            advance()
        result: dict[str, Any] = {
            "questions": len(questions),
            "model": model_label(self.settings),
            "systems": {name: answer_metrics(per, self.settings.generation) for name, per in rows.items()},
            "rows": [asdict(r) for per in rows.values() for r in per],
        }
        if len(self.systems) >= 2:
            first, second = self.systems[:2]
            result["paired_f1"] = {"systems": [first, second], **paired_f1(rows[first], rows[second])}
            result["paired_holds_gold"] = {
                "systems": [first, second],
                **paired_test(
                    [
                        (float(a.holds_gold), float(b.holds_gold))
                        for a, b in zip(rows[first], rows[second])
                        if a.category == "answerable"
                    ],
                    exact_mcnemar=True,
                ),
            }
        return result


def draw(total: int, count: int, seed: int) -> list[int]:
    """``count`` of ``total`` question indexes, in order, drawn with ``seed`` (all when fewer)."""
    if count >= total:
        return list(range(total))
    return sorted(random.Random(seed).sample(range(total), count))


def model_label(settings: Settings) -> str:
    backend = settings.generation.backend
    if backend == "ollama":
        return f"ollama:{settings.ollama.model}"
    if backend in ("auto", "embedded"):
        from ..generation.backends.embedded import packaged_model_name

        return str(settings.llm.gguf or packaged_model_name(settings.llm))
    return backend
