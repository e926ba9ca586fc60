"""Merge ``eval --generate --answers-out`` files (runs split over processes, e.g. by seed) and report
them as one: each system's answer metrics (``eval.answering.answer_metrics``), quorum against the
second system in pairs, and how the grounding check combines with the decline probability and
the gate's confidence on the questions that should not be answered.

    python benchmarks/answers_report.py run-a.jsonl run-b.jsonl --json-out answers.json

A question answered in more than one file counts once (the first file's rows).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from qrag_qdrant.eval.answering import GeneratedAnswer, answer_metrics, paired_f1, support_scores
from qrag_qdrant.eval.metrics import paired_test

FIELDS = {f.name for f in dataclasses.fields(GeneratedAnswer)}


def read(paths: list[Path]) -> dict[str, list[GeneratedAnswer]]:
    seen: set[tuple[str, str]] = set()
    systems: dict[str, list[GeneratedAnswer]] = {}
    for path in paths:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if (row["id"], row["system"]) in seen:
                continue
            seen.add((row["id"], row["system"]))
            systems.setdefault(row["system"], []).append(
                GeneratedAnswer(**{k: v for k, v in row.items() if k in FIELDS})
            )
    ids = set.intersection(*({r.id for r in rows} for rows in systems.values()))  # pairs need both systems
    return {name: sorted((r for r in rows if r.id in ids), key=lambda r: r.id) for name, rows in systems.items()}


def shown_supported(rows: list[GeneratedAnswer], max_decline: float | None) -> dict[str, float | None]:
    """Had "supported" also needed a decline probability below ``max_decline``: ``support_scores``."""
    return {
        "max_decline_probability": max_decline,
        **support_scores(
            rows, lambda r: bool(r.supported) and (max_decline is None or (r.decline_probability or 0.0) < max_decline)
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("answers", type=Path, nargs="+")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    systems = read(args.answers)
    report: dict[str, object] = {
        "questions": len(next(iter(systems.values()))),
        "systems": {name: answer_metrics(rows) for name, rows in systems.items()},
    }
    names = list(systems)
    if len(names) >= 2:
        first, second = systems[names[0]], systems[names[1]]
        report["paired"] = {
            "systems": names[:2],
            "f1_wilcoxon": paired_f1(first, second),
            "holds_gold_mcnemar": paired_test(
                [
                    (float(a.holds_gold), float(b.holds_gold))
                    for a, b in zip(first, second)
                    if a.category == "answerable"
                ],
                exact_mcnemar=True,
            ),
        }
    report["supported_with_decline_probability"] = {
        name: [shown_supported(rows, cut) for cut in (None, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01)]
        for name, rows in systems.items()
    }
    print(json.dumps(report, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
