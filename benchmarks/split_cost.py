"""What a split question costs a user: the seconds to its answer, searched by its parts and searched
whole, question by question, on MultiHop-RAG's questions with the publishers' names taken out.

    python benchmarks/split_cost.py --store /tmp/mheval/store --namespace eval-multihop-rag \
        --data ../shared/data/multihop-rag --sample 40 --json-out split-cost.json

Each question is answered twice through ``QuorumRAG.answer`` (the packaged model), with
``retrieval.parts.mode = "rules"`` and ``"off"``, the order alternated question by question so
that whatever else runs weighs on both alike; every other setting is the default, as a user
gets it, unless ``--equal-words N`` gives both N words of context (``context.mode = "fixed"``, and
``parts.words``). Reported: the p50 of the retrieval's and of the
whole answer's seconds for the questions the rules split, and the ratio of the two systems' p50s.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from question_parts import in_half, without_publishers

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.retrieval.parts import publisher_mentions

SYSTEMS = ("rules", "off")


def answered(rag: QuorumRAG, question: str) -> dict[str, Any]:
    """One answer's seconds: to its evidence, and to its last checked word."""
    started = time.perf_counter()
    evidence = rag.retrieve(question)
    retrieved = time.perf_counter()
    answer = rag.answer(question, evidence=evidence)
    done = time.perf_counter()
    return {
        "parts": len(evidence.parts),
        "abstained": evidence.abstained,
        "context_words": evidence.context_words,
        "retrieve_s": retrieved - started,
        "answer_s": done - started,
        "completion_tokens": answer.usage.completion_tokens if answer.usage else 0,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "p50_retrieve_ms": round(statistics.median(r["retrieve_s"] for r in rows) * 1000, 1),
        "p50_answer_s": round(statistics.median(r["answer_s"] for r in rows), 2),
        "mean_answer_s": round(statistics.fmean(r["answer_s"] for r in rows), 2),
        "abstained": sum(r["abstained"] for r in rows),
        "mean_context_words": round(statistics.fmean(r["context_words"] for r in rows), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", default="eval-multihop-rag")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--half", default="held-out")
    parser.add_argument("--sample", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--equal-words", type=int, help="both systems' context words (fixed context)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    with (args.data / "corpus-metadata.jsonl").open() as lines:
        publishers = frozenset(name for row in map(json.loads, lines) if (name := row.get("source")))
    with (args.data / "questions.jsonl").open() as lines:
        named = [q for q in map(json.loads, lines) if in_half(q["id"], args.half)]
    questions = [without_publishers(q["question"], publishers) for q in named if q["relevant_docs"]]
    questions = [q for q in questions if not publisher_mentions(q, publishers)]
    questions = random.Random(args.seed).sample(questions, min(args.sample, len(questions)))
    retrieval: dict[str, Any] = {}
    if args.equal_words:
        words = args.equal_words
        retrieval = {"context": {"mode": "fixed", "words": words}, "parts": {"words": words}}
    settings = load_settings(store=args.store, namespace=args.namespace, retrieval=retrieval)
    rows: dict[str, list[dict[str, Any]]] = {system: [] for system in SYSTEMS}
    with QuorumRAG(settings) as rag:
        parts = rag.coordinator.settings.retrieval.parts
        rag.answer(questions[0])  # the model loaded and the store's pages read before timing
        for index, question in enumerate(questions):
            for system in SYSTEMS if index % 2 else reversed(SYSTEMS):
                object.__setattr__(parts, "mode", system)  # one coordinator and model for both
                rows[system].append({"question": question, **answered(rag, question)})
            print(index + 1, "of", len(questions), flush=True)
    split = [n for n, row in enumerate(rows["rules"]) if row["parts"]]
    result = {
        "equal_words": args.equal_words,
        "questions": len(questions),
        "split": len(split),
        "systems": {system: summary([rows[system][n] for n in split]) for system in SYSTEMS},
    }
    by_parts, whole = result["systems"]["rules"], result["systems"]["off"]
    result["ratio_retrieve"] = round(by_parts["p50_retrieve_ms"] / whole["p50_retrieve_ms"], 2)
    result["ratio_answer"] = round(by_parts["p50_answer_s"] / whole["p50_answer_s"], 2)
    result["per_question_answer_ratio_p50"] = round(
        statistics.median(rows["rules"][n]["answer_s"] / rows["off"][n]["answer_s"] for n in split), 2
    )
    print(json.dumps(result, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps({**result, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
