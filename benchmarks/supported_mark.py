"""The supported mark's rules, applied to answers recorded once: which share of the answers shown
as supported hold the gold answer, how many of the gold-holding answers are shown as supported, and
how many unanswerable or out-of-corpus questions that reached the model are shown as supported.

    qrag-qdrant eval $DATA/squad-dev --articles tune --generate 150 --answers-out tune.jsonl ...
    python benchmarks/supported_mark.py --tune tune.jsonl sq2-tune.jsonl --test test.jsonl sq2-test.jsonl ooc.jsonl

Record the answers with ``QRAG_GENERATION_MIN_COVERAGE=0`` so every answer's coverage is kept; each
rule is then ``eval.answering.supported_under`` at its settings, the code the answer step's mark
follows. ``generation.min_coverage`` is chosen on the tuning answers by a rule fixed before any
answer was seen: the threshold with the most tuning recall among those whose tuning precision is at
least the probability rule's and that show at most 10% of the tuning unanswerable questions as
supported; if none does, the one showing the fewest of them while keeping 90% of the probability
rule's recall.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qrag_qdrant.config.sections import GenerationSettings
from qrag_qdrant.eval.answering import GeneratedAnswer, support_scores, supported_under

COVERAGES = (0.3, 0.4, 0.5, 0.6, 0.67, 0.75, 0.8, 0.9)
MAX_UNANSWERABLE = 0.10
MIN_RECALL_KEPT = 0.9


def load(paths: Sequence[Path]) -> list[GeneratedAnswer]:
    rows = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                fields = json.loads(line)
                rows.append(
                    GeneratedAnswer(**{k: v for k, v in fields.items() if k in GeneratedAnswer.__annotations__})
                )
    return rows


def rules(base: GenerationSettings) -> dict[str, GenerationSettings]:
    """The probability rule (every check of before but the key-term one), then each coverage
    threshold with rivals, and the chosen one without them."""
    found = {"probability and relevance": base.model_copy(update={"min_coverage": 0.0, "rivals": False})}
    found["... and no rival value in the cited passages"] = base.model_copy(
        update={"min_coverage": 0.0, "rivals": True}
    )
    for coverage in COVERAGES:
        found[f"... and sentence coverage >= {coverage}"] = base.model_copy(
            update={"min_coverage": coverage, "rivals": True}
        )
    return found


def scores(rows: Sequence[GeneratedAnswer], options: GenerationSettings) -> dict[str, Any]:
    supported = supported_under(options)
    answerable = support_scores([r for r in rows if r.category == "answerable"], supported)
    unanswerable = [r for r in rows if r.should_not_answer]
    return {
        "precision": answerable["precision"],
        "recall": answerable["recall"],
        "unanswerable_shown_supported": sum(map(supported, unanswerable)),
        "unanswerable_reached_model": len(unanswerable),
    }


def share(figures: dict[str, Any]) -> float:
    reached = figures["unanswerable_reached_model"]
    return figures["unanswerable_shown_supported"] / reached if reached else 0.0


def chosen(tuned: dict[str, dict[str, Any]]) -> str:
    """The rule fixed in the module's docstring."""
    base = tuned["probability and relevance"]
    candidates = {name: figures for name, figures in tuned.items() if "coverage" in name}
    qualified = {
        name: f
        for name, f in candidates.items()
        if (f["precision"] or 0) >= (base["precision"] or 0) and share(f) <= MAX_UNANSWERABLE
    }
    if qualified:
        return max(qualified, key=lambda name: (qualified[name]["recall"] or 0, -share(qualified[name])))
    kept = {n: f for n, f in candidates.items() if (f["recall"] or 0) >= MIN_RECALL_KEPT * (base["recall"] or 0)}
    return min(kept or candidates, key=lambda name: (share(candidates[name]), -(candidates[name]["recall"] or 0)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", type=Path, nargs="+", required=True, help="answers-out files to choose on")
    parser.add_argument("--test", type=Path, nargs="*", default=[], help="answers-out files to report on")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    base = GenerationSettings()
    tune = load(args.tune)
    tests = {path.name: load([path]) for path in args.test}
    table = {
        name: {"tune": scores(tune, options), **{n: scores(rows, options) for n, rows in tests.items()}}
        for name, options in rules(base).items()
    }
    pick = chosen({name: figures["tune"] for name, figures in table.items()})
    out = {"chosen": pick, "rules": table}
    print(json.dumps(out, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
