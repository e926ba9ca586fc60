"""Whether the packaged model, asked one yes-or-no judgement at a time, separates MultiHop-RAG's
"Yes" comparisons and time questions from its "No" ones better than its written answer, which is
"Yes" to nearly all of them.

    python benchmarks/side_judgements.py --store $S --data $DATA/multihop-rag --half tuning --json-out tune.json
    python benchmarks/side_judgements.py --store $S --data $DATA/multihop-rag --half held-out --json-out test.json
    python benchmarks/side_judgements.py --thresholds tune.json test.json

Each question (a comparison or temporal question with a yes or no gold answer, of the half, drawn
with ``--seed``) is retrieved through ``QuorumRAG.retrieve``; then the backend's
``yes_probability`` (the verifier the answer checks use) is asked, for each part with evidence,
whether the part's passages support its clause, and once whether all the passages answer the
whole question "yes". ``--thresholds`` picks, on the first file, the threshold of each score
(the least side, the mean of the sides, the whole question's, the mean of those two) that answers
the most questions right, and applies it to the second: the accuracy against a constant "Yes",
and each score's AUC. Rows hold question ids, not the data set's text.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from question_parts import in_half

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import Judge
from qrag_qdrant.generation.checks.answer_check import JUDGE_SYSTEM
from qrag_qdrant.generation.prompt import fence
from qrag_qdrant.results import Evidence

KINDS = ("comparison_query", "temporal_query")
SAID = {"true": "yes", "false": "no"}
Score = Callable[[dict[str, Any]], float]
SCORES: dict[str, Score] = {
    "least side": lambda row: min(row["sides"]),
    "mean of the sides": lambda row: statistics.fmean(row["sides"]),
    "whole question": lambda row: row["whole"],
    "whole and sides": lambda row: (row["whole"] + statistics.fmean(row["sides"])) / 2,
}


def judged(judge: Judge, evidence: Evidence, question: str) -> dict[str, Any]:
    """Each part's P(yes) that its passages support its clause, and the whole question's."""
    shown = {passage.citation: passage for passage in evidence.passages}
    sides = []
    for part in evidence.parts:
        if part.missing is None:
            quoted = "\n\n".join(fence(shown[n]) for n in part.citations if n in shown)
            claim = (part.event or part.searched_for).strip().rstrip("?")
            prompt = f"Passages:\n\n{quoted}\n\nClaim: {claim}\n\nDo the passages support the claim? Answer yes or no."
            sides.append(judge.yes_probability(JUDGE_SYSTEM, prompt))
    quoted = "\n\n".join(fence(passage) for passage in evidence.passages)
    whole = judge.yes_probability(JUDGE_SYSTEM, f"Passages:\n\n{quoted}\n\nQuestion: {question}\n\nAnswer yes or no.")
    return {"sides": sides, "whole": whole}


def auc(rows: Sequence[dict[str, Any]], score: Score) -> float:
    yes = [score(row) for row in rows if row["gold"] == "yes"]
    no = [score(row) for row in rows if row["gold"] == "no"]
    return round(sum((y > n) + 0.5 * (y == n) for y in yes for n in no) / (len(yes) * len(no)), 3)


def accuracy(rows: Sequence[dict[str, Any]], score: Score, threshold: float) -> float:
    return round(statistics.fmean((score(row) >= threshold) == (row["gold"] == "yes") for row in rows), 3)


def thresholds(tune: Sequence[dict[str, Any]], test: Sequence[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "constant yes": {"tuning": accuracy(tune, lambda _: 1.0, 0.5), "test": accuracy(test, lambda _: 1.0, 0.5)}
    }
    for name, score in SCORES.items():
        chosen = max(sorted({round(score(row), 3) for row in tune}), key=lambda t: accuracy(tune, score, t))
        result[name] = {
            "threshold": chosen,
            "tuning": accuracy(tune, score, chosen),
            "test": accuracy(test, score, chosen),
            "auc tuning": auc(tune, score),
            "auc test": auc(test, score),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--namespace", default="eval-multihop-rag")
    parser.add_argument("--data", type=Path)
    parser.add_argument("--half", choices=["tuning", "held-out"], default="held-out")
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--thresholds", nargs=2, type=Path, metavar=("TUNE", "TEST"), help="run nothing: score two runs"
    )
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if args.thresholds:
        tune, test = (json.loads(path.read_text())["rows"] for path in args.thresholds)
        result: dict[str, Any] = thresholds(tune, test)
    else:
        with (args.data / "questions.jsonl").open() as lines:
            asked = [
                q for q in map(json.loads, lines) if q["kind"] in KINDS and q["answers"] and in_half(q["id"], args.half)
            ]
        asked = [q for q in asked if SAID.get(q["answers"][0].lower(), q["answers"][0].lower()) in ("yes", "no")]
        random.Random(args.seed).shuffle(asked)
        rows = []
        with QuorumRAG(load_settings(store=args.store, namespace=args.namespace)) as rag:
            judge = rag.generator()
            if not isinstance(judge, Judge):
                raise SystemExit("the configured backend cannot judge (no yes_probability)")
            for question in asked[: args.sample]:
                evidence = rag.retrieve(question["question"])
                gold = question["answers"][0].lower()
                row = {"id": question["id"], "kind": question["kind"], "gold": SAID.get(gold, gold)}
                if not evidence.abstained and evidence.parts:
                    rows.append({**row, **judged(judge, evidence, question["question"])})
        result = {"half": args.half, "sample": args.sample, "seed": args.seed, "rows": rows}
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
