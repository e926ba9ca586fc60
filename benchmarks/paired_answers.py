"""Two runs of ``eval --generate`` on the same questions, compared in pairs: accuracy per kind of
question (MultiHop-RAG's score, ``GeneratedAnswer.accurate``) of each, beside answering "yes" to
every question, and an exact McNemar test on the answerable questions only one run gets right.

    QRAG_RETRIEVAL_QUESTION_PARTS=off qrag-qdrant eval $DATA/multihop-rag --store $S --sample 400 --seed 1 \
        --systems quorum --generate 60 --answers-out whole.jsonl
    qrag-qdrant eval ... --generate 60 --answers-out parts.jsonl
    python benchmarks/paired_answers.py parts.jsonl whole.jsonl   # or two --json-out files

Only the questions both files answered (or abstained on) are compared; the seconds and prompt
tokens are medians over the questions whose context reached the model.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from qrag_qdrant.eval.metrics import paired_test


def rows_of(path: Path) -> dict[str, dict[str, Any]]:
    """The answers of an ``--answers-out`` file, or of a ``--json-out`` file's ``generation``."""
    if path.suffix == ".json":
        rows = json.loads(path.read_text())["generation"]["rows"]
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {row["id"]: row for row in rows}


def accuracy(rows: list[dict[str, Any]], key: str = "accurate") -> float | None:
    return round(sum(bool(row[key]) for row in rows) / len(rows), 3) if rows else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    first, second = rows_of(args.first), rows_of(args.second)
    shared = [question for question in first if question in second]
    groups = {"answerable": [q for q in shared if first[q]["category"] == "answerable"]} | {
        kind: [q for q in shared if first[q]["kind"] == kind] for kind in sorted({first[q]["kind"] for q in shared})
    }
    result: dict[str, Any] = {"questions": len(shared), "accuracy": {}}
    for name, ids in groups.items():
        result["accuracy"][name] = {
            "questions": len(ids),
            args.first.stem: accuracy([first[q] for q in ids]),
            args.second.stem: accuracy([second[q] for q in ids]),
            "constant_yes": accuracy([first[q] for q in ids], "yes_holds"),
        }
        print(name, result["accuracy"][name])
    pairs = [(float(first[q]["accurate"]), float(second[q]["accurate"])) for q in groups["answerable"]]
    result["paired"] = paired_test(pairs, exact_mcnemar=True)
    print("answerable, paired:", result["paired"])
    for path, rows in ((args.first, first), (args.second, second)):
        asked = [rows[q] for q in shared if rows[q]["outcome"] != "gate"]
        result[path.stem] = {
            "p50_seconds": round(statistics.median(row["seconds"] for row in asked), 1),
            "p50_prompt_tokens": statistics.median(row["prompt_tokens"] or 0 for row in asked),
            "supported": sum(bool(row["supported"]) for row in asked),
        }
        print(path.stem, result[path.stem])
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
