"""Retrieval latency of the quorum pipeline (no LLM) on an ingested store.

    python benchmarks/query_latency.py --store .qrag \
        --questions ../shared/data/squad-dev/questions.jsonl --n 50 --seed 0 --json-out latency.json

Prints p50/p95 of the whole retrieval and of each stage, after a warm-up, and how often the
top cluster holds a gold answer string (when the questions have ``answers``).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path(".qrag"))
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' field")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    sample = random.Random(args.seed).sample(rows, min(args.n + args.warmup, len(rows)))
    warmup, measured = sample[: args.warmup], sample[args.warmup:]
    with QuorumRAG.from_config(store=args.store, namespace=args.namespace) as rag:
        for row in warmup:
            rag.retrieve(row["question"])
        totals, stages, hits, abstained = [], {}, 0, 0
        for row in measured:
            started = time.perf_counter()
            evidence = rag.retrieve(row["question"])
            totals.append((time.perf_counter() - started) * 1000)
            for stage, ms in evidence.timings_ms.items():
                stages.setdefault(stage, []).append(ms)
            abstained += evidence.abstained
            if evidence.clusters and row.get("answers"):
                top = " ".join(p.text for p in evidence.clusters[0].passages)
                hits += any(answer in top for answer in row["answers"])

    result = {
        "questions": len(measured),
        "p50_ms": round(percentile(totals, 50), 2),
        "p95_ms": round(percentile(totals, 95), 2),
        "stages_p50_ms": {stage: round(percentile(values, 50), 3) for stage, values in stages.items()},
        "abstained": abstained,
        "top_cluster_holds_answer": round(hits / len(measured), 3),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
