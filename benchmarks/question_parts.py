"""Questions of several parts against the whole question, paired, on MultiHop-RAG split by id.

    python benchmarks/question_parts.py --store /tmp/mheval/store --namespace eval-multihop-rag \
        --data ../shared/data/multihop-rag --half held-out --json-out question-parts.json

The rules of ``retrieval/parts.py`` were written on the questions whose id's sha256 is even
(``--half tuning``); the other half (``held-out``) was not read while writing them. Each question
is retrieved through ``QuorumRAG.retrieve`` twice, at the same context words (``context = fixed``,
500 words): ``retrieval.parts.mode = "rules"`` (or ``--parts model``) and ``"off"``.

``--without-publishers`` takes the publishers' names out of the questions that name them ("the
TechCrunch article" becomes "an article", "reported by The Verge" "reported by another outlet"),
for questions that name no source: what the model's split (``--parts model``) is for.
``--sample N`` draws N of the half's questions (``--seed``). Per kind: coverage (the share of a
question's gold articles in the context), all evidence (every gold article in it), abstention on
answerable and on null questions; then the two paired (Wilcoxon on coverage, exact McNemar on all
evidence and on null abstention), and the p50 of each ``retrieve``'s wall time. The ``off`` run
goes second: its questions find the store's pages already read.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.eval.metrics import paired_test
from qrag_qdrant.retrieval.parts import WRITTEN, publisher_mentions

HALVES = {"tuning": 0, "held-out": 1}


def in_half(question_id: str, half: str) -> bool:
    return half == "all" or int(hashlib.sha256(question_id.encode()).hexdigest(), 16) % 2 == HALVES[half]


def without_publishers(question: str, publishers: frozenset[str]) -> str:
    """``question`` with each publisher it names replaced: "the X article" by "an article" (then
    "another article"), any other mention by "one outlet" (then "another outlet")."""
    mentions = publisher_mentions(question, publishers)
    for later, mention in enumerate(reversed(mentions)):
        first = later == len(mentions) - 1
        before, after = question[: mention.start], question[mention.end :]
        determiner = re.search(r"\b(?i:the|a|an)\s+['\"‘]?$", before)
        written = re.match(rf"['\"’]?\s+((?i:{WRITTEN}))\b", after)
        if determiner and written:
            question = before[: determiner.start()] + ("an" if first else "another") + " " + after[written.start(1) :]
            continue
        quoted = re.search(r"\b(?i:the)\s+['\"‘]?$", before) or re.search(r"['\"‘]$", before)
        before = before[: quoted.start()] if quoted else before
        question = before + ("one outlet" if first else "another outlet") + re.sub(r"^['\"’](?!s)", "", after)
    return re.sub(r"\ban (piece|story|review|column|post|coverage|report)\b", r"a \1", question)


def scored(rag: QuorumRAG, question: dict[str, Any]) -> dict[str, Any]:
    """One question's row: its context's gold articles, whether it abstained, what it cost."""
    started = time.perf_counter()
    evidence = rag.retrieve(question["question"])
    seconds = time.perf_counter() - started
    shown = {Path(passage.source).name for passage in evidence.passages}
    gold = set(question["relevant_docs"])
    return {
        "id": question["id"],
        "kind": question["kind"],
        "abstained": evidence.abstained,
        "coverage": len(gold & shown) / len(gold) if gold else None,
        "all": float(gold <= shown) if gold else None,
        "words": evidence.context_words,
        "parts": len(evidence.parts),
        "ms": seconds * 1000,
        "split_ms": evidence.timings_ms.get("question_split", 0.0),
        "second_round": sum(getattr(part, "round", 1) > 1 for part in evidence.parts),  # 0.3.x has no rounds
    }


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answerable = [row for row in rows if row["coverage"] is not None]
    null = [row for row in rows if row["coverage"] is None]
    return {
        "questions": len(rows),
        "coverage": round(statistics.fmean(r["coverage"] for r in answerable), 3) if answerable else None,
        "all_evidence": round(statistics.fmean(r["all"] for r in answerable), 3) if answerable else None,
        "abstain_answerable": round(statistics.fmean(r["abstained"] for r in answerable), 3) if answerable else None,
        "abstain_null": round(statistics.fmean(r["abstained"] for r in null), 3) if null else None,
        "words": round(statistics.fmean(r["words"] for r in rows), 1),
        "split": round(statistics.fmean(r["parts"] > 0 for r in rows), 3),
        "p50_ms": round(statistics.median(r["ms"] for r in rows), 1),
        "model_asked": round(statistics.fmean(r["split_ms"] > 0 for r in rows), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", default="eval-multihop-rag")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--half", choices=[*HALVES, "all"], default="held-out")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--parts", choices=["rules", "model"], default="rules", help="against off")
    parser.add_argument("--only", action="store_true", help="run --parts alone, not off beside it")
    parser.add_argument("--rows-out", type=Path, help="write each question's row, per system, as JSON")
    parser.add_argument(
        "--against",
        type=Path,
        help="pair --parts with the rows of the same name in this --rows-out file (another version's run)",
    )
    parser.add_argument("--without-publishers", action="store_true", help="questions naming a publisher, without it")
    parser.add_argument("--sample", type=int, help="this many of the half's questions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--split-out",
        type=Path,
        help="only write the half as a data set folder named like --data (its corpus and metadata linked) for "
        "`qrag-qdrant eval`, and stop",
    )
    parser.add_argument(
        "--compare",
        nargs=2,
        type=Path,
        metavar=("ROWS", "CONTROL"),
        help="run nothing: pair two --rows-out files' --parts rows (e.g. two versions' runs) by question id",
    )
    args = parser.parse_args()
    if args.compare:
        mine, theirs = (json.loads(path.read_text())[args.parts] for path in args.compare)
        by_id = {row["id"]: row for row in theirs}
        control = [by_id[row["id"]] for row in mine]
        compared = {"rows": summary(mine), "control": summary(control), **paired(mine, control)}
        print(json.dumps(compared, indent=1))
        if args.json_out:
            args.json_out.write_text(json.dumps(compared, indent=1) + "\n")
        return
    with (args.data / "questions.jsonl").open() as lines:
        questions = [q for q in map(json.loads, lines) if in_half(q["id"], args.half)]
    if args.without_publishers:
        with (args.data / "corpus-metadata.jsonl").open() as lines:
            publishers = frozenset(name for row in map(json.loads, lines) if (name := row.get("source")))
        named = [q for q in questions if publisher_mentions(q["question"], publishers)]
        questions = [{**q, "question": without_publishers(q["question"], publishers)} for q in named]
    if args.sample:
        questions = random.Random(args.seed).sample(questions, min(args.sample, len(questions)))
    if args.split_out:
        folder = args.split_out / args.data.resolve().name  # the same name: eval's namespace, already ingested
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("corpus", "corpus-metadata.jsonl"):
            (folder / name).unlink(missing_ok=True)
            (folder / name).symlink_to((args.data / name).resolve())
        (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
        print(f"{len(questions)} questions in {folder}")
        return
    rows: dict[str, list[dict[str, Any]]] = {}
    for plan in (args.parts,) if args.only else (args.parts, "off"):
        retrieval = {"context": {"mode": "fixed"}, "parts": {"mode": plan}}
        settings = load_settings(store=args.store, namespace=args.namespace, retrieval=retrieval)
        with QuorumRAG(settings) as rag:
            rows[plan] = [scored(rag, question) for question in questions]
    kinds = sorted({q["kind"] for q in questions})
    result: dict[str, Any] = {
        "half": args.half,
        "without_publishers": args.without_publishers,
        "questions": len(questions),
        "systems": {},
    }
    for plan, plan_rows in rows.items():
        result["systems"][plan] = {
            "all": summary(plan_rows),
            **{kind: summary([r for r in plan_rows if r["kind"] == kind]) for kind in kinds},
        }
    if args.rows_out:
        args.rows_out.write_text(json.dumps(rows) + "\n")
    if args.against:
        earlier = {row["id"]: row for row in json.loads(args.against.read_text())[args.parts]}
        rows["earlier"] = [earlier[row["id"]] for row in rows[args.parts]]
        result["systems"]["earlier"] = {
            "all": summary(rows["earlier"]),
            **{kind: summary([r for r in rows["earlier"] if r["kind"] == kind]) for kind in kinds},
        }
    control = "earlier" if args.against else "off"
    if control in rows:
        result.update(paired(rows[args.parts], rows[control]), paired_with=control)
    print(json.dumps(result, indent=1))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


def paired(rows: Sequence[dict[str, Any]], control: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``rows`` against ``control``, question by question."""
    pairs = list(zip(rows, control, strict=True))
    answerable = [(a, b) for a, b in pairs if a["coverage"] is not None]
    null = [(a, b) for a, b in pairs if a["coverage"] is None]
    return {
        "paired": {
            "coverage": paired_test([(a["coverage"], b["coverage"]) for a, b in answerable]),
            "all_evidence": paired_test([(a["all"], b["all"]) for a, b in answerable], exact_mcnemar=True),
            "abstain_null": paired_test([(a["abstained"], b["abstained"]) for a, b in null], exact_mcnemar=True),
        }
    }


if __name__ == "__main__":
    main()
