"""Answers read from each cluster alone, as votes: where the adaptive context sends several
clusters, does the answer from all of them agree with what single clusters give, and is that a
better judge of "supported" than the readings' agreement?

Reads an ``eval --generate --answers-out`` file made with ``generation.samples = 5`` (see
``agreement_report.py``), asks each multi-cluster question again through ``QuorumRAG.retrieve``
and answers every cluster of its evidence alone through ``QuorumRAG.answer`` (greedy), and
reports, on the answerable questions that reached the model, the supported mark's precision and
recall for: the default rule, agreement of readings (k = 5, share >= 0.67), and cluster votes (the
answer is what at least ``--votes`` single clusters also give).

    python benchmarks/cluster_votes.py --data $DATA --store $S --namespace eval-squad-dev test.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval.metrics import holds_answer
from qrag_qdrant.generation.checks.agreement import group_key, same_answer
from qrag_qdrant.generation.prompt import NOT_IN_DOCUMENTS

TODAY = 0.85


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("answers", type=Path)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--votes", type=int, default=1)
    args = parser.parse_args()
    questions = {
        q["id"]: q for q in map(json.loads, (args.data / "squad-dev" / "questions.jsonl").read_text().splitlines())
    }
    rows = [
        r
        for r in map(json.loads, args.answers.read_text().splitlines())
        if r["outcome"] is None and r.get("agreement") and r["category"] == "answerable"
    ]
    settings = load_settings(store=args.store, namespace=args.namespace, generation={"samples": 0})
    counts = {rule: [0, 0, 0] for rule in ("today", "agreement", "cluster votes")}  # supported, right, right+sup
    multi = 0
    with QuorumRAG(settings) as rag:
        for row in rows:
            question = questions[row["id"]]
            gold = question["answers"]
            greedy = row["agreement"]["answers"][0]
            right = holds_answer(greedy, gold)
            evidence = rag.retrieve(question["question"])
            votes = 0
            if len(evidence.clusters) > 1:
                multi += 1
                for cluster in evidence.clusters:
                    alone = rag.answer(evidence.question, evidence=evidence.model_copy(update={"clusters": [cluster]}))
                    votes += same_answer(group_key(alone.answer or ""), group_key(greedy))
            readings = [
                group_key(text) if text != "(declined)" else group_key(NOT_IN_DOCUMENTS)
                for text in row["agreement"]["answers"]
            ]
            shown = group_key(row["short_answer"] or "")
            base = bool(row["supported"]) and same_answer(shown, readings[0])  # the greedy answer's own checks
            share = sum(same_answer(readings[0], key) for key in readings) / len(readings)
            marks = {
                "today": base and (row["agreement"]["probabilities"][0] or 0) >= TODAY,
                "agreement": base and share >= 0.67,
                "cluster votes": base and (len(evidence.clusters) == 1 or votes >= args.votes),
            }
            for rule, supported in marks.items():
                counts[rule][0] += supported
                counts[rule][1] += right
                counts[rule][2] += right and supported
    print(f"{len(rows)} answered, {multi} with several clusters")
    for rule, (supported, right, both) in counts.items():
        precision = both / supported if supported else float("nan")
        print(f"{rule:15} precision {precision:.3f} recall {both / right:.3f} ({both} of {right} right answers)")


if __name__ == "__main__":
    main()
