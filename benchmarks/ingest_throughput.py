"""Ingest throughput against the embedder alone on exactly the same chunk texts, in one run.

    python benchmarks/ingest_throughput.py ../shared/data/squad-dev/corpus --json-out ingest.json

Prints and writes: cold ingest seconds and chunks/s, the embedder's own chunks/s on the same
texts (same batch size and threads), their ratio (the cost of chunking, BM25, hashing and
upserts that does not overlap with embedding), the unchanged re-ingest and its speedup, and
peak RSS after the ingest. Ratios, not absolute times, are what to compare on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.ingest.chunking import iter_chunks
from qrag_qdrant.ingest.corpus import open_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--config", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    settings = load_settings(args.config)
    embedder = DenseEmbedder(settings.embedding)
    embedder.embed(["warm up the session"] * 8)
    with tempfile.TemporaryDirectory(prefix="qrag-bench-") as store:
        with QuorumRAG(load_settings(args.config, store=store), embedder=embedder) as rag:
            cold = rag.ingest(args.corpus)
            peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            warm = rag.ingest(args.corpus)

    texts = [
        chunk.text
        for spec in settings.collections
        for document in open_corpus(args.corpus).documents()
        for chunk in iter_chunks(document.blocks(), spec.size, spec.overlap)
    ]
    started = time.perf_counter()
    for spec_start in range(0, len(texts), 4096):  # the same order and batches as ingest gives it
        embedder.embed(texts[spec_start : spec_start + 4096])
    embed_seconds = time.perf_counter() - started

    ingest_rate = cold.embedded_chunks / cold.seconds
    embed_rate = len(texts) / embed_seconds
    result = {
        "chunks": cold.embedded_chunks,
        "cold_ingest_s": round(cold.seconds, 1),
        "ingest_chunks_per_s": round(ingest_rate, 1),
        "embedder_chunks_per_s": round(embed_rate, 1),
        "ratio_ingest_to_embedder": round(ingest_rate / embed_rate, 3),
        "unchanged_reingest_s": round(warm.seconds, 3),
        "unchanged_speedup": round(cold.seconds / warm.seconds, 1),
        "ingest_peak_rss_mb": round(peak_rss_mb),
    }
    assert len(texts) == cold.embedded_chunks, "the embedder must see exactly the ingested chunks"
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
