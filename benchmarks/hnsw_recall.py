"""Recall of the dense HNSW search against brute force, on real embeddings, per hnsw_ef.

    python benchmarks/hnsw_recall.py --store /tmp/ev --namespace eval-scifact \
        --questions ../shared/data/scifact/queries.jsonl --n 200 --json-out hnsw-scifact.json

For each collection of the namespace and each question (embedded with the real model), the
top-k of the HNSW search (engine default ef, then each --ef) is compared with the exact top-k
(``exact=True``: every vector scanned), with the p50 latency of each setting:
- recall_at_k = |HNSW top-k ∩ exact top-k| / k, averaged (and its minimum);
- score_recall_at_k: the share of HNSW's top-k scoring at least the exact k-th score. It
  counts a tied point as found, which matters when a corpus holds near-copies (the scaled
  stores of scale_store.py do).
- chunk_recall_at_k: the share of the exact top-k's distinct chunks (a scaled store's copies of
  one chunk counted as that chunk) that HNSW's top-k holds in any copy: what retrieval sees,
  since a copy carries the same text. On a real store it is recall_at_k.
Edge's HNSW on random vectors gave 0.26-0.46 recall@10; this checks what text embeddings get.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.store import VectorQuery

#: the source prefix scale_store.py gives a chunk's copies
COPY_PREFIX = re.compile(r"^copy\d+/")


def original(hit) -> tuple[str, int]:
    """The real chunk a point is (a copy of)."""
    return COPY_PREFIX.sub("", hit.payload.source), hit.payload.start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' or 'text' field")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--k", type=int, default=15)
    parser.add_argument("--ef", default="16,32,64,128", help="hnsw_ef values besides the engine default")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [row.get("question") or row["text"] for row in random.Random(args.seed).sample(rows, args.n)]
    settings = [("default", None), *((f"ef={ef}", int(ef)) for ef in args.ef.split(","))]
    result: dict[str, object] = {"namespace": args.namespace, "questions": len(questions), "k": args.k}
    with QuorumRAG.from_config(store=args.store, namespace=args.namespace) as rag:
        embedder = rag.embedder()
        vectors = [embedder.query_embed(question).tolist() for question in questions]
        for spec in rag.settings.collections:
            name = spec.name

            def top(vector, name=name, **params):
                return {
                    hit.id: (hit.score, original(hit))
                    for hit in rag.store.query(name, [VectorQuery("dense", vector, args.k, **params)])[0]
                }

            for vector in vectors[:10]:  # warm up: page in the index and the vectors
                top(vector)
                top(vector, exact=True)
            exact, exact_ms = [], []
            for vector in vectors:
                started = time.perf_counter()
                exact.append(top(vector, exact=True))
                exact_ms.append((time.perf_counter() - started) * 1000)
            collection = {"points": rag.store.count(name), "exact": {"p50_ms": round(statistics.median(exact_ms), 3)}}
            for label, ef in settings:
                recalls, score_recalls, chunk_recalls, times = [], [], [], []
                for vector, truth in zip(vectors, exact):
                    started = time.perf_counter()
                    found = top(vector, hnsw_ef=ef)
                    times.append((time.perf_counter() - started) * 1000)
                    recalls.append(len(truth.keys() & found.keys()) / args.k)
                    kth = min(score for score, _ in truth.values())
                    score_recalls.append(sum(score >= kth - 1e-6 for score, _ in found.values()) / args.k)
                    chunks = {chunk for _, chunk in truth.values()}
                    chunk_recalls.append(len(chunks & {chunk for _, chunk in found.values()}) / len(chunks))
                collection[label] = {
                    "recall_at_k": round(statistics.mean(recalls), 4),
                    "min_recall": round(min(recalls), 3),
                    "score_recall_at_k": round(statistics.mean(score_recalls), 4),
                    "chunk_recall_at_k": round(statistics.mean(chunk_recalls), 4),
                    "min_chunk_recall": round(min(chunk_recalls), 3),
                    "p50_ms": round(statistics.median(times), 3),
                }
            result[name] = collection
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
