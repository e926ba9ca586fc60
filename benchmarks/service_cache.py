"""The service's result cache: a repeated question against a fresh one, through the app.

    python benchmarks/service_cache.py --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 200 --json-out cache.json

Starts the FastAPI app in-process (TestClient, no network), asks N questions once (misses:
retrieval runs) and again (hits), evidence only. Prints p50/p95 of the whole request and of
the cache lookup itself (``timings_ms.cache_hit``: stamps read from the manifests, then the
entry), and the hit rate of the repeats. Needs the service extra.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.service.app import create_app
from qrag_qdrant.service.auth.keys import KeyFile


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(share * len(ordered)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines()[: args.n]]
    with tempfile.TemporaryDirectory() as folder:
        keys = KeyFile.load(Path(folder) / "keys.toml")
        auth = {"Authorization": f"Bearer {keys.add(args.namespace, 'read')}"}
        settings = load_settings(store=args.store, service={"keys": Path(folder) / "keys.toml"})
        with TestClient(create_app(settings, keys)) as client:
            runs: dict[str, dict[str, list[float]]] = {}
            for run in ("miss", "hit"):
                walls, lookups = [], []
                for question in questions:
                    started = time.perf_counter()
                    body = client.post("/v1/query", json={"question": question, "generate": False}, headers=auth).json()
                    walls.append((time.perf_counter() - started) * 1000)
                    lookups.append(body["timings_ms"].get(f"cache_{run}", float("nan")))
                runs[run] = {"wall": walls, "lookup": lookups}
            hits = client.get("/metrics").text
    result = {
        run: {
            "request_p50_ms": percentile(v["wall"], 0.5),
            "request_p95_ms": percentile(v["wall"], 0.95),
            "lookup_p50_ms": percentile(v["lookup"], 0.5),
            "lookup_p95_ms": percentile(v["lookup"], 0.95),
        }
        for run, v in runs.items()
    }
    result["hit_rate_of_repeats"] = round(sum(v == v for v in runs["hit"]["lookup"]) / len(questions), 3)
    result["speedup_p50"] = round(statistics.median(runs["miss"]["wall"]) / statistics.median(runs["hit"]["wall"]), 1)
    result["metrics"] = hits
    print(json.dumps({k: v for k, v in result.items() if k != "metrics"}, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
