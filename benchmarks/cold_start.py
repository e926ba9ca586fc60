"""A CLI query's cold start: process start to evidence printed, and where its first second goes.

    python benchmarks/cold_start.py --store $S --namespace eval-squad-dev \
        --questions ../shared/data/squad-dev/questions.jsonl --runs 10 --baseline-src /tmp/before

- ``time_to_evidence_s``: ``qrag-qdrant query --no-generate --json QUESTION`` run as a user
  runs it, a new question each time; median and every run.
- ``phases_ms``: one process timed stage by stage: imports, the first ``retrieve`` (the shards
  open, the model loads) and the process's start and exit.
- ``imports``: ``python -X importtime``: the cumulative time of ``qrag_qdrant.cli.app`` and of the
  slowest packages it pulls in.
- With ``--baseline-src`` (another checkout's source, e.g. a ``git worktree`` of an earlier
  commit), both sources run alternately under ``python -S`` with the same packages, so the
  ratio holds on a busy machine; ``-S`` skips ``site``, so these times are a little lower.
- Each source's bytecode is written first (``compileall``), as an installed package has it.
  Where ``PYTHONDONTWRITEBYTECODE`` is set (it is on our benchmark machine), every run would
  otherwise compile the package's modules again: about 60 ms.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from service_latency import CLI, timed_process  # this folder's: a command timed to its evidence

SOURCE = Path(__file__).resolve().parents[1]
PHASES = """
import sys, time
started = time.perf_counter()
from qrag_qdrant import QuorumRAG
imported = time.perf_counter()
with QuorumRAG.from_config() as rag:
    evidence = rag.retrieve(sys.argv[1])
retrieved = time.perf_counter()
print(f"{(imported - started) * 1000:.1f} {(retrieved - imported) * 1000:.1f}")
"""
QUERY = "import sys; from qrag_qdrant.cli.app import main; sys.argv[0] = 'qrag-qdrant'; main()"


def phases(question: str, env: dict[str, str]) -> dict[str, float]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PHASES, question], env=env, capture_output=True, text=True, check=True)
    total = (time.perf_counter() - started) * 1000
    imports, retrieve = map(float, done.stdout.split())
    return {"imports": imports, "first_retrieve": retrieve, "start_and_exit": round(total - imports - retrieve, 1)}


def import_times(env: dict[str, str], top: int = 10) -> dict[str, float]:
    """Cumulative import time (ms) of qrag_qdrant.cli.app and of the slowest top-level packages."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import qrag_qdrant.cli.app"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    packages: dict[str, float] = {}
    for line in done.stderr.splitlines():
        found = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if found and (found[3] == "qrag_qdrant.cli.app" or "." not in found[3]):
            packages[found[3]] = max(packages.get(found[3], 0.0), int(found[1]) / 1000)
    return dict(sorted(packages.items(), key=lambda item: -item[1])[:top])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' field")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--baseline-src", type=Path, help="another checkout's source to compare with")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    for source in (SOURCE, args.baseline_src):
        if source and not compileall.compile_dir(source / "qrag_qdrant", quiet=1):
            raise SystemExit(f"cannot compile {source / 'qrag_qdrant'}")
    lines = args.questions.read_text().splitlines()[: args.runs]
    questions = [json.loads(line)["question"] for line in lines]
    env = {**os.environ, "QRAG_STORE": str(args.store.resolve()), "QRAG_NAMESPACE": args.namespace}
    result: dict[str, object] = {
        "store": str(args.store),
        "namespace": args.namespace,
        "runs": len(questions),
        "load_average": os.getloadavg(),
    }
    runs = [timed_process([CLI, "query", "--no-generate", "--json", question], env) for question in questions]
    result["time_to_evidence_s"] = {"median": round(statistics.median(runs), 3), "runs": [round(s, 3) for s in runs]}
    result["phases_ms"] = {
        name: statistics.median(values)
        for name, values in zip(
            ("imports", "first_retrieve", "start_and_exit"),
            zip(*(phases(question, env).values() for question in questions[:5])),
        )
    }
    result["imports_ms"] = import_times(env)

    if args.baseline_src:
        packages = sysconfig.get_paths()["purelib"]
        sources = {"this": SOURCE, "baseline": args.baseline_src.resolve()}
        paired: dict[str, list[float]] = {name: [] for name in sources}
        for n, question in enumerate(questions):
            for name in list(sources) if n % 2 == 0 else list(sources)[::-1]:
                # run from the source's folder: ``-c`` puts the working folder first on sys.path
                paired[name].append(
                    timed_process(
                        [sys.executable, "-S", "-c", QUERY, "query", "--no-generate", "--json", question],
                        {**env, "PYTHONPATH": f"{sources[name]}:{packages}"},
                        cwd=sources[name],
                    )
                )
        medians = {name: round(statistics.median(values), 3) for name, values in paired.items()}
        result["paired_with_baseline_s"] = {
            **medians,
            "ratio": round(medians["this"] / medians["baseline"], 3),
            "baseline_src": str(args.baseline_src),
        }
    result["load_average_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
