"""The evidence a version of the code gives, question by question, to hold a change that should
not move it (a refactor, a dependency replaced) to that: each question retrieved through
``QuorumRAG.retrieve`` and written as one JSON line, its timings left out, so two versions'
files compare byte for byte.

    python benchmarks/evidence_dump.py --store $S --namespace eval-squad-dev \
        --questions $DATA/squad-dev/questions.jsonl --n 1000 --out now.jsonl
    PYTHONPATH=$OTHER_CHECKOUT python benchmarks/evidence_dump.py ... --out then.jsonl
    cmp then.jsonl now.jsonl

The questions are drawn with ``random.Random(seed)`` (3 by default) from the file's; the store is
only read. Prints how many questions abstained and how many were searched by parts.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.text.json_lines import json_lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True, help="a JSON Lines file with a question a line")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    rows = [row for _, row in json_lines(args.questions)]
    random.Random(args.seed).shuffle(rows)
    abstained = parts = 0
    with QuorumRAG.from_config(store=args.store, namespace=args.namespace) as rag, args.out.open("w") as out:
        for row in rows[: args.n]:
            evidence = rag.retrieve(row["question"])
            abstained += evidence.abstained
            parts += bool(evidence.parts)
            out.write(json.dumps(evidence.model_dump(exclude={"timings_ms"}), sort_keys=True, default=str) + "\n")
    asked = min(args.n, len(rows))
    print(f"{asked} questions: {abstained} abstained, {parts} searched by parts; written to {args.out}")


if __name__ == "__main__":
    main()
