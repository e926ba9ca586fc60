"""`qrag-qdrant eval --generate` with each question's own gold paragraph as the whole context:
the reader's ceiling. Whatever retrieval sends, the packaged model cannot hold the gold answer
more often than it does when handed the very paragraph the question was written on
(docs/benchmarks.md, "The reader's ceiling"). The arguments are eval's own, after the data set:

    python benchmarks/gold_paragraph_reads.py ../shared/data/squad-dev --store $S --articles test \\
        --sample 150 --seed 14 --systems quorum --generate 150 --answers-out gold-s14.jsonl

The same questions as an eval with the same seed, so the rows pair with that eval's; the gate is
bypassed (the paragraph is sent even where retrieval would abstain), and the passage is cited as
[1] from its own file and offsets, through the query path's answer step.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from qrag_qdrant.cli.app import main
from qrag_qdrant.eval import answering
from qrag_qdrant.generation import answer
from qrag_qdrant.results import EvidenceCluster, Passage

answer_with_context = answer.answer_from


def gold_paragraphs(data: Path) -> dict[str, Passage]:
    """Each question's text (white space collapsed, as retrieval trims it) mapped to the paragraph
    it was written on: the data set's README joins paragraphs by one blank line, and
    ``paragraph_index`` counts them. squad-dev and squad2-dev have this layout. A question text
    written twice keeps its last paragraph (on squad-dev, 2 of 10,570 then miss their answer)."""
    split: dict[str, list[str]] = {}
    found: dict[str, Passage] = {}
    for line in (data / "questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        paragraphs = split.setdefault(row["doc"], (data / "corpus" / row["doc"]).read_text().split("\n\n"))
        start = sum(len(p) + 2 for p in paragraphs[: row["paragraph_index"]])
        paragraph = paragraphs[row["paragraph_index"]]
        found[" ".join(row["question"].split())] = Passage(
            citation=1, source=row["doc"], start=start, end=start + len(paragraph), text=paragraph
        )
    return found


def reading_gold(paragraphs: dict[str, Passage]):
    def answer_from(evidence, backend, settings, on_token=None, cancelled=None):
        passage = paragraphs[" ".join(evidence.question.split())]
        given = evidence.model_copy(
            update={
                "abstained": False,
                "abstain_reason": None,
                "context_policy": "gold paragraph",
                "clusters": [
                    EvidenceCluster(
                        rank=1, score=1.0, support=evidence.retrievers, retrievers=["gold"], passages=[passage]
                    )
                ],
            }
        )
        return answer_with_context(given, backend, settings, on_token, cancelled)

    return answer_from


if __name__ == "__main__":
    answer.answer_from = answering.answer_from = reading_gold(gold_paragraphs(Path(sys.argv[1])))
    sys.argv.insert(1, "eval")
    main()
