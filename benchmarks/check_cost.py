"""What the answer's checks cost per answer, no model running: each question's evidence is
retrieved as users get it, its gold answer is written as the model would cite it ("Denver
Broncos [2]"), and the answer's checks run on it as the answer step runs them (no judge, the
default), counting why a right answer is not marked supported. The question's key-word weights
and unseen words, which retrieval computes for the checks, are timed too.

    python benchmarks/check_cost.py --store $S --namespace eval-squad-dev \
        --questions $DATA/squad-dev/questions.jsonl --n 300
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections import Counter
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation.checks.answer_check import check_answer
from qrag_qdrant.results import Answer
from qrag_qdrant.text.term_stats import key_term_weights, unseen_words


def quantiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=20)
    return {"p50_ms": round(statistics.median(values), 3), "p95_ms": round(cuts[18], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True, help="a QA set's questions.jsonl")
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    rows = random.Random(args.seed).sample([r for r in rows if r.get("answers")], args.n)
    settings = load_settings(store=args.store, namespace=args.namespace)
    checks, weights, supported, why = [], [], 0, Counter[str]()
    with QuorumRAG(settings) as rag:
        for row in rows:
            evidence = rag.retrieve(row["question"])
            passages = [p for cluster in evidence.clusters for p in cluster.passages]
            found = next(((p, a) for a in row["answers"] for p in passages if a in p.text), None)
            if found is None:
                continue
            passage, gold = found
            started = time.perf_counter()
            key_terms = key_term_weights(row["question"], rag.coordinator.views.term_stats)
            unseen = unseen_words(row["question"], rag.coordinator.views.term_stats)
            weights.append((time.perf_counter() - started) * 1000)
            answer = Answer(**evidence.model_dump(), answer=f"{gold} [{passage.citation}]")
            answer.key_terms, answer.unseen_terms = key_terms, unseen
            started = time.perf_counter()
            check_answer(answer, passages, None, settings.generation)
            checks.append((time.perf_counter() - started) * 1000)
            supported += answer.mark == "supported"
            why.update({claim.unsupported for claim in answer.claims if claim.unsupported})
    result = {
        "questions": len(rows),
        "checked": len(checks),
        "checks": quantiles(checks),
        "key_words": quantiles(weights),
        "gold_answers_marked_supported": supported,
        "not_supported_because": dict(why.most_common()),
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
