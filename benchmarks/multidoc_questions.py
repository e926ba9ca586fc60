"""Questions across documents of our own, asked with and without naming their sources: a handbook's
two versions, a product's release notes and a team's meeting minutes, with travel and onboarding
pages beside them. Comparisons, time-order and chain questions, each written twice: naming the
documents' publisher ("the People Team's handbook"), and as a user who does not know it would ask.

    python benchmarks/multidoc_questions.py --json-out multidoc-questions.json

Each question is retrieved through ``QuorumRAG.retrieve`` with ``retrieval.parts.mode`` = ``rules`` and
``off``, at the same context words (fixed context, ``parts.words`` = ``context.words``); per form
(named, unnamed) and kind: coverage (the share of its gold documents in the context), all evidence
(every one of them), abstained, and the parts it was split into. Questions the corpus does not
answer (``gold`` empty) count as null questions: abstaining is right.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings

DOCUMENTS: dict[str, tuple[str, str, str]] = {
    # name: (publisher, published, text)
    "handbook-2023.md": (
        "People Team",
        "2023-01-09",
        "# Employee handbook 2023\n\n## Notice period\n\nAn employee who resigns gives four weeks' notice in "
        "writing to their manager.\n\n## Remote work\n\nStaff may work remotely two days a week with their "
        "manager's agreement.\n\n## Parental leave\n\nParents receive twelve weeks of paid parental leave.\n\n"
        "## Equipment\n\nEvery employee receives a laptop, replaced every four years.\n",
    ),
    "handbook-2024.md": (
        "People Team",
        "2024-01-15",
        "# Employee handbook 2024\n\n## Notice period\n\nAn employee who resigns gives six weeks' notice in "
        "writing to their manager and to the People Team.\n\n## Remote work\n\nStaff may work remotely three "
        "days a week; a fully remote contract needs a director's approval.\n\n## Parental leave\n\nParents "
        "receive sixteen weeks of paid parental leave.\n\n## Equipment\n\nEvery employee receives a laptop, "
        "replaced every three years, and a second monitor on request.\n",
    ),
    "release-2.1.md": (
        "Platform Team",
        "2023-03-02",
        "# Release 2.1\n\nThe upload limit rises from 50 MB to 200 MB per file. Single sign-on through SAML is "
        "now available to enterprise plans. The nightly export job moves from 01:00 to 03:00 UTC.\n",
    ),
    "release-2.2.md": (
        "Platform Team",
        "2023-06-20",
        "# Release 2.2\n\nThe upload limit rises to 500 MB per file. Audit logs are kept for 180 days instead "
        "of 90. The legacy v1 API is deprecated and will be removed in release 3.0.\n",
    ),
    "release-3.0.md": (
        "Platform Team",
        "2023-11-14",
        "# Release 3.0\n\nThe legacy v1 API is removed; clients must call v2. Audit logs are kept for 365 "
        "days. Dark mode arrives in the web app. The upload limit stays at 500 MB per file.\n",
    ),
    "minutes-2023-02.md": (
        "Steering Committee",
        "2023-02-08",
        "# Steering committee minutes, February 2023\n\nPresent: Dana Whitfield (chair), Omar Haddad, Lena "
        "Park. The committee approved a budget of 40,000 euros for the data centre migration. Omar Haddad "
        "will lead the migration. The office move to the Harbour building was postponed to autumn.\n",
    ),
    "minutes-2023-05.md": (
        "Steering Committee",
        "2023-05-10",
        "# Steering committee minutes, May 2023\n\nPresent: Dana Whitfield (chair), Omar Haddad, Priya Nair. "
        "The migration budget was raised to 55,000 euros after the storage audit. Priya Nair joins as "
        "security lead. The committee chose the Harbour building for the office move in October.\n",
    ),
    "minutes-2023-09.md": (
        "Steering Committee",
        "2023-09-13",
        "# Steering committee minutes, September 2023\n\nPresent: Lena Park (chair), Priya Nair, Omar Haddad. "
        "The data centre migration finished two weeks early and 3,000 euros under budget. Lena Park takes "
        "over as chair from Dana Whitfield, who leaves in December.\n",
    ),
    "travel-policy.md": (
        "Finance",
        "2023-04-01",
        "# Travel policy\n\nTrain is preferred for trips under five hours. Hotel costs are reimbursed up to "
        "150 euros a night. Expense reports are due within 30 days of the trip.\n",
    ),
    "onboarding.md": (
        "People Team",
        "2023-08-21",
        "# Onboarding guide\n\nNew staff meet their buddy on the first day. Laptops are handed out by IT on "
        "the first morning. The security training must be completed within the first two weeks.\n",
    ),
}


def asked(kind: str, named: str, unnamed: str, gold: list[str]) -> dict[str, Any]:
    return {"kind": kind, "named": named, "unnamed": unnamed, "gold": gold}


QUESTIONS = [
    asked(
        "comparison",
        "Did the People Team's 2023 handbook and its 2024 handbook give the same notice period?",
        "Did the 2023 handbook and the 2024 one give the same notice period?",
        ["handbook-2023.md", "handbook-2024.md"],
    ),
    asked(
        "comparison",
        "Does the People Team's 2024 handbook allow more remote days than the People Team's 2023 handbook?",
        "Does the 2024 handbook allow more remote days a week than the 2023 handbook?",
        ["handbook-2023.md", "handbook-2024.md"],
    ),
    asked(
        "comparison",
        "How did paid parental leave change between the People Team's 2023 and 2024 handbooks?",
        "Did the 2023 handbook and the 2024 one give the same paid parental leave?",
        ["handbook-2023.md", "handbook-2024.md"],
    ),
    asked(
        "comparison",
        "Did the Platform Team's release 2.1 and release 2.2 notes set the same upload limit?",
        "Did release 2.1 and release 2.2 set the same upload limit per file?",
        ["release-2.1.md", "release-2.2.md"],
    ),
    asked(
        "comparison",
        "Did the Platform Team keep audit logs as long in release 2.2 as in release 3.0?",
        "Did one release note keep audit logs for 180 days, while another kept them for 365 days?",
        ["release-2.2.md", "release-3.0.md"],
    ),
    asked(
        "comparison",
        "Was the migration budget in the Steering Committee's February minutes the same as in its May minutes?",
        "Did the February minutes and the May minutes approve the same migration budget?",
        ["minutes-2023-02.md", "minutes-2023-05.md"],
    ),
    asked(
        "comparison",
        "Do the People Team's onboarding guide and its 2023 handbook agree on when laptops are handed out or replaced?",
        "Does one document say laptops are handed out on the first morning, while another says they are "
        "replaced every four years?",
        ["onboarding.md", "handbook-2023.md"],
    ),
    asked(
        "comparison",
        "Did the Steering Committee's February minutes and its September minutes name the same chair?",
        "Did the February minutes and the September minutes name the same chair?",
        ["minutes-2023-02.md", "minutes-2023-09.md"],
    ),
    asked(
        "temporal",
        "Did the Platform Team deprecate the v1 API before removing it in release 3.0?",
        "Was the v1 API deprecated before it was removed?",
        ["release-2.2.md", "release-3.0.md"],
    ),
    asked(
        "temporal",
        "Was SAML single sign-on announced by the Platform Team before dark mode?",
        "Was SAML single sign-on released before dark mode in the web app?",
        ["release-2.1.md", "release-3.0.md"],
    ),
    asked(
        "temporal",
        "Did the Steering Committee choose the Harbour building before or after it postponed the office move?",
        "Was the office move postponed before the Harbour building was chosen?",
        ["minutes-2023-02.md", "minutes-2023-05.md"],
    ),
    asked(
        "temporal",
        "Did Priya Nair join the Steering Committee before the migration finished, according to its minutes?",
        "Did Priya Nair join as security lead before the data centre migration finished?",
        ["minutes-2023-05.md", "minutes-2023-09.md"],
    ),
    asked(
        "temporal",
        "Was the upload limit raised to 200 MB by the Platform Team before it was raised to 500 MB?",
        "Was the upload limit raised to 200 MB before it was raised to 500 MB per file?",
        ["release-2.1.md", "release-2.2.md"],
    ),
    asked(
        "temporal",
        "Between the Steering Committee's minutes approving 40,000 euros and those raising the budget to "
        "55,000 euros, what changed?",
        "Between the minutes approving 40,000 euros for the migration, and the minutes raising the migration "
        "budget to 55,000 euros, what did the storage audit change?",
        ["minutes-2023-02.md", "minutes-2023-05.md"],
    ),
    asked(
        "chain",
        "Who leads the migration in the Steering Committee's February minutes, and did it finish under "
        "budget according to its September minutes?",
        "Who was chosen to lead the data centre migration, and did the migration finish under budget?",
        ["minutes-2023-02.md", "minutes-2023-09.md"],
    ),
    asked(
        "chain",
        "Which chair of the Steering Committee leaves in December, and what budget did that chair's "
        "committee first approve for the migration?",
        "Which chair leaves in December, and what budget did the committee first approve for the migration?",
        ["minutes-2023-09.md", "minutes-2023-02.md"],
    ),
    asked(
        "chain",
        "Which API version did the Platform Team deprecate in release 2.2, and what must clients call "
        "after release 3.0?",
        "Which API version was deprecated with the 500 MB upload limit, and what must clients call once it is removed?",
        ["release-2.2.md", "release-3.0.md"],
    ),
    asked(
        "chain",
        "Who is the security lead the Steering Committee named in May, and who chaired the committee in September?",
        "Who joined as security lead, and who took over as chair from Dana Whitfield?",
        ["minutes-2023-05.md", "minutes-2023-09.md"],
    ),
    asked(
        "chain",
        "How many remote days does the People Team's 2024 handbook allow, and who must approve a fully "
        "remote contract?",
        "How many remote days a week are allowed now, and who must approve a fully remote contract, "
        "compared with the two days allowed before?",
        ["handbook-2024.md", "handbook-2023.md"],
    ),
    asked(
        "chain",
        "Where did the Steering Committee decide to move the office, and when was the move first postponed?",
        "Which building was chosen for the office move, and when was the move first postponed to autumn?",
        ["minutes-2023-05.md", "minutes-2023-02.md"],
    ),
    asked(
        "null",
        "Did the Finance team's travel policy and its 2022 policy give the same hotel limit?",
        "Did the travel policy and the previous one give the same mileage allowance for cars?",
        [],
    ),
    asked(
        "null",
        "Did the Platform Team's release 4.0 keep the upload limit of release 3.0?",
        "Was the mobile app's offline mode released before the tablet layout?",
        [],
    ),
    # a period names each document: the namespace's dates find it (``parts.periods``)
    asked(
        "period",
        "Did the Steering Committee's minutes of the first quarter of 2023 and its minutes of the third "
        "quarter of 2023 name the same chair?",
        "Did the minutes of the first quarter of 2023 and the minutes of the third quarter of 2023 name "
        "the same chair of the committee?",
        ["minutes-2023-02.md", "minutes-2023-09.md"],
    ),
    asked(
        "period",
        "Did the Platform Team's release note published in March 2023 and its release note published in "
        "November 2023 set the same upload limit?",
        "Did the release note published in March 2023 and the release note published in November 2023 "
        "set the same upload limit per file?",
        ["release-2.1.md", "release-3.0.md"],
    ),
    asked(
        "period",
        "Did the People Team's handbook published in 2023 and its handbook published in 2024 give the same "
        "parental leave?",
        "Did the handbook published in 2023 and the handbook published in 2024 give the same paid parental leave?",
        ["handbook-2023.md", "handbook-2024.md"],
    ),
    asked(
        "period",
        "Was the migration budget in the Steering Committee's minutes from February 2023 raised in its "
        "minutes from the second quarter of 2023?",
        "Was the migration budget approved in the minutes from February 2023 raised in the minutes from the "
        "second quarter of 2023?",
        ["minutes-2023-02.md", "minutes-2023-05.md"],
    ),
]


def ingest(folder: Path, store: Path, metadata: bool = True) -> None:
    """The documents into ``store``, with their publishers and dates in a sidecar (``metadata``), or
    as bare files."""
    corpus = folder / "corpus"
    corpus.mkdir(parents=True)
    rows = []
    for name, (publisher, published, text) in DOCUMENTS.items():
        (corpus / name).write_text(text)
        rows.append({"doc": name, "source": publisher, "published_at": published})
    sidecar = folder / "metadata.jsonl"
    sidecar.write_text("".join(json.dumps(row) + "\n" for row in rows) if metadata else "")
    with QuorumRAG(load_settings(store=store)) as rag:
        rag.ingest(corpus, metadata=sidecar)


def row(rag: QuorumRAG, question: str, gold: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    evidence = rag.retrieve(question)
    shown = {Path(passage.source).name for passage in evidence.passages}
    return {
        "question": question,
        "abstained": evidence.abstained,
        "coverage": len(set(gold) & shown) / len(gold) if gold else None,
        "all": float(set(gold) <= shown) if gold else None,
        "parts": [part.searched_for for part in evidence.parts],
        "ms": (time.perf_counter() - started) * 1000,
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if r["coverage"] is not None]
    null = [r for r in rows if r["coverage"] is None]
    mean = lambda values: round(statistics.fmean(values), 3) if values else None  # noqa: E731
    return {
        "questions": len(rows),
        "coverage": mean([r["coverage"] for r in answerable]),
        "all_evidence": mean([r["all"] for r in answerable]),
        "abstain_answerable": mean([r["abstained"] for r in answerable]),
        "abstain_null": mean([r["abstained"] for r in null]),
        "split": mean([bool(r["parts"]) for r in rows]),
        "p50_ms": round(statistics.median(r["ms"] for r in rows), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--words", type=int, default=500, help="context words, whole and by parts")
    args = parser.parse_args()
    result: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        store = Path(folder) / "store"
        ingest(Path(folder), store)
        for plan in ("rules", "off"):
            words = args.words
            retrieval = {"context": {"mode": "fixed", "words": words}, "parts": {"mode": plan, "words": words}}
            with QuorumRAG(load_settings(store=store, retrieval=retrieval)) as rag:
                for form in ("named", "unnamed"):
                    rows = [{**row(rag, q[form], q["gold"]), "kind": q["kind"]} for q in QUESTIONS]
                    kinds = sorted({r["kind"] for r in rows})
                    result[f"{form} {plan}"] = {
                        "all": summary(rows),
                        **{kind: summary([r for r in rows if r["kind"] == kind]) for kind in kinds},
                        "rows": rows,
                    }
    for name, measured in result.items():
        print(name, json.dumps(measured["all"]))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
