"""Could a learned score decide "supported" better than the fixed checks? Fitted on the tuning
answers' signals, compared on the test answers at the same precision.

    python benchmarks/supported_score.py \\
        --tune docs/perf/answers/squad-dev-tune-quorum-lone-passage-example-1.5b-s22.jsonl \\
               docs/perf/answers/squad-dev-held-out-tune-ooc-lone-passage-example-1.5b-s33.jsonl \\
               docs/perf/answers/squad2-dev-tune-quorum-lone-passage-example-1.5b-s44.jsonl \\
        --test docs/perf/answers/squad-dev-test-quorum-lone-passage-example-1.5b-s14.jsonl \\
               docs/perf/answers/squad-dev-held-out-test-ooc-lone-passage-example-1.5b-s34.jsonl \\
               docs/perf/answers/squad2-dev-test-quorum-lone-passage-example-1.5b-s45.jsonl

Each answered row's signals, as ``eval --generate`` records them: the answer probability (as a
logit), the relevance, and the adaptive context's margin. A logistic regression on the grounded,
validly cited tuning answers predicts "holds the gold answer". On the test answers, for each
precision asked, the lowest cut reaching it gives the recall and the share of out-of-corpus and
unanswerable answers shown supported: the learned scores against today's rule (grounded,
relevance >= 0.3, then the answer probability as the score).
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

MARGIN = re.compile(r"margin ([\d.]+)")
SIGNALS = {"answer probability": [0], "+ relevance": [0, 1], "+ relevance + margin": [0, 1, 2]}


def answered(paths: list[Path]) -> list[dict]:
    return [
        row for path in paths for line in path.read_text().splitlines() if (row := json.loads(line))["outcome"] is None
    ]


def signals(row: dict) -> list[float]:
    p = min(max(row["answer_probability"] or 1e-3, 1e-3), 1 - 1e-3)
    margin = MARGIN.search(row["context_policy"] or "")
    return [math.log(p / (1 - p)), row["relevance"] or 0.0, float(margin[1]) if margin else 0.0]


def checkable(row: dict) -> bool:
    """Grounded (a relevance was measured) and every citation a passage that was shown."""
    return row["relevance"] is not None and bool(row["citations_valid"])


def at_precision(scores: np.ndarray, rows: list[dict], precision: float) -> tuple[float, float] | None:
    """Recall and the share of should-not-answer answers shown supported, at the lowest cut whose
    precision on the answerable answers reaches ``precision``."""
    gold = np.array([r["holds_gold"] for r in rows])
    answerable = np.array([r["category"] == "answerable" for r in rows])
    for cut in np.unique(scores[scores >= 0]):
        kept = scores >= cut
        if (kept & answerable).any() and gold[kept & answerable].mean() >= precision:
            return ((kept & gold).sum() / (answerable & gold).sum(), (kept & ~answerable).sum() / (~answerable).sum())
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tune", type=Path, nargs="+", required=True)
    parser.add_argument("--test", type=Path, nargs="+", required=True)
    args = parser.parse_args()
    tune, test = answered(args.tune), answered(args.test)
    fitted = [r for r in tune if checkable(r)]
    scored = {
        "today's rule": np.array(
            [r["answer_probability"] or 0.0 if checkable(r) and r["relevance"] >= 0.3 else -1.0 for r in test]
        )
    }
    for name, columns in SIGNALS.items():
        model = LogisticRegression().fit(
            [[signals(r)[c] for c in columns] for r in fitted], [r["holds_gold"] for r in fitted]
        )
        scored[name] = np.array(
            [model.predict_proba([[signals(r)[c] for c in columns]])[0, 1] if checkable(r) else -1.0 for r in test]
        )
    print(f"{len(fitted)} tuning answers fitted; {len(test)} test answers")
    print("| score | precision asked | recall | should-not-answer shown supported |")
    for name, scores in scored.items():
        for precision in (0.85, 0.90):
            found = at_precision(scores, test, precision)
            print(f"| {name} | {precision:.2f} | " + (f"{found[0]:.3f} | {found[1]:.3f} |" if found else "- | - |"))


if __name__ == "__main__":
    main()
