"""Run today's answer checks again on answers an earlier ``eval --generate`` wrote: each answered
quorum row's passages are retrieved again and ``generation.verify.check_answer`` (the query path's
own check) fills ``relevance`` and ``supported`` anew, with the row's ``answer_probability`` (rows
written before it was recorded are not held to ``generation.min_answer_probability``). The model
is not called, so a new check is measured on answers already paid for.

    python benchmarks/recheck_answers.py ../shared/data/squad-dev --store $S --namespace eval-squad-dev \\
        --out rechecked.jsonl answers-a.jsonl answers-b.jsonl
    python benchmarks/answers_report.py rechecked.jsonl     # supported_at_relevance: each threshold

Retrieval must give the passages the answers were written from: the script counts the answers
whose grounding differs from the row's (0 means the same passages came back).

``--uncited-to-all`` measures a candidate check: an answer that cites no passage at all is held to
every passage shown (today: to none, so it is never grounded).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval import load_dataset
from qrag_qdrant.eval.answering import score_answer
from qrag_qdrant.generation import verify
from qrag_qdrant.generation.checks.claims import check_answer
from qrag_qdrant.results import Answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("answers", type=Path, nargs="+")
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--uncited-to-all", action="store_true")
    args = parser.parse_args()
    if args.uncited_to_all:
        grounding = verify.grounding
        verify.grounding = lambda claim, passages, cited: grounding(
            claim, passages, cited or [p.citation for p in passages]
        )
    questions = {q.id: q for q in load_dataset(args.data).questions}
    settings = load_settings(store=args.store, namespace=args.namespace)
    changed = rechecked = 0
    with QuorumRAG(settings) as rag, args.out.open("w") as out:
        for path in args.answers:
            for line in path.read_text().splitlines():
                row = json.loads(line)
                if row["system"] == "quorum" and row["outcome"] is None:
                    question = questions[row["id"]]
                    evidence = rag.retrieve(question.question)
                    answer = Answer.from_evidence(
                        evidence, answer=row["answer"], answer_probability=row.get("answer_probability")
                    )
                    check_answer(answer, evidence.passages, None, settings.generation)
                    scored = score_answer(question, row["system"], answer, row["seconds"])
                    # rows written before the relevance check: supported meant grounded
                    was = row["relevance"] is not None if "relevance" in row else bool(row["supported"])
                    changed += (scored.relevance is not None) != was  # a relevance: every claim grounded
                    row["relevance"], row["supported"] = scored.relevance, scored.supported
                    rechecked += 1
                out.write(json.dumps(row) + "\n")
    print(f"{rechecked} answers checked again; grounding differs from the row's for {changed}")


if __name__ == "__main__":
    main()
