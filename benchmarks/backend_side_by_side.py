"""The same questions answered by the embedded backend and by the ``openai`` backend against
llama.cpp's own HTTP server with the same GGUF: the same answers, or the differences shown, with
seconds per answer for both.

    python benchmarks/backend_side_by_side.py $DATA/squad-dev --store $S --sample 20 --seed 0 --json-out sbs.json

Both read the same evidence (retrieved once per question) through the one answer path
(``generation.answer.answer_from``); the server runs in this process on a loopback port, started
with the embedded backend's own settings (window, threads, greedy decoding).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from pathlib import Path
from typing import Any

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval import load_dataset
from qrag_qdrant.eval.metrics import holds_answer
from qrag_qdrant.generation.answer import answer_from
from qrag_qdrant.generation.backends.embedded import EmbeddedGenerator, resolve_gguf
from qrag_qdrant.generation.backends.openai import OpenAIGenerator

MODEL_ID = "side-by-side"


def start_server(gguf: Path, context: int, threads: int) -> tuple[Any, str]:
    import xllamacpp

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.model_alias = {MODEL_ID}
    params.n_ctx, params.n_parallel = context, 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = threads
    params.warmup, params.verbosity, params.port = False, 0, port
    return xllamacpp.Server(params), f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="a QA data set folder (eval's layout)")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", default=None, help="[default: eval-<data set name>]")
    parser.add_argument("--sample", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--articles", default="test", help="test: questions on articles nothing was tuned on")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    dataset = load_dataset(args.data, sample=args.sample, seed=args.seed, articles=args.articles)
    settings = load_settings(store=args.store, namespace=args.namespace or dataset.namespace)
    embedded = EmbeddedGenerator.from_settings(settings)
    server, url = start_server(resolve_gguf(settings.llm), settings.llm.context, settings.llm.threads)
    remote_settings = settings.model_copy(
        update={"openai": settings.openai.model_copy(update={"base_url": url, "model": MODEL_ID, "max_retries": 0})}
    )
    remote = OpenAIGenerator.from_settings(remote_settings)
    rows = []
    with QuorumRAG(settings) as rag:
        rag.ingest(dataset.corpus)
        for question in dataset.questions:
            evidence = rag.retrieve(question.question)
            row: dict[str, Any] = {"question": question.question, "abstained": evidence.abstained}
            for name, backend in (("embedded", embedded), ("openai", remote)):
                started = time.perf_counter()
                answer = answer_from(evidence, lambda backend=backend: backend, settings)
                row[name] = {
                    "answer": answer.answer,
                    "seconds": round(time.perf_counter() - started, 2),
                    "holds_gold": bool(answer.answer) and holds_answer(answer.answer or "", question.answers),
                    "supported": bool(answer.claims) and all(c.supported for c in answer.claims),
                    "answer_probability": answer.answer_probability,
                    "error": answer.error,
                }
            rows.append(row)
            print(json.dumps(row), flush=True)
    answered = [r for r in rows if not r["abstained"]]
    same = [r for r in answered if r["embedded"]["answer"] == r["openai"]["answer"]]
    summary = {
        "questions": len(rows),
        "answered": len(answered),
        "same_answer": len(same),
        "seconds_median": {
            name: statistics.median(r[name]["seconds"] for r in answered) if answered else None
            for name in ("embedded", "openai")
        },
        "holds_gold": {name: sum(r[name]["holds_gold"] for r in answered) for name in ("embedded", "openai")},
        "supported": {name: sum(r[name]["supported"] for r in answered) for name in ("embedded", "openai")},
        "differences": [r for r in answered if r not in same],
    }
    del server
    print(json.dumps({k: v for k, v in summary.items() if k != "differences"}, indent=2))
    for row in summary["differences"]:
        print(
            f"differs: {row['question']!r}: embedded {row['embedded']['answer']!r} / openai {row['openai']['answer']!r}"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
