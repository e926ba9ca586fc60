"""Time-order questions answered from the documents' dates against the model's answers, question by
question: questions of our own over dated release notes and minutes, and MultiHop-RAG's questions
that ask only the order of two reports.

    python benchmarks/time_order_answers.py --mh-store /tmp/mheval/store --data ../shared/data/multihop-rag \
        --json-out time-order-answers.json

Each question is answered through ``QuorumRAG.answer`` twice, with
``generation.time_order_from_dates`` on and off (the packaged model), and scored by its short
answer against the gold yes or no; beside it, how often it was marked supported, how often a
right and a wrong answer were, and the seconds to the answer. Our own questions are the documents
of ``multidoc_questions.py``, each asked both ways round, so that a constant "Yes" scores half.
MultiHop-RAG's are every question ``form_parts.time_order`` reads as asking only an order (11 of
1,022, the exclusions written after reading them; both halves), answered on a store of its
corpus as ``qrag-qdrant eval`` builds it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from multidoc_questions import ingest

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.retrieval.form_parts import time_order

#: (question, the gold answer) over ``multidoc_questions.DOCUMENTS``
OWN = [
    ("Was the v1 API deprecated before it was removed?", "yes"),
    ("Was the v1 API removed before it was deprecated?", "no"),
    ("Was SAML single sign-on released before dark mode in the web app?", "yes"),
    ("Did dark mode arrive in the web app before single sign-on through SAML?", "no"),
    ("Was the office move postponed before the Harbour building was chosen?", "yes"),
    ("Was the Harbour building chosen for the office move before the move was postponed to autumn?", "no"),
    ("Did Priya Nair join as security lead before the data centre migration finished?", "yes"),
    ("Did the data centre migration finish before Priya Nair joined as security lead?", "no"),
    ("Was the upload limit raised to 200 MB before it was raised to 500 MB per file?", "yes"),
    ("Was the upload limit raised to 500 MB per file before it was raised to 200 MB?", "no"),
    ("Was the migration budget raised to 55,000 euros after Omar Haddad was chosen to lead the migration?", "yes"),
    ("Did Lena Park take over as chair before the migration budget was raised to 55,000 euros?", "no"),
]


def scored(rag: QuorumRAG, question: str, gold: str) -> dict[str, Any]:
    started = time.perf_counter()
    answer = rag.answer(question)
    said = (answer.short_answer or "").strip().lower()
    return {
        "question": question,
        "gold": gold,
        "answer": answer.answer,
        "right": said.startswith(gold),
        "supported": answer.mark == "supported",
        "computed": answer.computed is not None,
        "time_order": answer.time_order,
        "seconds": time.perf_counter() - started,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "questions": len(rows),
        "accuracy": round(statistics.fmean(r["right"] for r in rows), 3),
        "constant_yes": round(statistics.fmean(r["gold"] == "yes" for r in rows), 3),
        "computed": sum(r["computed"] for r in rows),
        "right_supported": sum(r["right"] and r["supported"] for r in rows),
        "wrong_supported": sum(not r["right"] and r["supported"] for r in rows),
        "p50_seconds": round(statistics.median(r["seconds"] for r in rows), 2),
    }


def answered(store: Path, namespace: str, questions: list[tuple[str, str]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for dates in (True, False):
        settings = load_settings(store=store, namespace=namespace, generation={"time_order_from_dates": dates})
        with QuorumRAG(settings) as rag:
            rows = [scored(rag, question, gold) for question, gold in questions]
        result["dates" if dates else "model"] = {"all": summary(rows), "rows": rows}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mh-store", type=Path, help="a store of MultiHop-RAG's corpus (eval's)")
    parser.add_argument("--namespace", default="eval-multihop-rag")
    parser.add_argument("--data", type=Path, help="MultiHop-RAG's folder")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        ingest(Path(folder), store)
        result["own"] = answered(store, "default", OWN)
    if args.mh_store and args.data:
        with (args.data / "questions.jsonl").open() as lines:
            asked = [
                (q["question"], q["answers"][0].lower()) for q in map(json.loads, lines) if time_order(q["question"])
            ]
        result["multihop-rag"] = answered(args.mh_store, args.namespace, asked)
    for name, runs in result.items():
        for run, measured in runs.items():
            print(name, run, json.dumps(measured["all"]))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
