"""How often the details rule of the supported mark (``checks.specifics.lacking``) finds a
question stating what its sentence does not, over every question of SQuAD and SQuAD 2.0, without
retrieval or a model.

An answerable question is read against the sentence of its paragraph that holds its first gold
answer: each time the rule fires there, a right answer from that sentence would lose the mark. An
unanswerable SQuAD 2.0 question (one detail of a paragraph swapped) is read against the sentence of
its paragraph that shares most of its words, the one a model would answer from: each time the rule
fires there, a wrong answer would be kept from the mark. The answer's own words are set aside, as
the mark sets them aside. The document's name stands for its title,
as the mark reads a title beside the sentence. Run it under two checkouts (``PYTHONPATH``) to see
what a change of the rule does to both.

    python benchmarks/details_rule.py --data ../shared/data --json-out details-rule.json
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
from pathlib import Path

from qrag_qdrant.generation.checks.reading import sentences_of
from qrag_qdrant.generation.checks.specifics import lacking
from qrag_qdrant.text.terms import terms

SETS = ("squad-dev", "squad2-dev")


def paragraphs(path: Path) -> list[str]:
    """A SQuAD article's paragraphs, as its questions' ``paragraph_index`` counts them."""
    return [part for part in re.split(r"\n\s*\n", path.read_text(encoding="utf-8")) if part.strip()]


def sentence_for(question: dict, paragraph: str) -> str | None:
    """The sentence an answer to ``question`` comes from: the one holding its gold answer, or for
    an unanswerable question the one sharing most of its words."""
    sentences = sentences_of(paragraph)
    if question.get("unanswerable"):
        asked = terms(question["question"])
        return max(sentences, key=lambda sentence: len(asked & terms(sentence)), default=None)
    return next((sentence for sentence in sentences if question["answers"][0] in sentence), None)


def details_lacking(question: str, text: str, answer: str) -> list[str]:
    """``lacking`` with the answer set aside; a checkout from before it took the answer reads the
    text whole."""
    parameters = inspect.signature(lacking).parameters
    return lacking(question, text, answer) if "answer" in parameters else lacking(question, text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="the folder holding squad-dev and squad2-dev")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    counts: dict[str, dict[str, int]] = {}
    for name in SETS:
        articles: dict[str, list[str]] = {}
        for line in (args.data / name / "questions.jsonl").read_text(encoding="utf-8").splitlines():
            question = json.loads(line)
            doc = question["doc"]
            if doc not in articles:
                articles[doc] = paragraphs(args.data / name / "corpus" / doc)
            found = articles[doc]
            at = question["paragraph_index"]
            sentence = sentence_for(question, found[at]) if at < len(found) else None
            if sentence is None:
                continue
            kind = f"{name} {'unanswerable' if question.get('unanswerable') else 'answerable'}"
            row = counts.setdefault(kind, {"questions": 0, "rule_fires": 0})
            row["questions"] += 1
            title = Path(doc).stem.replace("-", " ")
            answer = "" if question.get("unanswerable") else question["answers"][0]
            row["rule_fires"] += bool(details_lacking(question["question"], f"{sentence} {title}", answer))
    for kind, row in counts.items():
        share = row["rule_fires"] / row["questions"]
        print(f"{kind}: the rule fires on {row['rule_fires']} of {row['questions']} ({share:.1%})")
    if args.json_out:
        args.json_out.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
