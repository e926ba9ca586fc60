"""Warm retrieval through HTTP against in-process, and a CLI query against the running service.

    python benchmarks/service_latency.py --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 200 --clients 1 4 16 --json-out latency.json

One run, five phases, in this order because the embedded store admits one process at a time:
1. in-process: ``QuorumRAG.retrieve`` on N questions, warm (the first question not counted);
2. CLI: ``qrag-qdrant query --no-generate --json`` in a new process, wall clock from start to
   exit (its evidence printed), median of ``--cli-runs``;
3. ``qrag-qdrant serve`` on a local port, result cache off (``QRAG_SERVICE_CACHE_ENTRIES=0``), so
   every request retrieves: N distinct questions at each concurrency, each client thread with
   its own keep-alive connection; p50/p95 per request and throughput; and ``GET /healthz`` as
   the floor that HTTP and the client cost with no work behind them;
4. the CLI's questions again through the running service with ``curl``, a new process per
   question as a user types it;
5. in-process again, the same questions as phase 1.
Evidence only (no generation). Needs the service extra and curl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
from query_latency import summary  # this folder's: p50/p95 as query_latency.py reports them

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.service.auth.keys import KeyFile

CLI = str(Path(sys.executable).parent / "qrag-qdrant")


def in_process(settings_kwargs: dict, questions: list[str]) -> dict[str, float]:
    with QuorumRAG(load_settings(**settings_kwargs)) as rag:
        rag.retrieve(questions[0])  # model loaded, collections checked
        latencies = []
        for question in questions:
            started = time.perf_counter()
            rag.retrieve(question)
            latencies.append((time.perf_counter() - started) * 1000)
    return summary(latencies)


def timed_process(command: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """Seconds a command took to print evidence (its JSON's clusters)."""
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=cwd)
    seconds = time.perf_counter() - started
    if done.returncode != 0 or '"clusters"' not in done.stdout:
        raise SystemExit(f"{' '.join(command[:3])} failed: {done.stderr.strip() or done.stdout[:300]}")
    return seconds


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving(env: dict[str, str]) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """``qrag-qdrant serve`` on a free loopback port, with ``env``, until the block ends: its base
    URL and process once ``/readyz`` says the model and the store are loaded."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [CLI, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 300
        while server.poll() is None and time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/readyz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        if server.poll() is not None:
            raise SystemExit(f"serve failed: {server.stderr.read() if server.stderr else ''}")
        yield base, server
    finally:
        server.terminate()
        server.wait(60)


def through_http(base: str, key: str, questions: list[str], clients: int) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {key}"}
    shares = [questions[i::clients] for i in range(clients)]

    def client(share: list[str]) -> list[float]:
        latencies = []
        with httpx.Client(base_url=base, headers=headers, timeout=300) as http:
            for question in share:
                started = time.perf_counter()
                response = http.post("/v1/query", json={"question": question, "generate": False})
                latencies.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
        return latencies

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = [ms for share in pool.map(client, shares) for ms in share]
    wall = time.perf_counter() - started
    return {**summary(latencies), "throughput_qps": round(len(latencies) / wall, 1), "requests": len(latencies)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=200, help="questions per phase and per concurrency")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if shutil.which("curl") is None:
        raise SystemExit("needs curl")

    lines = args.questions.read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines[: args.n * (1 + len(args.clients))]]
    cli_questions = questions[: args.cli_runs]
    result: dict[str, object] = {
        "store": str(args.store),
        "namespace": args.namespace,
        "n": args.n,
        "cpus": os.cpu_count(),
    }
    result["in_process"] = in_process({"store": args.store, "namespace": args.namespace}, questions[: args.n])
    print("in-process", result["in_process"], flush=True)

    env = {**os.environ, "QRAG_STORE": str(args.store), "QRAG_NAMESPACE": args.namespace}
    cli = [timed_process([CLI, "query", "--no-generate", "--json", q], env) for q in cli_questions]
    result["cli_time_to_evidence_s"] = {"median": round(statistics.median(cli), 2), "runs": [round(s, 2) for s in cli]}
    print("cli", result["cli_time_to_evidence_s"], flush=True)

    with tempfile.TemporaryDirectory() as folder:
        key = KeyFile.load(Path(folder) / "keys.toml").add(args.namespace, "read")
        serve_env = {**env, "QRAG_SERVICE_KEYS": str(Path(folder) / "keys.toml"), "QRAG_SERVICE_CACHE_ENTRIES": "0"}
        started = time.perf_counter()
        with serving(serve_env) as (base, _):
            result["service_start_to_ready_s"] = round(time.perf_counter() - started, 2)
            through_http(base, key, questions[:5], 1)  # warm: first requests pay lazy imports
            with httpx.Client(base_url=base) as http:  # the floor: HTTP and the client, no work behind it
                floor = []
                for _ in range(args.n):
                    started = time.perf_counter()
                    http.get("/healthz").raise_for_status()
                    floor.append((time.perf_counter() - started) * 1000)
            result["http_floor_healthz"] = summary(floor)
            for index, clients in enumerate(args.clients, start=1):
                share = questions[index * args.n : (index + 1) * args.n]  # new questions: no cache can help
                result[f"http_{clients}_clients"] = through_http(base, key, share, clients)
                print(f"http {clients} clients", result[f"http_{clients}_clients"], flush=True)
            curl = [
                timed_process(
                    [
                        "curl",
                        "-sf",
                        "-X",
                        "POST",
                        f"{base}/v1/query",
                        "-H",
                        f"Authorization: Bearer {key}",
                        "-H",
                        "Content-Type: application/json",
                        "-d",
                        json.dumps({"question": q, "generate": False}),
                    ],
                    env,
                )
                for q in cli_questions
            ]
            result["service_time_to_evidence_s"] = {
                "median": round(statistics.median(curl), 3),
                "runs": [round(s, 3) for s in curl],
            }
    # in-process again: the box's load drifts, so the ratio is given against both measurements
    result["in_process_after"] = in_process({"store": args.store, "namespace": args.namespace}, questions[: args.n])
    one = result.get("http_1_clients")
    if isinstance(one, dict):
        result["http_1_client_p50_over_in_process"] = [
            round(one["p50_ms"] / result[phase]["p50_ms"], 2) for phase in ("in_process", "in_process_after")
        ]
    result["cli_over_service_time_to_evidence"] = round(
        result["cli_time_to_evidence_s"]["median"] / result["service_time_to_evidence_s"]["median"], 1
    )
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
