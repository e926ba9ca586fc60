"""Which rule should decide "supported": the greedy answer's token probability (today's default),
the agreement of readings (``generation.samples``), the question's rare words the passages lack
(``generation.key_terms``), or a logistic combination. Chosen on the tuning runs, reported on the
test runs, all from one kind of run:

    QRAG_GENERATION_SAMPLES=5 QRAG_GENERATION_MIN_ANSWER_PROBABILITY=0 \\
        qrag-qdrant eval $DATA/squad-dev --articles tune ... --generate N --answers-out tune.jsonl
    python benchmarks/agreement_report.py --data $DATA --tune tune.jsonl sq2-tune.jsonl \\
        --test test.jsonl sq2-test.jsonl ooc-test.jsonl --json-out agreement.json

With ``min_answer_probability = 0`` and ``min_agreement = 0`` a row's ``supported`` is the checks
every rule shares (grounded, relevant, no instruction); each rule adds its own test here. The
readings of a row hold 1 + 5 answers, so every k <= 5 is its first k samples. An answer's
correctness is whether its short answer holds a gold answer (SQuAD normalisation).

A reading shown under one rule that the run did not check (another group than the one the run
showed) has unknown grounding: it counts as not supported, and the report says how many there are.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qrag_qdrant.eval.metrics import holds_answer, paired_test
from qrag_qdrant.generation.agreement import DECLINE, DECLINED, Reading, agree, normalize_answer, same_answer
from qrag_qdrant.generation.verify import QUESTION_FORM

TODAY = 0.85  # generation.min_answer_probability, today's default
PRECISION = 0.90  # the rule fixed first: the most recall at this precision on the tuning answers
KS = (1, 2, 3, 4, 5)
THRESHOLDS = (0.5, 0.6, 0.67, 0.75, 0.8, 0.85, 0.9, 1.0)


@dataclass(frozen=True)
class Shown:
    """What one rule shows for one question."""

    answered: bool
    supported: bool
    correct: bool
    #: the rule showed a reading the run did not check
    unknown: bool = False


@dataclass
class Row:
    raw: dict[str, Any]
    gold: list[str]
    category: str

    @property
    def readings(self) -> list[str]:
        return self.raw["agreement"]["answers"]

    @property
    def probabilities(self) -> list[float | None]:
        return self.raw["agreement"]["probabilities"]

    def key(self, index: int) -> str:
        text = self.readings[index]
        return DECLINE if text == DECLINED else normalize_answer(text)

    def agreed(self, k: int) -> Any:
        """The agreement of the greedy reading and the first ``k`` samples."""
        return agree(
            [
                Reading("not in the documents" if self.key(i) == DECLINE else self.readings[i], self.probabilities[i])
                for i in range(k + 1)
            ]
        )

    def checked(self, index: int) -> bool | None:
        """The shared checks of reading ``index``: the run's, when it is in the group the run showed."""
        if not same_answer(self.key(index), self.key(self.agreed(len(self.readings) - 1).chosen)):
            return None
        return bool(self.raw["supported"])

    def shown(self, index: int, extra: bool) -> Shown:
        if self.key(index) == DECLINE:
            return Shown(False, False, False)
        checks = self.checked(index)
        correct = self.category == "answerable" and holds_answer(self.readings[index], self.gold)
        return Shown(True, bool(checks) and extra, correct, checks is None)

    def missing(self) -> list[str]:
        return [word for word in self.raw.get("missing_terms") or [] if word not in QUESTION_FORM]


def today(row: Row) -> Shown:
    return row.shown(0, (row.probabilities[0] or 0.0) >= TODAY)


def by_agreement(k: int, threshold: float, key_terms: bool = False) -> Callable[[Row], Shown]:
    def rule(row: Row) -> Shown:
        agreed = row.agreed(k)
        return row.shown(agreed.chosen, agreed.agreeing / (k + 1) >= threshold and not (key_terms and row.missing()))

    return rule


def with_key_terms(base: Callable[[Row], Shown]) -> Callable[[Row], Shown]:
    def rule(row: Row) -> Shown:
        shown = base(row)
        return Shown(shown.answered, shown.supported and not row.missing(), shown.correct, shown.unknown)

    return rule


def read(paths: Iterable[Path], data: Path) -> list[Row]:
    """The rows whose question reached the model, with their gold answers."""
    gold = {
        question["id"]: question.get("answers") or []
        for name in ("squad-dev", "squad2-dev")
        for question in map(json.loads, (data / name / "questions.jsonl").read_text().splitlines())
    }
    return [
        Row(raw, gold.get(raw["id"], []), raw["category"])
        for path in paths
        for raw in map(json.loads, path.read_text().splitlines())
        if raw["outcome"] not in ("gate", "error") and raw.get("agreement")
    ]


def measure(rows: list[Row], rule: Callable[[Row], Shown]) -> dict[str, Any]:
    shown = [(row, rule(row)) for row in rows]
    answerable = [s for row, s in shown if row.category == "answerable"]
    supported = [s for s in answerable if s.supported]
    correct = [s for s in answerable if s.correct]
    should_not = {c: [s for row, s in shown if row.category == c] for c in ("unanswerable", "out_of_corpus")}
    return {
        "answerable": len(answerable),
        "correct": len(correct),
        "precision": round(sum(s.correct for s in supported) / len(supported), 3) if supported else None,
        "recall": round(sum(s.supported for s in correct) / len(correct), 3) if correct else None,
        **{
            f"{c}_supported": (round(sum(s.supported for s in group) / len(group), 3), len(group))
            for c, group in should_not.items()
            if group
        },
        "unknown": sum(s.unknown for _, s in shown),
    }


