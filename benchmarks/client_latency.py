"""What the client protocols add to a warm evidence query, measured in one run.

    python benchmarks/client_latency.py --store $S --namespace eval-squad-dev \
        --twin-store $S_COPY --questions ../shared/data/squad-dev/questions.jsonl --n 100 --json-out clients.json

1. in-process ``QuorumRAG.retrieve``, warm;
2. ``qrag-qdrant serve`` (result cache off, so each request retrieves), alternating per question:
   ``POST /v1/query`` with ``generate: false`` (httpx) and the ``quorum-evidence`` model through
   the official ``openai`` SDK: p50 of each and their ratio;
3. ``qrag-qdrant mcp`` over stdio through the official ``mcp`` SDK's client, warm, alternating per
   question with an in-process retrieve on ``--twin-store`` (a copy of the store: the embedded
   engine admits one process per store), so both see the same load: p50 of each and their ratio.
Evidence only: no model is called anywhere. Every request goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from openai import OpenAI
from service_latency import CLI, in_process, serving  # this folder's

from qrag_qdrant.service.auth.keys import KeyFile


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def through_service(env: dict[str, str], namespace: str, questions: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        key = KeyFile(Path(folder) / "keys.toml").add(namespace, "read")
        serve_env = {
            **env,
            "QRAG_SERVICE_KEYS": str(Path(folder) / "keys.toml"),
            "QRAG_SERVICE_CACHE_ENTRIES": "0",
            "QRAG_SERVICE_RATE_QUERY": "100000/second",
        }
        with serving(serve_env) as (base, _):
            plain, sdk = [], []
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
                client = OpenAI(base_url=f"{base}/v1", api_key=key, max_retries=0)
                for index, question in enumerate(questions):
                    started = time.perf_counter()
                    http.post("/v1/query", json={"question": question, "generate": False}).raise_for_status()
                    query_ms = (time.perf_counter() - started) * 1000
                    started = time.perf_counter()
                    client.chat.completions.create(
                        model="quorum-evidence", messages=[{"role": "user", "content": question}]
                    )
                    openai_ms = (time.perf_counter() - started) * 1000
                    if index:  # the first of each pays lazy imports
                        plain.append(query_ms)
                        sdk.append(openai_ms)
    return {
        "v1_query_p50_ms": p50(plain),
        "openai_quorum_evidence_p50_ms": p50(sdk),
        "openai_over_v1_query": round(statistics.median(sdk) / statistics.median(plain), 2),
    }


def through_mcp(env: dict[str, str], twin: dict[str, object], questions: list[str]) -> dict[str, object]:
    from qrag_qdrant import QuorumRAG
    from qrag_qdrant.config.settings import load_settings

    params = StdioServerParameters(command=CLI, args=["mcp"], env=env)

    async def session() -> tuple[list[float], list[float]]:
        with QuorumRAG(load_settings(**twin)) as rag:
            rag.retrieve(questions[0])
            async with Client(params) as client:
                await client.call_tool("search_evidence", {"question": questions[0]})  # warm
                over_mcp, here = [], []
                for question in questions[1:]:
                    started = time.perf_counter()
                    result = await client.call_tool("search_evidence", {"question": question})
                    over_mcp.append((time.perf_counter() - started) * 1000)
                    assert not result.is_error, result.content
                    started = time.perf_counter()
                    rag.retrieve(question)
                    here.append((time.perf_counter() - started) * 1000)
        return over_mcp, here

    over_mcp, here = asyncio.run(session())
    return {
        "mcp_search_evidence_p50_ms": p50(over_mcp),
        "in_process_alternating_p50_ms": p50(here),
        "mcp_over_in_process": round(statistics.median(over_mcp) / statistics.median(here), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--twin-store", type=Path, required=True, help="a copy of --store, for the in-process side")
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines()[: args.n]]
    settings = {"store": args.store, "namespace": args.namespace}
    env = {**os.environ, "QRAG_STORE": str(args.store), "QRAG_NAMESPACE": args.namespace}
    result: dict[str, object] = {"n": len(questions), "cpus": os.cpu_count(), "python": sys.version.split()[0]}
    result["in_process"] = in_process(settings, questions)
    result.update(through_service(env, args.namespace, questions))
    result.update(through_mcp(env, {"store": args.twin_store, "namespace": args.namespace}, questions))
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
