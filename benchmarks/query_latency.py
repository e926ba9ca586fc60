"""Retrieval latency (no LLM) of the quorum pipeline against Qdrant's own hybrid query, same run.

    python benchmarks/query_latency.py --store /tmp/scale --namespace scale-50k \
        --questions ../shared/data/squad-dev/questions.jsonl --n 200 --json-out latency-50k.json

For each question, in alternating order so both see the same machine load:
- quorum: ``retrieve`` (embed once, one batched round trip per collection, fusion,
  clustering, quorum, ranking, context);
- single hybrid: what a plain hybrid RAG does: embed the question (dense and BM25), one
  Qdrant query on one collection (dense and bm25 prefetches fused by Qdrant's RRF), the
  top chunks' text.

The store is warmed first as the service and eval warm it (``--page-cache cold``: as one CLI
query finds it). Prints p50/p95 of both, their ratio, each quorum stage's p50, how often the top cluster holds
a gold answer, and the process's peak RSS (the query process's memory at this store size).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread
from qrag_qdrant.embedding import SparseEmbedder


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def summary(values: list[float]) -> dict[str, float]:
    return {"p50_ms": round(percentile(values, 50), 2), "p95_ms": round(percentile(values, 95), 2)}


def rss_parts() -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {
        name: round(int(fields[field].split()[0]) / 1024)
        for name, field in (("anon", "RssAnon"), ("file", "RssFile"))
        if field in fields
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, default=Path(".qrag"))
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' field")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument(
        "--page-cache",
        choices=("warm", "cold"),
        default="warm",
        help="warm: the store readied as the service and eval ready it (QuorumRAG.warm); "
        "cold: as one CLI query finds it, its on-disk files read as questions need them",
    )
    parser.add_argument(
        "--blas-threads",
        choices=("one", "default"),
        default="one",
        help="one: as the processes qrag-qdrant starts (qrag_qdrant.cli.threads); default: OpenBLAS's pool",
    )
    args = parser.parse_args()
    if args.blas_threads == "one":
        one_blas_thread()

    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    sample = random.Random(args.seed).sample(rows, min(args.n + args.warmup, len(rows)))
    with QuorumRAG.from_config(args.config, store=args.store, namespace=args.namespace) as rag:
        options = rag.settings.retrieval
        collections = [spec for spec, _ in rag.coordinator.searcher.collections]
        hybrid_spec = next((s for s in collections if (s.size, s.overlap) == (100, 50)), collections[0])
        manifest = rag.store.manifest(hybrid_spec.name)
        hybrid_bm25 = SparseEmbedder(manifest.bm25_settings)
        embedder = rag.embedder()
        if args.page_cache == "warm":
            rag.warm()

        def single_hybrid(question: str) -> list[str]:
            hits = rag.store.hybrid(
                hybrid_spec.name,
                embedder.query_embed(question).tolist(),
                hybrid_bm25.query_embed(question),
                limit=options.context.clusters,
                prefetch_limit=options.top_k,
            )
            return [hit.payload.text for hit in hits]

        quorum_ms, hybrid_ms, stages, hits, abstained = [], [], {}, 0, 0
        for n, row in enumerate(sample):
            order = ("quorum", "hybrid") if n % 2 == 0 else ("hybrid", "quorum")
            for system in order:
                started = time.perf_counter()
                if system == "quorum":
                    evidence = rag.retrieve(row["question"])
                else:
                    single_hybrid(row["question"])
                elapsed = (time.perf_counter() - started) * 1000
                if n < args.warmup:
                    continue
                if system == "hybrid":
                    hybrid_ms.append(elapsed)
                    continue
                quorum_ms.append(elapsed)
                for stage, ms in evidence.timings_ms.items():
                    stages.setdefault(stage, []).append(ms)
                abstained += evidence.abstained
                if evidence.clusters and row.get("answers"):
                    top = " ".join(p.text for p in evidence.clusters[0].passages)
                    hits += any(answer in top for answer in row["answers"])
        points = {spec.name: rag.store.count(spec.name) for spec in collections}

    quorum, hybrid = summary(quorum_ms), summary(hybrid_ms)
    result = {
        "namespace": args.namespace,
        "points_per_collection": points,
        "questions": len(quorum_ms),
        "blas_threads": args.blas_threads,
        "page_cache": args.page_cache,
        "quorum": quorum,
        "single_hybrid": {**hybrid, "collection": hybrid_spec.name},
        "ratio_quorum_p50_to_hybrid_p50": round(quorum["p50_ms"] / hybrid["p50_ms"], 3),
        "quorum_stages_p50_ms": {stage: round(percentile(values, 50), 3) for stage, values in stages.items()},
        "abstained": abstained,
        "top_cluster_holds_answer": round(hits / len(quorum_ms), 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        # at the end: the process's own memory, and the pages of the store's files it has mapped
        # (clean page cache, which the kernel takes back under memory pressure)
        "rss_end_mb": rss_parts(),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