def risk_coverage(rows: list[Row], score: Callable[[Row], float]) -> list[tuple[float, float]]:
    """(coverage, risk) of the supported mark as its score's cut falls, answerable rows only."""
    scored = sorted(((score(r), today(r)) for r in rows if r.category == "answerable"), key=lambda x: -x[0])
    points, wrong = [], 0
    for n, (_, shown) in enumerate(scored, start=1):
        wrong += not shown.correct
        points.append((round(n / len(scored), 3), round(wrong / n, 3)))
    return points[:: max(1, len(points) // 20)]


def combination(tune: list[Row]) -> Callable[[Row], float]:
    """A logistic model of correctness from the greedy probability, the agreement at k = 5, the
    relevance and the missing rare words, fitted on the tuning answers."""
    from sklearn.linear_model import LogisticRegression

    def features(row: Row) -> list[float]:
        agreed = by_agreement(5, 0.0)(row)
        share = row.raw["agreement"]["share"]
        greedy = row.probabilities[0] or 0.0
        return [greedy, share, row.raw.get("relevance") or 0.0, float(bool(row.missing())), float(agreed.answered)]

    fitted = [r for r in tune if r.category == "answerable"]
    model = LogisticRegression(max_iter=1000).fit(
        np.array([features(r) for r in fitted]), np.array([today(r).correct for r in fitted])
    )
    return lambda row: float(model.predict_proba(np.array([features(row)]))[0, 1])


def by_score(score: Callable[[Row], float], cut: float) -> Callable[[Row], Shown]:
    return lambda row: row.shown(0, score(row) >= cut)


def choose(tune: list[Row], rules: dict[str, Callable[[Row], Shown]]) -> tuple[str, dict[str, Any]]:
    """The rule with the most recall at PRECISION on the tuning answers (ties: listed first)."""
    measured = {name: measure(tune, rule) for name, rule in rules.items()}
    meeting = {n: m for n, m in measured.items() if (m["precision"] or 0) >= PRECISION}
    best = max(meeting or measured, key=lambda n: (measured[n]["recall"] or 0, -list(rules).index(n)))
    return best, measured


def seconds(rows: list[Row]) -> dict[str, float]:
    full = [r.raw["seconds"] for r in rows]
    greedy = [r.raw["seconds"] - (r.raw.get("readings_seconds") or 0.0) for r in rows]
    per_reading = [(r.raw.get("readings_seconds") or 0.0) / 5 for r in rows]
    return {
        "median_today": round(statistics.median(greedy), 2),
        "median_k5": round(statistics.median(full), 2),
        "median_per_reading": round(statistics.median(per_reading), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--tune", type=Path, nargs="+", required=True)
    parser.add_argument("--test", type=Path, nargs="+", required=True)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    tune, test = read(args.tune, args.data), read(args.test, args.data)
    rules: dict[str, Callable[[Row], Shown]] = {"today (p >= 0.85)": today, "today + key terms": with_key_terms(today)}
    for k in KS:
        for t in THRESHOLDS:
            rules[f"agreement k={k} >= {t}"] = by_agreement(k, t)
            rules[f"agreement k={k} >= {t} + key terms"] = by_agreement(k, t, key_terms=True)
    score = combination(tune)
    for cut in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9):
        rules[f"logistic >= {cut}"] = by_score(score, cut)
    best, tuned = choose(tune, rules)
    report: dict[str, Any] = {"chosen_on_tune": best, "tune": tuned}
    report["test"] = {name: measure(test, rules[name]) for name in ("today (p >= 0.85)", "today + key terms", best)}
    # the answers: holds gold, today's greedy against the majority of the chosen k
    k = int(best.split("k=")[1].split()[0]) if "k=" in best else 5
    pairs = [
        (float(today(r).correct), float(by_agreement(k, 0.0)(r).correct)) for r in test if r.category == "answerable"
    ]
    report["holds_gold_today_vs_majority"] = {
        "today": round(sum(a for a, _ in pairs) / len(pairs), 3),
        "majority": round(sum(b for _, b in pairs) / len(pairs), 3),
        **paired_test(pairs, exact_mcnemar=True),
    }
    histogram: dict[str, int] = {}
    for row in test:
        share = f"{row.raw['agreement']['agreeing']}/{row.raw['agreement']['readings']}"
        histogram[f"{row.category} {share}"] = histogram.get(f"{row.category} {share}", 0) + 1
    report["agreement_histogram_test"] = dict(sorted(histogram.items()))
    report["risk_coverage_test"] = {
        "answer probability": risk_coverage(test, lambda r: r.probabilities[0] or 0.0),
        "agreement k=5": risk_coverage(test, lambda r: r.raw["agreement"]["share"] + 1e-3 * (r.probabilities[0] or 0)),
        "logistic": risk_coverage(test, score),
    }
    report["seconds_test"] = seconds(test)
    text = json.dumps(report, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k not in ("tune", "risk_coverage_test")}, indent=1))
    if args.json_out:
        args.json_out.write_text(text)


if __name__ == "__main__":
    main()
