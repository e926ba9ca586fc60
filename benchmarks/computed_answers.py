"""Answers computed from the documents (a time order from their dates, two values compared from the
amounts the passages state) against the model's answers, question by question: questions of our
own over dated handbooks, release notes and minutes, and MultiHop-RAG's questions of those forms.

    python benchmarks/computed_answers.py --mh-store /tmp/mheval/store --data ../shared/data/multihop-rag \
        --json-out computed-answers.json

Each question is answered through ``QuorumRAG.answer`` twice: with ``generation.time_order_from_dates``
and ``generation.compare_values`` on, and with both off (the packaged model answers), and scored by
its short answer against the gold yes or no; beside it, how often it was marked supported, how often
a right and a wrong answer were, and the seconds to the answer. Our own questions are over the
documents of ``multidoc_questions.py``, asked both ways round, so that a constant "Yes" scores
about half; the time orders again over the same documents ingested without their metadata, dated
only by what their titles, file names and sentences state (computed, then the model where they
do not tell it). MultiHop-RAG's are every question ``form_parts.time_order`` reads as asking only an
order (11 of 1,022) or ``form_parts.value_comparison`` as comparing two values (6), the exclusions
written after reading them (both halves), answered on a store of its corpus as ``qrag-qdrant eval``
builds it.
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
from qrag_qdrant.retrieval.form_parts import time_order, value_comparison

#: time orders: (question, the gold answer) over ``multidoc_questions.DOCUMENTS``
OWN_ORDERS = [
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
#: comparisons: (question, the gold answer) over ``multidoc_questions.DOCUMENTS``; the last compares names
OWN_COMPARISONS = [
    ("Did the 2023 handbook and the 2024 one give the same notice period?", "no"),
    ("Did the 2023 handbook and the 2024 one give different notice periods?", "yes"),
    ("Does the 2024 handbook allow more remote days a week than the 2023 handbook?", "yes"),
    ("Does the 2023 handbook allow more remote days a week than the 2024 handbook?", "no"),
    ("Does the 2023 handbook give less paid parental leave than the 2024 handbook?", "yes"),
    ("Does the 2024 handbook give less paid parental leave than the 2023 handbook?", "no"),
    ("Did the 2023 handbook and the 2024 one give the same laptop replacement period?", "no"),
    ("Did release 2.1 and release 2.2 set the same upload limit per file?", "no"),
    ("Did release 2.2 and release 3.0 set the same upload limit per file?", "yes"),
    ("Did the Platform Team keep audit logs as long in release 3.0 as in release 2.2?", "yes"),
    ("Did the Platform Team keep audit logs as long in release 2.2 as in release 3.0?", "no"),
    ("Did the February minutes and the May minutes approve the same migration budget?", "no"),
    ("Do the May minutes set a higher migration budget than the February minutes?", "yes"),
    ("Do the February minutes and the May minutes agree on the migration budget?", "no"),
    ("Do the 2023 handbook and the 2024 one differ on the paid parental leave?", "yes"),
    ("Did the February minutes and the September minutes name the same chair?", "no"),
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
        "comparison": answer.comparison,
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


def answered(store: Path, namespace: str, questions: list[tuple[str, str]], model: bool = True) -> dict[str, Any]:
    """Each question answered computed, then (``model``) by the model alone."""
    result: dict[str, Any] = {}
    for computed in (True, False) if model else (True,):
        switches = {"time_order_from_dates": computed, "compare_values": computed}
        settings = load_settings(store=store, namespace=namespace, generation=switches)
        with QuorumRAG(settings) as rag:
            rows = [scored(rag, question, gold) for question, gold in questions]
        result["computed" if computed else "model"] = {"all": summary(rows), "rows": rows}
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
        result["own time orders"] = answered(store, "default", OWN_ORDERS)
        result["own comparisons"] = answered(store, "default", OWN_COMPARISONS)
    with tempfile.TemporaryDirectory() as folder:  # no sidecar: the dates the documents state
        store = Path(folder) / "store"
        ingest(Path(folder), store, metadata=False)
        result["own time orders, no metadata"] = answered(store, "default", OWN_ORDERS, model=False)
    if args.mh_store and args.data:
        with (args.data / "questions.jsonl").open() as lines:
            said = {"true": "yes", "false": "no"}
            golds = [(q["id"], q["question"], q["answers"][0].lower()) for q in map(json.loads, lines) if q["answers"]]
        for kind, form in (("time orders", time_order), ("comparisons", value_comparison)):
            asked = [(question, said.get(gold, gold)) for _, question, gold in golds if form(question)]
            runs = answered(args.mh_store, args.namespace, asked)
            ids = [name for name, question, _ in golds if form(question)]
            for run in runs.values():  # the data set's text stays out of the results: its ids instead
                run["rows"] = [
                    {"id": name, **{k: v for k, v in row.items() if k not in ("question", "answer")}}
                    for name, row in zip(ids, run["rows"], strict=True)
                ]
            result[f"multihop-rag {kind}"] = runs
    for name, runs in result.items():
        for run, measured in runs.items():
            print(name, run, json.dumps(measured["all"]))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
