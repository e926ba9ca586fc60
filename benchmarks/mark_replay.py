"""The answer's checks of two versions on the same answers: record once what the model wrote on the
evidence users get, then check the recorded answers again under the code at hand, so two versions
of the mark are compared on identical answers (the model's time is spent once).

    python benchmarks/mark_replay.py record --data $DATA/squad2-dev --store $S2 --articles test \
        --sample 120 --seed 45 --answers 80 --out sq2-recorded.jsonl
    python benchmarks/mark_replay.py check sq2-recorded.jsonl --json-out now.json
    PYTHONPATH=/path/to/another/checkout python benchmarks/mark_replay.py check sq2-recorded.jsonl --json-out then.json

``check --store $S2 --namespace ...`` weighs each question's key and unseen terms again under the
code at hand (a change to how the question's words are weighed); without it, the recorded ones.

With ``record --hold-out 0.5 --split-seed 1 --out-of-corpus-only`` over a store that ``qrag-qdrant
eval --hold-out 0.5 --split-seed 1`` built, the answers are to questions whose article is not in
the namespace; ``check`` counts those shown as supported.

``record`` answers each drawn question through ``QuorumRAG.answer`` (the packaged model by
default) and keeps the answer before its checks: the evidence, the text, the model's answer
probability, and the question's key and unseen terms. ``check`` runs ``check_answer`` on each and
counts, for answerable questions, the answers marked supported that hold a gold answer
(precision) and the gold-holding answers marked supported (recall), and for unanswerable ones the
answers marked supported. An answer holds a gold answer as ``qrag-qdrant eval`` scores it
(``eval.metrics.holds_answer``: whole words after SQuAD's normalisation, articles and
punctuation aside).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval.dataset import load_dataset
from qrag_qdrant.eval.metrics import holds_answer
from qrag_qdrant.generation.checks.answer_check import check_answer
from qrag_qdrant.generation.checks.reading import CITATION
from qrag_qdrant.results import Answer
from qrag_qdrant.text.term_stats import key_term_weights, unseen_words

#: what ``check_answer`` fills, emptied before a recorded answer is checked again
CHECKED = {"claims": [], "short_answer": None, "abstained": False, "abstain_reason": None}


def record(args: argparse.Namespace) -> None:
    dataset = load_dataset(
        args.data,
        sample=args.sample,
        seed=args.seed,
        articles=args.articles,
        hold_out=args.hold_out,
        split_seed=args.split_seed,
    )
    settings = load_settings(store=args.store, namespace=args.namespace)
    answered = 0
    with QuorumRAG(settings) as rag, args.out.open("w") as out:
        for question in dataset.questions:
            if answered >= args.answers:
                break
            if args.out_of_corpus_only and not question.out_of_corpus:
                continue
            evidence = rag.retrieve(question.question)
            if evidence.abstained:
                continue
            written: list[str] = []
            answer = rag.answer(question.question, evidence=evidence, on_token=written.append)
            answered += 1
            row = {
                "id": question.id,
                "unanswerable": question.unanswerable,
                "out_of_corpus": question.out_of_corpus,
                "gold": list(question.answers),
                # the answer as the model wrote it (its tokens), before the checks read or changed it
                "answer": answer.model_dump(mode="json", exclude=set(CHECKED) | {"mark", "mark_reason", "warnings"})
                | {"answer": "".join(written) or None},
                "key_terms": evidence.key_terms,
                "unseen_terms": evidence.unseen_terms,
            }
            out.write(json.dumps(row) + "\n")
            print(answered, question.question, "->", answer.answer, answer.mark, flush=True)


def holds_gold(text: str | None, gold: list[str]) -> bool:
    """A gold answer in the answer's words, scored as ``qrag-qdrant eval`` scores it."""
    return text is not None and holds_answer(CITATION.sub("", text), gold)


def weighed_again(rows: list[dict], store: Path, namespace: str) -> None:
    """Each row's key and unseen terms as the code at hand weighs them, from the namespace's term counts."""
    with QuorumRAG(load_settings(store=store, namespace=namespace)) as rag:
        stats = rag.coordinator.views.term_stats
        for row in rows:
            question = row["answer"]["searched_for"]
            row["key_terms"], row["unseen_terms"] = key_term_weights(question, stats), unseen_words(question, stats)


def check(args: argparse.Namespace) -> None:
    options = load_settings().generation
    rows = [json.loads(line) for line in args.recorded.read_text().splitlines() if line.strip()]
    if args.store is not None:
        weighed_again(rows, args.store, args.namespace)
    counts = {"answerable": 0, "holds_gold": 0, "supported": 0, "supported_holding_gold": 0}
    counts |= {"unanswerable": 0, "unanswerable_supported": 0, "out_of_corpus": 0, "out_of_corpus_supported": 0}
    marks: dict[str, str | None] = {}
    for row in rows:
        fields = {name: value for name, value in row["answer"].items() if name in Answer.model_fields}
        answer = Answer.model_validate(fields | CHECKED)
        answer.key_terms, answer.unseen_terms = row["key_terms"], row["unseen_terms"]
        if answer.error or not answer.answer:
            continue
        check_answer(answer, answer.passages, None, options)
        marks[row["id"]] = answer.mark
        supported = answer.mark == "supported"
        if row.get("out_of_corpus"):
            counts["out_of_corpus"] += 1
            counts["out_of_corpus_supported"] += supported
            continue
        if row["unanswerable"]:
            counts["unanswerable"] += 1
            counts["unanswerable_supported"] += supported
            continue
        gold = holds_gold(answer.answer, row["gold"])
        counts["answerable"] += 1
        counts["holds_gold"] += gold
        counts["supported"] += supported
        counts["supported_holding_gold"] += supported and gold
    result = counts | {
        "precision": round(counts["supported_holding_gold"] / counts["supported"], 3) if counts["supported"] else None,
        "recall": round(counts["supported_holding_gold"] / counts["holds_gold"], 3) if counts["holds_gold"] else None,
    }
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result | {"marks": marks}, indent=2) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    recording = verbs.add_parser("record")
    recording.add_argument("--data", type=Path, required=True)
    recording.add_argument("--store", type=Path, required=True)
    recording.add_argument("--namespace", default="default")
    recording.add_argument("--articles", choices=("tune", "test"))
    recording.add_argument("--sample", type=int, default=120)
    recording.add_argument("--seed", type=int, default=45)
    recording.add_argument("--answers", type=int, default=80, help="questions that reach the model, at most")
    recording.add_argument("--out", type=Path, required=True)
    recording.add_argument("--hold-out", type=float, default=0.0, help="as qrag-qdrant eval's: a share of the corpus")
    recording.add_argument("--split-seed", type=int, default=0)
    recording.add_argument("--out-of-corpus-only", action="store_true", help="only questions --hold-out left out")
    checking = verbs.add_parser("check")
    checking.add_argument("recorded", type=Path)
    checking.add_argument("--json-out", type=Path)
    checking.add_argument(
        "--store", type=Path, help="weigh the questions' key and unseen terms again, under the code at hand, from here"
    )
    checking.add_argument("--namespace", default="default")
    args = parser.parse_args()
    record(args) if args.verb == "record" else check(args)


if __name__ == "__main__":
    main()
