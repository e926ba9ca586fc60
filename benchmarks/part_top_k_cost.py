"""What a part's hits cost: ``Coordinator.retrieve``'s wall time for the questions it splits, at
two ``retrieval.parts.top_k`` values, alternated question by question so that whatever else runs
on the machine weighs on both alike.

    python benchmarks/part_top_k_cost.py --store /tmp/mheval/store --namespace eval-multihop-rag \
        --data ../shared/data/multihop-rag --values 15 60 --sample 150
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", default="eval-multihop-rag")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--values", type=int, nargs=2, default=[15, 60])
    parser.add_argument("--sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with (args.data / "questions.jsonl").open() as lines:
        questions = [q["question"] for q in map(json.loads, lines)]
    questions = random.Random(args.seed).sample(questions, min(args.sample, len(questions)))
    with QuorumRAG(load_settings(store=args.store, namespace=args.namespace)) as rag:
        coordinator = rag.coordinator
        coordinator.warm()
        options = coordinator.settings.retrieval.parts

        def timed(top_k: int, question: str) -> tuple[float, bool]:
            object.__setattr__(options, "top_k", top_k)  # the same searcher and caches for both
            started = time.perf_counter()
            evidence = coordinator.retrieve(question)
            return (time.perf_counter() - started) * 1000, bool(evidence.parts)

        for question in questions[:10]:  # the store's pages read once before timing
            for value in args.values:
                timed(value, question)
        ms: dict[int, list[float]] = {value: [] for value in args.values}
        for index, question in enumerate(questions):
            for value in args.values if index % 2 else reversed(args.values):
                took, split = timed(value, question)
                if split:
                    ms[value].append(took)
    for value, times in ms.items():
        ordered = sorted(times)
        p95 = ordered[int(0.95 * len(ordered))]
        p50 = statistics.median(times)
        print(f"parts.top_k {value}: {len(times)} split questions, p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
