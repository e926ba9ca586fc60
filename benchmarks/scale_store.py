"""Build a namespace of about N chunks per collection from already-ingested real chunks.

    python benchmarks/scale_store.py --source /tmp/ev:eval-squad-dev --source /tmp/ev:eval-scifact \
        --store /tmp/scale --size 200000 --json-out scale-200k.json

Embedding 200k chunks three times over would take hours at the embedder's ~70 chunks/s, so
the larger corpora reuse vectors: each collection first takes the real chunks of the sources
(in the order given), in order, and when they run out it takes them again as copy 1,
2, ...: the same text and BM25 vector under another ``source`` (``copy<r>/<source>``) and
point id, with the dense vector jittered by Gaussian noise and renormalised (cosine about
0.9 to the original). Exact copies would give the dense index N identical points per chunk,
which is not what a larger corpus looks like to HNSW; the BM25 posting lists grow as they
would for a larger corpus in the same language.

Writes the namespace ``scale-<N/1000>k`` and prints seconds, points, disk size and the
peak RSS of this process: the store's side of an ingest (writes and index build, no embedding
model), over a baseline of the imports. Each collection also gets the document frequencies of its
chunks' terms, as an ingest leaves them.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import resource
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from qrag_qdrant.config.names import collection_name
from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.config.settings import CollectionSpec, load_settings
from qrag_qdrant.embedding import embedding_dim
from qrag_qdrant.store import ChunkPoint, CollectionManifest
from qrag_qdrant.store.base import TERM_STATS
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.points import point_id
from qrag_qdrant.text.term_stats import TermStats, count_terms

BATCH = 1000
JITTER = 0.5  # noise norm ~0.5 against a unit vector: cosine ~0.9 to the original


def source_points(sources: list[tuple[Path, str]], spec: CollectionSpec) -> Iterator[ChunkPoint]:
    """The real chunks, streamed: the process's memory is the store's, not a copy of them."""
    for root, namespace in sources:
        with EdgeStore(root, namespace) as store:
            yield from store.scroll_points(collection_name(namespace, spec.size, spec.overlap))


def source_pooling(sources: list[tuple[Path, str]], spec: CollectionSpec) -> str:
    """How the first source's chunks of this chunking were pooled: the copy records the same."""
    root, namespace = sources[0]
    with EdgeStore(root, namespace) as store:
        manifest = store.manifest(collection_name(namespace, spec.size, spec.overlap))
    return manifest.pooling if manifest else "chunk"


def scaled(
    sources: list[tuple[Path, str]], spec: CollectionSpec, target: int, collection: str, seed: int
) -> Iterator[ChunkPoint]:
    rng, written = np.random.default_rng(seed), 0
    for copy in itertools.count():
        for original in source_points(sources, spec):
            if written == target:
                return
            if copy == 0:
                source, dense = original.payload.source, original.dense
            else:
                source = f"copy{copy}/{original.payload.source}"
                noisy = np.asarray(original.dense) + rng.normal(
                    0, JITTER / np.sqrt(len(original.dense)), len(original.dense)
                )
                dense = (noisy / np.linalg.norm(noisy)).tolist()
            payload = dataclasses.replace(original.payload, source=source)
            yield ChunkPoint(
                point_id(collection, source, payload.chunk_index, payload.doc_hash), dense, original.sparse, payload
            )
            written += 1


def attach_term_stats(store: EdgeStore, name: str) -> None:
    """The document frequencies an ingest keeps beside a collection (the gate reads them): without
    them the first question counts them from every stored text, which touches every payload page."""
    manifest = store.manifest(name)
    stats = TermStats.of(count_terms(store.texts(name)), store.count(name), manifest.indexed if manifest else 0)
    store.attach(name, TERM_STATS, stats.to_bytes())


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", action="append", required=True, help="STORE:NAMESPACE of real chunks")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument(
        "--size", type=int, required=True, help="points per collection; 0: each source chunk once, as ingested"
    )
    parser.add_argument("--namespace", help="the namespace to write [default: scale-<size/1000>k]")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    sources = [(Path(root), namespace) for root, namespace in (s.rsplit(":", 1) for s in args.source)]
    namespace = args.namespace or f"scale-{args.size // 1000}k"
    settings = load_settings(args.config, namespace=namespace, store=args.store)
    model = settings.embedding.model
    started, result = (
        time.perf_counter(),
        {"namespace": namespace, "points_per_collection": args.size, "baseline_rss_mb": round(rss_mb())},
    )
    with EdgeStore.from_settings(settings) as store:  # the layout of QRAG_QDRANT_* (quantization, on disk)
        for seed, spec in enumerate(settings.collections):
            real = sum(1 for _ in source_points(sources, spec))
            size = args.size or real
            manifest = CollectionManifest.expected(
                namespace, spec, model, embedding_dim(EmbeddingSettings(model=model))
            )
            store.open_collection(
                spec.name, manifest.model_copy(update={"pooling": source_pooling(sources, spec)}), create=True
            )
            batch: list[ChunkPoint] = []
            for point in scaled(sources, spec, size, spec.name, seed):
                batch.append(point)
                if len(batch) == BATCH:
                    store.upsert(spec.name, batch)
                    batch = []
            store.upsert(spec.name, batch)
            written = time.perf_counter()
            store.finish_bulk(spec.name)
            attach_term_stats(store, spec.name)
            result[spec.name] = {
                "real_chunks": real,
                "copies": -(-size // real) - 1,
                "points": store.count(spec.name),
                "index_build_s": round(time.perf_counter() - written, 1),
            }
        folders = [args.store / name for name in store.list_collections(namespace).values()]
    result["layout"] = {
        key: getattr(settings.qdrant, key)
        for key in ("quantization", "oversampling", "vectors_on_disk", "payloads_on_disk")
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    result["disk_mb"] = round(
        sum(f.stat().st_blocks * 512 for folder in folders for f in folder.rglob("*") if f.is_file()) / 2**20
    )
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
