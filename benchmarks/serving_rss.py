"""The query process's memory, step by step: the model, the store opened, questions answered.

    python benchmarks/serving_rss.py --store /tmp/scale --namespace scale-200k \
        --questions ../shared/data/squad-dev/questions.jsonl --n 300 --json-out rss-200k.json

The serving memory per chunk in docs/scaling.md is the slope of the last step's RSS between two
sizes of one corpus (50k and 200k chunks per collection). RSS has two parts that behave apart:
- anonymous: the process's own memory (the ONNX model, Python, and the store's quantized vectors,
  HNSW graphs and id maps once the shards open);
- file: pages of the shards' memory-mapped files that the questions touched, page cache the
  kernel takes back under pressure; it grows with the questions asked.

The page cache starts cold as a CLI query finds it (Edge drops a shard's files from the page
cache when it opens them); ``--by-file`` adds which files the questions' pages came from.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import random
import re
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread

MAPPING = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
SEGMENT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def rss_mb() -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {
        name: round(int(fields[field].split()[0]) / 1024)
        for name, field in (("rss", "VmRSS"), ("anon", "RssAnon"), ("file", "RssFile"))
    }


def rss_by_file(store: Path) -> collections.Counter[str]:
    """KB resident per file of the store, segments' ids left out so that like files add up."""
    resident: collections.Counter[str] = collections.Counter()
    path = None
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if MAPPING.match(line):
            fields = line.split()
            path = fields[5] if len(fields) > 5 and fields[5].startswith(str(store)) else None
        elif path and line.startswith("Rss:"):
            name = SEGMENT.sub("<segment>", path[len(str(store)) + 1 :])
            resident[name] += int(line.split()[1])
    return resident


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with a 'question' field")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--by-file", action="store_true", help="also the questions' resident MB per store file")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    one_blas_thread()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [row["question"] for row in random.Random(args.seed).sample(rows, min(args.n, len(rows)))]
    store = args.store.resolve()
    with QuorumRAG.from_config(args.config, store=store, namespace=args.namespace) as rag:
        rag.embedder().query_embed("a first question loads the model")
        steps = {"model": rss_mb()}
        chunks = sum(rag.store.count(spec.name) for spec, _ in rag.coordinator.searcher.collections)
        steps["opened"] = rss_mb()
        resident = [rss_by_file(store)] if args.by_file else []
        rag.retrieve(questions[0])
        steps["1 question"] = rss_mb()
        resident += [rss_by_file(store)] if args.by_file else []
        for question in questions[1:]:
            rag.retrieve(question)
        steps[f"{len(questions)} questions"] = rss_mb()
        resident += [rss_by_file(store)] if args.by_file else []
        result = {"namespace": args.namespace, "chunks": chunks, "steps_mb": steps}
        for step, (before, after) in zip(("first_question", "other_questions"), itertools.pairwise(resident)):
            touched = after - before
            result[f"{step}_mb_by_file"] = {
                name: round(kb / 1024, 1) for name, kb in touched.most_common() if kb >= 512
            }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
