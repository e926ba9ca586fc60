"""The gate on namespaces of a few documents: each article of a SQuAD-style data set becomes a
namespace of its first few paragraphs, one file each (tens of chunks), and is asked its own
answerable questions on those paragraphs, its unanswerable ones there (SQuAD 2.0's, written to look
answerable by swapping a detail), and questions of another article (out of corpus). The rows name
each question by its id, not its text.

    python benchmarks/small_namespaces.py --data $DATA/squad2-dev --json-out small-namespaces.json
    PYTHONPATH=$OTHER_CHECKOUT python benchmarks/small_namespaces.py --data $DATA/squad2-dev --store $S

Every question goes through ``QuorumRAG.retrieve``, the evidence path the CLI and the service take,
at the shipped gate and threshold. Counted per kind: questions abstained (any reason), and of those
``low_confidence`` (the gate's doubt) apart from ``no_quorum``. ``--store``: keep the namespaces
there, so a second run (another version's) asks the same index.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
from collections import defaultdict
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings


def namespace_name(article: str) -> str:
    return "small-" + re.sub(r"[^a-z0-9]+", "-", article.lower().removesuffix(".txt")).strip("-")[:40]


def asked(data: Path, paragraphs: int, per_kind: int, seed: int) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """Per article: its answerable and unanswerable questions on its first ``paragraphs``, and
    questions of other articles, ``per_kind`` of each at most, drawn with ``seed``."""
    rows = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines() if line.strip()]
    draw = random.Random(seed)
    by_article: dict[str, dict[str, list[tuple[str, str]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if row["paragraph_index"] < paragraphs:
            kind = "unanswerable" if row.get("unanswerable") else "answerable"
            by_article[row["doc"]][kind].append((row["id"], row["question"]))
    questions = {}
    for article in sorted(by_article):
        others = [(row["id"], row["question"]) for row in rows if row["doc"] != article and not row.get("unanswerable")]
        kinds = by_article[article]
        questions[article] = {
            kind: draw.sample(found, min(per_kind, len(found)))
            for kind, found in (
                ("answerable", kinds["answerable"]),
                ("unanswerable", kinds["unanswerable"]),
                ("out_of_corpus", others),
            )
        }
    return questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--store", type=Path, help="keep the namespaces here (default: a scratch folder)")
    parser.add_argument("--paragraphs", type=int, default=4, help="paragraphs per namespace, one file each")
    parser.add_argument("--per-kind", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    questions = asked(args.data, args.paragraphs, args.per_kind, args.seed)
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    rows = []
    with tempfile.TemporaryDirectory(prefix="qrag-small-") as scratch:
        store = args.store or Path(scratch) / "store"
        for article, kinds in questions.items():
            folder = Path(scratch) / article
            folder.mkdir()
            paragraphs = [p for p in (args.data / "corpus" / article).read_text().split("\n\n") if p.strip()]
            for n, paragraph in enumerate(paragraphs[: args.paragraphs]):
                (folder / f"paragraph-{n}.txt").write_text(paragraph.strip() + "\n")
            with QuorumRAG(load_settings(store=store, namespace=namespace_name(article))) as rag:
                rag.ingest(folder)
                chunks = sum(info.points for info in rag.collections())
                for kind, texts in kinds.items():
                    for question_id, text in texts:
                        evidence = rag.retrieve(text)
                        counts[kind]["questions"] += 1
                        counts[kind]["abstained"] += evidence.abstained
                        counts[kind][evidence.abstain_reason or "answered"] += 1
                        rows.append(
                            {
                                "article": article,
                                "chunks": chunks,
                                "kind": kind,
                                "id": question_id,
                                "abstained": evidence.abstained,
                                "reason": evidence.abstain_reason,
                                "confidence": evidence.confidence,
                            }
                        )
            print(article, chunks, "chunks:", {k: dict(v) for k, v in counts.items()}, flush=True)
    summary = {
        kind: dict(found) | {"abstained_share": round(found["abstained"] / found["questions"], 3)}
        for kind, found in counts.items()
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
