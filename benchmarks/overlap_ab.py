"""The BM25 searches beside the question's embedding, against one after the other.

    python benchmarks/overlap_ab.py --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 300 --seed 21
    python benchmarks/overlap_ab.py --store $SCI --namespace eval-scifact \
        --questions ../shared/data/scifact/queries.jsonl --n 280 --seed 21

In one process, alternating per question so both see the same machine load: ``retrieve``
(``Coordinator.embed_and_search``: the BM25 searches on a worker thread while this one embeds)
against ``embed``, then every search, then ``evidence_from`` (the arrangement before).
Prints each arrangement's p50 and p95 (ms), the paired median difference, and how many
questions got the same evidence both ways.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread
from qrag_qdrant.retrieval.fusion import QUESTION

OVERLAPPED, SEQUENTIAL = "overlapped", "one after the other"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' or 'text' field")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    one_blas_thread()

    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    texts = [row.get("question") or row["text"] for row in rows]
    sample = random.Random(args.seed).sample(texts, min(args.n + args.warmup, len(texts)))
    times: dict[str, list[float]] = {OVERLAPPED: [], SEQUENTIAL: []}
    same = 0
    with QuorumRAG.from_config(None, store=args.store, namespace=args.namespace) as rag:
        rag.warm()
        coordinator, options = rag.coordinator, rag.settings.retrieval
        for n, question in enumerate(sample):
            evidence = {}
            for name in (OVERLAPPED, SEQUENTIAL) if n % 2 == 0 else (SEQUENTIAL, OVERLAPPED):
                started = time.perf_counter()
                if name == OVERLAPPED:
                    evidence[name] = rag.retrieve(question)
                else:
                    vectors = coordinator.embed(question)  # then every search, one round trip per collection
                    lists = coordinator._search([(QUESTION, vectors, None)], None)
                    evidence[name] = coordinator.evidence_from(vectors, lists, options)
                if n >= args.warmup:
                    times[name].append((time.perf_counter() - started) * 1000)
            same += (
                len(
                    {
                        json.dumps(e.model_dump(mode="json", exclude={"timings_ms"}), sort_keys=True)
                        for e in evidence.values()
                    }
                )
                == 1
            )
    print(
        json.dumps(
            {
                "namespace": args.namespace,
                "questions": len(times[OVERLAPPED]),
                **{
                    name: {
                        "p50_ms": round(statistics.median(values), 3),
                        "p95_ms": round(statistics.quantiles(values, n=20)[-1], 3),
                    }
                    for name, values in times.items()
                },
                "paired_median_difference_ms": round(
                    statistics.median(a - b for a, b in zip(times[OVERLAPPED], times[SEQUENTIAL])), 3
                ),
                "same_evidence": f"{same} of {len(sample)}",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
