"""What the audit log, or the metrics, cost a query: the same evidence-only queries through one app,
with the audit log (or ``/metrics``' observations, ``--toggle metrics``) on and off in turn (each
question is asked both ways, in alternating order), so that both see the same machine state; the
result cache is off, so every request retrieves.

    qrag-qdrant ingest ../shared/data/squad-dev/corpus --store $S --namespace eval-squad-dev
    python benchmarks/audit_cost.py --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 300 --json-out audit-cost.json
    python benchmarks/audit_cost.py --toggle metrics --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --n 300 --json-out metrics-cost.json

Each request goes through the whole ASGI stack (key check, audit middleware, route, retrieval,
JSON) with Starlette's TestClient; p50 and p95 per app, and their difference.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import tempfile
import time
from pathlib import Path

from fastapi.testclient import TestClient

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.service.app import create_app
from qrag_qdrant.service.auth.keys import KeyFile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--toggle", choices=["audit", "metrics"], default="audit", help="what is on and off")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines()[: args.n + 1]]
    logging.disable(logging.INFO)  # the service's request lines would be most of the output
    with tempfile.TemporaryDirectory() as folder:
        keys = KeyFile.load(Path(folder) / "keys.toml")
        header = {"Authorization": f"Bearer {keys.add(args.namespace, 'read')}"}
        service = {"keys": Path(folder) / "keys.toml", "cache_entries": 0, "audit_log": Path(folder) / "audit.jsonl"}
        service["rate_query"] = None  # every question asked twice, as fast as the box answers
        service["usage_db"] = Path(folder) / "usage.db"
        settings = load_settings(store=args.store, namespace=args.namespace, service=service)
        app = create_app(settings, embedder=DenseEmbedder(settings.embedding))
        timings: dict[bool, list[float]] = {True: [], False: []}
        with TestClient(app) as client:
            state = app.state.service
            kept = getattr(state, args.toggle)
            for n, question in enumerate(questions):
                for audit in (True, False) if n % 2 else (False, True):
                    setattr(state, args.toggle, kept if audit else None)  # read per request
                    started = time.perf_counter()
                    response = client.post("/v1/query", json={"question": question, "generate": False}, headers=header)
                    if n:  # the first question warms the app
                        timings[audit].append((time.perf_counter() - started) * 1000)
                    assert response.status_code == 200, response.text
            setattr(state, args.toggle, kept)  # the audit log is closed, its queue written, when the app stops
        written = len((Path(folder) / "audit.jsonl").read_text().splitlines())

    def summary(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(statistics.median(values), 2),
            "p95_ms": round(statistics.quantiles(values, n=20)[18], 2),
        }

    result = {
        "questions": len(questions) - 1,
        f"{args.toggle}_on": summary(timings[True]),
        f"{args.toggle}_off": summary(timings[False]),
        "audit_lines_written": written,
    }
    on, off = result[f"{args.toggle}_on"], result[f"{args.toggle}_off"]
    result["p50_difference_ms"] = round(on["p50_ms"] - off["p50_ms"], 2)
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
