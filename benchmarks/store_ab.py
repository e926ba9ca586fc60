"""Two stores of the same chunks in other layouts (or configs), timed in one process, question by question.

    python benchmarks/store_ab.py --store $INT8 --against-store $TURBO4 --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 300 --seed 31

Both stores are opened and warmed (as the service warms them). Each question is retrieved from
both, the store that goes first alternating, followed each time by one Qdrant hybrid query on
the 100-word collection of the same store (as ``query_latency.py`` times it). Prints both
systems' p50 on each store, the quorum/hybrid ratios, the paired median difference of the
quorum retrieve (the second store minus the first), and for how many questions the evidence's
passages were the same. Build the second store from the first with ``scale_store.py --size 0``
and the layout's ``QRAG_QDRANT_*`` settings.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread
from qrag_qdrant.embedding import SparseEmbedder
from qrag_qdrant.results import Evidence

WARMUP = 20


def hybrid_query(rag: QuorumRAG) -> Callable[[str], object]:
    """One Qdrant hybrid query on the 100-word collection, the question embedded both ways first."""
    collections = [spec for spec, _ in rag.coordinator.searcher.collections]
    spec = next((s for s in collections if (s.size, s.overlap) == (100, 50)), collections[0])
    sparse, dense = SparseEmbedder(rag.store.manifest(spec.name).bm25_settings), rag.embedder()
    options = rag.settings.retrieval
    return lambda question: rag.store.hybrid(
        spec.name,
        dense.query_embed(question).tolist(),
        sparse.query_embed(question),
        limit=options.context.clusters,
        prefetch_limit=options.top_k,
    )


def passages(evidence: Evidence) -> list[tuple[str, int, int]]:
    return [(p.source, p.start, p.end) for cluster in evidence.clusters for p in cluster.passages]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--against-store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument(
        "--config", type=Path, help="the first store's config [default: the packaged config/default.toml]"
    )
    parser.add_argument("--against-config", type=Path, help="the second store's config (e.g. another hnsw_ef)")
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' field")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    one_blas_thread()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [row["question"] for row in random.Random(args.seed).sample(rows, min(args.n + WARMUP, len(rows)))]
    rags = [
        QuorumRAG.from_config(config, store=store, namespace=args.namespace)
        for store, config in ((args.store, args.config), (args.against_store, args.against_config))
    ]
    try:
        for rag in rags:
            rag.warm()
        hybrids = [hybrid_query(rag) for rag in rags]
        quorum_ms: list[list[float]] = [[], []]
        hybrid_ms: list[list[float]] = [[], []]
        same = 0
        for i, question in enumerate(questions):
            found = {}
            for side in (0, 1) if i % 2 == 0 else (1, 0):
                started = time.perf_counter()
                found[side] = rags[side].retrieve(question)
                retrieved = time.perf_counter()
                hybrids[side](question)
                if i >= WARMUP:
                    quorum_ms[side].append((retrieved - started) * 1000)
                    hybrid_ms[side].append((time.perf_counter() - retrieved) * 1000)
            same += i >= WARMUP and passages(found[0]) == passages(found[1])
    finally:
        for rag in rags:
            rag.close()
    p50 = [statistics.median(times) for times in quorum_ms]
    hybrid_p50 = [statistics.median(times) for times in hybrid_ms]
    result = {
        "store": str(args.store),
        "against_store": str(args.against_store),
        "namespace": args.namespace,
        "config": args.config and str(args.config),
        "against_config": args.against_config and str(args.against_config),
        "seed": args.seed,
        "questions": len(quorum_ms[0]),
        "quorum_p50_ms": [round(v, 2) for v in p50],
        "hybrid_p50_ms": [round(v, 2) for v in hybrid_p50],
        "ratio": [round(q / h, 2) for q, h in zip(p50, hybrid_p50)],
        "paired_median_difference_ms": round(statistics.median(b - a for a, b in zip(*quorum_ms)), 3),
        "same_evidence": same,
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
