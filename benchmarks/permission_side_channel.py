"""What a restricted document's words can tell a caller who may not read it, by namespace size.

Qdrant counts BM25's inverse document frequency over the whole collection, restricted chunks
included, so a restricted document shifts the BM25 scores of the passages every caller reads. This
measures how much of that reaches a caller of no group, on namespaces of a few to a few hundred
documents: each is ingested twice, with a restricted document (readers ``hr``) and without it, and
each question is asked by a caller of no group of the first and by the operator of the second. Where
the two differ (confidence to four decimals, the passages, the decision to answer), the restricted
document changed what the caller saw.

    python benchmarks/permission_side_channel.py --data ../shared/data/squad-dev \
        --sizes 5,20,80,320 --json-out permission-side-channel.json

Documents are SQuAD paragraphs, one a document; the restricted one is a paragraph of the same
article as the questions, so its words are the questions' words (the worst case for the caller's
scores). The questions are those of the public paragraphs of that article (at most ``--questions``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.embedding import DenseEmbedder
from qrag_qdrant.results import Evidence


def paragraphs(data: Path) -> dict[str, list[str]]:
    """article file -> its paragraphs."""
    return {path.name: path.read_text().split("\n\n") for path in sorted((data / "corpus").glob("*.txt"))}


def view(evidence: Evidence) -> tuple[float, bool, list[list[str]]]:
    """What a caller sees: the confidence to four decimals, whether it abstained, the passages."""
    return (
        round(evidence.confidence or 0.0, 4),
        evidence.abstained,
        [[p.source for p in cluster.passages] for cluster in evidence.clusters],
    )


def measure(data: Path, size: int, questions_at_most: int, embedder: DenseEmbedder) -> dict[str, object]:
    articles = paragraphs(data)
    asked = [json.loads(line) for line in (data / "questions.jsonl").read_text().splitlines()]
    article = next(name for name, texts in articles.items() if len(texts) > 8)
    restricted = (article, len(articles[article]) - 1)  # the article's last paragraph
    public = [(article, n) for n in range(min(size, len(articles[article]) - 1))]
    others = ((name, n) for name, texts in articles.items() if name != article for n in range(len(texts)))
    while len(public) < size:
        public.append(next(others))
    held = set(public)
    questions = [q["question"] for q in asked if (q["doc"], q["paragraph_index"]) in held][:questions_at_most]
    with tempfile.TemporaryDirectory(prefix="qrag-side-channel-") as scratch:
        root = Path(scratch)
        for folder, held in (("public", public), ("restricted", [restricted])):
            for name, n in held:
                (root / folder / f"{name[:-4]}-{n:03d}.txt").parent.mkdir(parents=True, exist_ok=True)
                (root / folder / f"{name[:-4]}-{n:03d}.txt").write_text(articles[name][n])
        results = {}
        for label, with_restricted in (("with", True), ("without", False)):
            settings = load_settings(store=root / f"store-{label}", namespace="side")
            with QuorumRAG(settings, embedder=embedder) as rag:
                rag.ingest(root / "public")
                if with_restricted:
                    rag.ingest(root / "restricted", readers=["hr"])
                results[label] = [view(rag.retrieve(q, readers=[] if with_restricted else None)) for q in questions]
    pairs = list(zip(results["with"], results["without"]))
    return {
        "documents": size,
        "questions": len(questions),
        "confidence_differs": sum(a[0] != b[0] for a, b in pairs),
        "decision_differs": sum(a[1] != b[1] for a, b in pairs),
        "passages_differ": sum(a[2] != b[2] for a, b in pairs),
        "largest_confidence_gap": round(max((abs(a[0] - b[0]) for a, b in pairs), default=0.0), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="squad-dev's folder")
    parser.add_argument("--sizes", default="5,20,80,320", help="documents in the namespace, comma-separated")
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    one_blas_thread()
    embedder = DenseEmbedder(load_settings().embedding)
    rows = [measure(args.data, int(size), args.questions, embedder) for size in args.sizes.split(",")]
    for row in rows:
        print(json.dumps(row))
    if args.json_out:
        command = f"python benchmarks/permission_side_channel.py --data {args.data} --sizes {args.sizes}"
        args.json_out.write_text(json.dumps({"command": command, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
