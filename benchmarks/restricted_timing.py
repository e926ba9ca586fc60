"""Whether a document's 404 tells a restricted name from a missing one by its timing: a caller
without the document's group asks ``GET /v1/documents/{source}`` for a restricted document and for
a name no document has, interleaved, over real HTTP on loopback, and the two samples of response
times are compared (Mann-Whitney U, two-sided), as the hostile probe measured them.

    python benchmarks/restricted_timing.py --n 600 --json-out restricted-timing.json

A namespace of a few public documents and one ``hr``-only document is ingested into a temporary
store; the service runs in this process (uvicorn on a free loopback port) with one key of no
group. Each round asks both names in a random order on one kept-alive connection; the first
``--warm`` rounds are not counted. Prints each name's median and p95 in microseconds, U, z and p.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from scipy.stats import mannwhitneyu

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.service.app import create_app
from qrag_qdrant.service.auth.keys import KeyFile

RESTRICTED, MISSING = "hr/salary-bands.txt", "hr/salary-scales.txt"
PUBLIC = {
    "bees.txt": "Honeybee foragers tell their sisters where flowers are with the waggle dance. " * 6,
    "chess.txt": "A chess engine searches the game tree and prunes it with alpha-beta search. " * 6,
    "tides.txt": "The tides follow the moon, and spring tides come at new and full moon. " * 6,
}
CANARY = "The zorblax band pays staff engineers between 131,400 and 152,900 euros a year. " * 4


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=600, help="requests per name, counted")
    parser.add_argument("--warm", type=int, default=50, help="rounds not counted")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qrag-timing-"))
    store = work / "store"
    for folder, documents in (("public", PUBLIC), ("private", {RESTRICTED: CANARY})):
        for name, text in documents.items():
            (work / folder / name).parent.mkdir(parents=True, exist_ok=True)
            (work / folder / name).write_text(text)
    with QuorumRAG(load_settings(store=store, namespace="acme")) as rag:
        rag.ingest(work / "public")
        rag.ingest(work / "private", readers=["hr"])
    keys = KeyFile.load(work / "keys.toml")
    key = keys.add("acme", "read")
    settings = load_settings(store=store, namespace="acme", service={"keys": work / "keys.toml", "rate_lookup": None})
    port = free_port()
    app = create_app(settings, keys)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        thread.join(0.05)
    times: dict[str, list[float]] = {RESTRICTED: [], MISSING: []}
    order = random.Random(args.seed)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {key}"}) as client:
            for round_ in range(args.warm + args.n):
                names = [RESTRICTED, MISSING]
                order.shuffle(names)
                for name in names:
                    started = time.perf_counter()
                    status = client.get(f"/v1/documents/{name}").status_code
                    took = time.perf_counter() - started
                    assert status == 404, (name, status)
                    if round_ >= args.warm:
                        times[name].append(took * 1e6)
    finally:
        server.should_exit = True
        thread.join(60)
    test = mannwhitneyu(times[RESTRICTED], times[MISSING], alternative="two-sided")
    n1 = n2 = args.n
    mean_u, sd_u = n1 * n2 / 2, (n1 * n2 * (n1 + n2 + 1) / 12) ** 0.5
    result = {
        "n": args.n,
        "restricted_median_us": round(statistics.median(times[RESTRICTED]), 1),
        "missing_median_us": round(statistics.median(times[MISSING]), 1),
        "restricted_p95_us": round(percentile(times[RESTRICTED], 0.95), 1),
        "missing_p95_us": round(percentile(times[MISSING], 0.95), 1),
        "u": float(test.statistic),
        "z": round((float(test.statistic) - mean_u) / sd_u, 2),
        "p": float(test.pvalue),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
