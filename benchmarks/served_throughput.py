"""Ingest through an embedding server against the same model in-process, in one run.

    python benchmarks/served_throughput.py --data ../shared/data/multihop-rag --articles 60 \
        --json-out served-throughput.json

The packaged all-MiniLM-L6-v2 is served by an OpenAI-compatible ``/v1/embeddings`` in another
process (a small stand-in server around the same fastembed model, so the vectors are the model's
own and only the path differs), and MultiHop-RAG's first ``--articles`` articles are ingested
into fresh stores with the default retrievers:

- in-process, each chunk embedded on its own (``pooling = "chunk"``, what a served model does);
- in-process with the default anchored pooling (the model reads each document once);
- through the server (the ``openai`` embedder) at ``--batch-size`` and each ``--concurrency``.

Where the time goes: the server reports the seconds its model was busy (tokenising and running
it; with requests at once, the wall time at least one was in the model, and the sum beside it)
and the seconds spent writing JSON; the client side measures each request's round trip and the
store's writes. "Path over model" is the ingest's seconds over the model's own seconds on the
same texts: what the server path (HTTP, JSON, batching) adds to the model's work. The namespaces
built in-process and through the server (both chunk by chunk) then answer the same questions,
and the share whose evidence (every cluster's passages, in order) is identical is reported.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from service_latency import free_port  # this folder's

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.sections import EmbeddingSettings
from qrag_qdrant.config.settings import Settings, load_settings
from qrag_qdrant.embedding import DenseEmbedder


def serve(port: int) -> None:
    """The stand-in server: the packaged model behind ``POST /v1/embeddings``, its own time kept."""
    embedder = DenseEmbedder(EmbeddingSettings(pooling="chunk"))
    embedder.embed(["warm up the session"] * 8)
    totals = {"requests": 0, "texts": 0, "model_s": 0.0, "model_busy_s": 0.0, "json_s": 0.0}
    busy = {"embedding": 0, "since": 0.0}  # requests in the model now, and since when one was
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            with lock:
                self.reply(json.dumps(totals).encode())

        def do_POST(self) -> None:
            texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
            with lock:
                started = time.perf_counter()
                busy["since"] = started if busy["embedding"] == 0 else busy["since"]
                busy["embedding"] += 1
            vectors = embedder.embed(texts)
            with lock:
                embedded = time.perf_counter()
                busy["embedding"] -= 1
                if busy["embedding"] == 0:
                    totals["model_busy_s"] += embedded - busy["since"]
            body = json.dumps(
                {"object": "list", "data": [{"index": i, "embedding": row} for i, row in enumerate(vectors.tolist())]}
            ).encode()
            with lock:
                totals["requests"] += 1
                totals["texts"] += len(texts)
                totals["model_s"] += embedded - started
                totals["json_s"] += time.perf_counter() - embedded
            self.reply(body)

        def reply(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


@contextmanager
def stand_in_server() -> Iterator[str]:
    """The stand-in server (``serve``) in a process of its own, once it answers (its model loads
    first): its base URL, ``http://127.0.0.1:<port>``. Stopped on leaving."""
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/stats")
                break
            except httpx.TransportError:
                time.sleep(0.5)
        yield base
    finally:
        server.terminate()
        server.wait()


def timed(owner: Any, method: str, totals: dict[str, float], key: str) -> None:
    """Wrap ``owner.method`` so the seconds spent in it add up under ``totals[key]``."""
    original = getattr(owner, method)
    lock = threading.Lock()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                totals[key] = totals.get(key, 0.0) + time.perf_counter() - started

    setattr(owner, method, wrapper)


def ingest(settings: Settings, corpus: Path, server: str | None) -> tuple[dict[str, Any], QuorumRAG]:
    """One cold ingest; the store writes and (in-process) the model's seconds measured."""
    rag = QuorumRAG(settings)
    totals: dict[str, float] = {}
    timed(rag.store, "upsert", totals, "store_writes_s")
    embedder = rag.embedder()
    if server is None:
        timed(embedder, "embed", totals, "model_s")
        timed(embedder, "embed_spans", totals, "model_s")
        before = None
    else:
        timed(embedder, "ask", totals, "requests_s")
        before = httpx.get(server).json()
    report = rag.ingest(corpus)
    row: dict[str, Any] = {"chunks": report.embedded_chunks, "seconds": round(report.seconds, 1)}
    if before is not None:
        after = httpx.get(server).json()
        totals["model_s"] = after["model_busy_s"] - before["model_busy_s"]
        totals["model_summed_s"] = after["model_s"] - before["model_s"]
        totals["server_json_s"] = after["json_s"] - before["json_s"]
        row["requests"] = after["requests"] - before["requests"]
    row.update({key: round(value, 1) for key, value in totals.items()})
    row["chunks_per_s"] = round(report.embedded_chunks / report.seconds, 1)
    row["path_over_model"] = round(report.seconds / totals["model_s"], 3)
    return row, rag


def evidence_of(rag: QuorumRAG, question: str) -> list[list[tuple[str, str]]]:
    evidence = rag.retrieve(question)
    return [[(p.source, p.text) for p in cluster.passages] for cluster in evidence.clusters]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, help="the multihop-rag folder")
    parser.add_argument("--articles", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--questions", type=int, default=200, help="questions asked of both chunk-by-chunk namespaces")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    if args.data is None:
        parser.error("--data is required")
    rows: dict[str, dict[str, Any]] = {}
    questions = [json.loads(line)["question"] for line in (args.data / "questions.jsonl").open()]
    with stand_in_server() as base, TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for path in sorted((args.data / "corpus").iterdir())[: args.articles]:
            (corpus / path.name).write_text(path.read_text())
        served = {"embedder": "openai", "dim": 384, "server": {"url": f"{base}/v1", "batch_size": args.batch_size}}
        phases: list[tuple[str, dict[str, Any], str | None]] = [
            ("in-process, chunk by chunk", {"pooling": "chunk"}, None),
            ("in-process, anchored (default)", {}, None),
        ]
        for concurrency in args.concurrency:
            setting = {**served, "server": {**served["server"], "concurrency": concurrency}}
            phases.append((f"served, batch {args.batch_size}, concurrency {concurrency}", setting, f"{base}/stats"))
        pipelines: dict[str, QuorumRAG] = {}
        for number, (name, embedding, server_stats) in enumerate(phases):
            settings = load_settings(store=Path(tmp) / f"store-{number}", embedding=embedding)
            rows[name], pipelines[name] = ingest(settings, corpus, server_stats)
            print(name, rows[name], flush=True)
        local, remote = pipelines[phases[0][0]], pipelines[phases[2][0]]
        asked = questions[: args.questions]
        same = sum(evidence_of(local, q) == evidence_of(remote, q) for q in asked)
        for rag in pipelines.values():
            rag.close()
    result = {
        "corpus": f"multihop-rag, first {args.articles} articles",
        "phases": rows,
        "questions": len(asked),
        "identical_evidence": same,
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
