"""Turns the official public data files into the layout ``qrag-qdrant eval`` reads.

    python benchmarks/prepare_data.py squad dev-v1.1.json  $QRAG_DATA/squad-dev    # or dev-v2.0.json
    python benchmarks/prepare_data.py beir  scifact/       $QRAG_DATA/scifact      # BEIR's unzipped folder

Sources:
- SQuAD v1.1 and v2.0 dev (Rajpurkar et al.): ``dev-v1.1.json`` and ``dev-v2.0.json`` from the SQuAD
  explorer site (rajpurkar.github.io/SQuAD-explorer), CC BY-SA 4.0.
- SciFact in BEIR's form (Wadden et al.; Thakur et al.): BEIR's ``scifact.zip``, unzipped:
  ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``, CC BY-NC 2.0.

The layout (what ``qrag_qdrant/eval/dataset.py`` reads):
- ``corpus/<name>.txt``: one document per file. SQuAD: one article, its paragraphs joined by one
  blank line, named by a slug of its title; BEIR: the title, a blank line, then the text.
- ``questions.jsonl`` (QA): ``{"id", "question", "answers", "doc", "paragraph_index"}``, plus
  ``"unanswerable"`` for SQuAD 2.0, whose impossible questions have no answers.
- ``queries.jsonl`` (relevance): ``{"id", "question", "relevant_docs"}``, the test split's qrels.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import unicodedata
from pathlib import Path
from typing import Any


def slug(title: str) -> str:
    """An article's file name: ASCII, lower case, words joined by hyphens."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-") or "article"


def prepare_squad(source: Path, target: Path) -> dict[str, int]:
    """SQuAD v1.1 or v2.0 JSON -> corpus/ and questions.jsonl."""
    data = json.loads(source.read_text(encoding="utf-8"))["data"]
    (target / "corpus").mkdir(parents=True, exist_ok=True)
    questions: list[dict[str, Any]] = []
    names: set[str] = set()
    for article in data:
        name = slug(article["title"])
        while f"{name}.txt" in names:  # two titles with the same slug keep apart
            name += "-2"
        names.add(f"{name}.txt")
        paragraphs = [paragraph["context"] for paragraph in article["paragraphs"]]
        if any("\n\n" in paragraph for paragraph in paragraphs):
            raise ValueError(f"{article['title']}: a paragraph holds a blank line, which separates paragraphs")
        (target / "corpus" / f"{name}.txt").write_text("\n\n".join(paragraphs), encoding="utf-8")
        for index, paragraph in enumerate(article["paragraphs"]):
            for qa in paragraph["qas"]:
                row: dict[str, Any] = {
                    "id": qa["id"],
                    "question": qa["question"],
                    "answers": list(dict.fromkeys(answer["text"] for answer in qa["answers"])),
                    "doc": f"{name}.txt",
                    "paragraph_index": index,
                }
                if "is_impossible" in qa:
                    row["unanswerable"] = bool(qa["is_impossible"])
                questions.append(row)
    _write_jsonl(target / "questions.jsonl", questions)
    return {"documents": len(names), "questions": len(questions)}


def prepare_beir(source: Path, target: Path, split: str = "test") -> dict[str, int]:
    """A BEIR data set folder -> corpus/ and queries.jsonl (the ``split`` qrels' queries only)."""
    (target / "corpus").mkdir(parents=True, exist_ok=True)
    documents = 0
    with (source / "corpus.jsonl").open(encoding="utf-8") as corpus:
        for line in corpus:
            document = json.loads(line)
            text = f"{document.get('title', '').strip()}\n\n{document['text'].strip()}".strip()
            (target / "corpus" / f"{document['_id']}.txt").write_text(text, encoding="utf-8")
            documents += 1
    relevant: dict[str, list[str]] = {}
    with (source / "qrels" / f"{split}.tsv").open(encoding="utf-8") as qrels:
        for row in csv.DictReader(qrels, delimiter="\t"):
            if int(row["score"]) > 0:
                relevant.setdefault(row["query-id"], []).append(f"{row['corpus-id']}.txt")
    queries = []
    with (source / "queries.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            query = json.loads(line)
            if query["_id"] in relevant:
                queries.append({"id": query["_id"], "question": query["text"], "relevant_docs": relevant[query["_id"]]})
    _write_jsonl(target / "queries.jsonl", queries)
    return {"documents": documents, "queries": len(queries)}


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("squad", "beir"), help="squad: a SQuAD dev JSON; beir: a BEIR folder")
    parser.add_argument("source", type=Path, help="the official file (squad) or unzipped folder (beir)")
    parser.add_argument("target", type=Path, help="the data set folder to write")
    parser.add_argument("--split", default="test", help="beir: the qrels split whose queries are kept")
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"error: {args.source} does not exist", file=sys.stderr)
        return 1
    try:
        counts = (
            prepare_squad(args.source, args.target)
            if args.kind == "squad"
            else prepare_beir(args.source, args.target, args.split)
        )
    except (OSError, KeyError, ValueError, json.JSONDecodeError) as exc:
        print(f"error: {args.source} is not a {args.kind} data set: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.target}: " + ", ".join(f"{count} {what}" for what, count in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
