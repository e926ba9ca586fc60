"""How long listing, showing and removing a document takes in a namespace of N documents.

    python benchmarks/documents_list.py --store /tmp/docs-bench --documents 10000 --json-out docs-10k.json
    python benchmarks/documents_list.py --store /tmp/docs-bench --documents 100000 --json-out docs-100k.json

The namespace ``docs-<N/1000>k`` is filled with N documents written straight to the store, as an
ingest leaves them: two chunks in the 50-word collection and one in the 100-word one, each with
its payload (source, content hash, offsets, version, key), and each collection's term counts.
The dense vectors are random and the BM25 vectors one term: what is timed reads payloads only,
and embedding N documents would take hours. Then ``Documents.page`` (the first page, and one in
the middle), ``get`` and ``remove`` run through the code path every interface uses, each several
times (the median is reported; each removal removes another document).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path

import numpy as np

from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import SparseVec, embedding_dim
from qrag_qdrant.ingest.documents import Documents
from qrag_qdrant.store import ChunkPoint, CollectionManifest
from qrag_qdrant.store.base import TERM_STATS
from qrag_qdrant.store.edge import EdgeStore
from qrag_qdrant.store.points import ChunkPayload, point_id
from qrag_qdrant.text.term_stats import TermStats, count_terms

BATCH = 2000
REPEATS = 5


def build(store: EdgeStore, settings, documents: int) -> None:
    model = settings.embedding.model
    dim = embedding_dim(EmbeddingSettings(model=model))
    rng = np.random.default_rng(0)
    version = time.time_ns()
    for spec in settings.collections:
        manifest = CollectionManifest.expected(settings.namespace, spec, model, dim)
        store.open_collection(spec.name, manifest, create=True)
        chunks = 2 if spec.size == 50 else 1
        batch: list[ChunkPoint] = []
        for n in range(documents):
            source = f"folder{n % 100:02d}/document{n:06d}.txt"
            digest = hashlib.sha256(source.encode()).hexdigest()
            for index in range(chunks):
                vector = rng.standard_normal(dim).astype(np.float32)
                payload = ChunkPayload(
                    source,
                    digest,
                    index,
                    index * 25,
                    index * 25 + 50,
                    index * 150,
                    index * 150 + 300,
                    f"text of {source}",
                    version,
                    ingested_by="bench",
                )
                sparse = SparseVec([n % 50_000], [1.0])
                batch.append(
                    ChunkPoint(
                        point_id(spec.name, source, index, digest), vector / np.linalg.norm(vector), sparse, payload
                    )
                )
            if len(batch) >= BATCH:
                store.upsert(spec.name, batch)
                batch = []
        if batch:
            store.upsert(spec.name, batch)
        store.finish_bulk(spec.name)
        stamp = time.time_ns()
        store.stamp_indexed(spec.name, stamp)
        # the term counts an ingest leaves: a removal updates them instead of counting every chunk again
        counts = TermStats.of(count_terms(store.texts(spec.name)), store.count(spec.name), stamp)
        store.attach(spec.name, TERM_STATS, counts.to_bytes())


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--documents", type=int, default=10_000)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    namespace = f"docs-{args.documents // 1000}k"
    settings = load_settings(store=args.store, namespace=namespace)
    with EdgeStore(args.store, namespace) as store:
        started = time.perf_counter()
        if store.manifest(settings.collections[0].name) is None:
            build(store, settings, args.documents)
        built = time.perf_counter() - started
        documents = Documents(settings, store)
        total = documents.page(0, 1).total
        middle = total // 2
        result = {
            "documents": total,
            "points": {spec.name: store.count(spec.name) for spec in settings.collections},
            "build_seconds": round(built, 1),
            "first_page_100_s": statistics.median(timed(lambda: documents.page(0, 100)) for _ in range(REPEATS)),
            "middle_page_100_s": statistics.median(timed(lambda: documents.page(middle, 100)) for _ in range(REPEATS)),
            "show_one_s": statistics.median(
                timed(lambda: documents.get(f"folder00/document{middle - middle % 100:06d}.txt"))
                for _ in range(REPEATS)
            ),
            "remove_one_s": statistics.median(
                timed(lambda n=n: documents.remove(f"folder{n % 100:02d}/document{n:06d}.txt")) for n in range(REPEATS)
            ),
        }
    result = {k: round(v, 4) if isinstance(v, float) else v for k, v in result.items()}
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
