"""Right answers marked supported, on small corpora of sibling facts: five topics, each a folder of
a few short documents that state several values of one kind side by side (loan periods per item,
plans per tier, fees per zone), asked what a new user would ask: questions the corpus answers,
follow-ups to them, and near misses (a sibling the corpus does not state).

    python benchmarks/sibling_facts.py --json-out sibling-facts.json

Every question goes through ``QuorumRAG.answer``, the path the CLI and the service answer through,
with the configured model (the packaged one by default). An answer is right when it holds the gold
value (digits and case aside); counted: answerable questions right and marked supported, wrong and
marked supported, abstained; near misses answered (not abstained) and marked supported.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings


@dataclass(frozen=True)
class Asked:
    question: str
    #: the values a right answer holds one of; None: a near miss (the corpus does not state it)
    gold: tuple[str, ...] | str | None
    #: an earlier question this one follows up, as a user in a chat would ask it
    after: str | None = None


CORPORA: dict[str, tuple[dict[str, str], list[Asked]]] = {
    "library": (
        {
            "loans.md": "# Loans\n\nBooks may be borrowed for 28 days.\n\nDVDs may be borrowed for 7 days.\n\n"
            "Magazines may be borrowed for 14 days.\n",
            "fines.md": "# Fines\n\nA late book costs 20 cents a day.\n\nA late DVD costs 1 euro a day.\n",
        },
        [
            Asked("How long can I borrow a DVD?", "7 days"),
            Asked("How long may books be borrowed?", "28 days"),
            Asked("And magazines?", "14 days", after="How long may books be borrowed?"),
            Asked("What is the fine for a late DVD?", "1 euro"),
            Asked("How long can I borrow an e-reader?", None),
        ],
    ),
    "gym": (
        {
            "plans.md": "# Membership plans\n\nThe Basic plan costs 29 euros a month and includes the gym floor.\n\n"
            "The Plus plan costs 45 euros a month and adds group classes.\n\n"
            "The Premium plan costs 69 euros a month and adds the sauna and a personal trainer session.\n",
            "hours.md": "# Opening hours\n\nOn weekdays the gym opens at 06:00 and closes at 23:00.\n\n"
            "On weekends it opens at 08:00 and closes at 20:00.\n",
        },
        [
            Asked("How much does the Plus plan cost?", "45"),
            Asked("Which plan includes the sauna?", "Premium"),
            Asked("When does the gym open on weekends?", "08:00"),
            Asked("And when does it close?", "20:00", after="When does the gym open on weekends?"),
            Asked("How much does the Student plan cost?", None),
        ],
    ),
    "parking": (
        {
            "zones.md": "# Parking zones\n\nIn zone A parking costs 3 euros an hour, for at most 2 hours.\n\n"
            "In zone B parking costs 2 euros an hour, for at most 4 hours.\n\n"
            "In zone C parking costs 1 euro an hour, with no limit.\n",
            "permits.md": "# Residents\n\nA resident permit costs 120 euros a year and is valid in one zone.\n",
        },
        [
            Asked("How much does parking cost in zone B?", "2 euros"),
            Asked("How long may I park in zone A?", "2 hours"),
            Asked("How much is a resident permit?", "120 euros"),
            Asked("What about zone C?", "1 euro", after="How much does parking cost in zone B?"),
            Asked("How much does parking cost in zone D?", None),
        ],
    ),
    "conference": (
        {
            "schedule.md": "# Schedule\n\nThe opening keynote starts at 09:00 in Hall 1.\n\n"
            "The data track starts at 10:30 in Hall 2.\n\nThe closing panel starts at 16:00 in Hall 1.\n",
            "venue.md": "# Venue\n\nThe conference takes place at the Harbour Centre, a ten-minute walk from the "
            "central station. Lunch is served in the foyer at 12:30.\n",
        },
        [
            Asked("When does the data track start?", "10:30"),
            Asked("Where is the closing panel?", "Hall 1"),
            Asked("When is lunch served?", "12:30"),
            Asked("And where?", "foyer", after="When is lunch served?"),
            Asked("When does the security track start?", None),
        ],
    ),
    "clinic": (
        {
            "vaccines.md": "# Vaccinations\n\nThe flu vaccine is given on Tuesdays from 14:00 to 17:00.\n\n"
            "The tetanus booster is given on Thursdays from 09:00 to 12:00.\n",
            "travel.md": "# Travel advice\n\nTravellers should book a travel consultation at least six weeks "
            "before departure. A consultation costs 35 euros.\n",
        },
        [
            Asked("When is the flu vaccine given?", ("Tuesday", "14:00")),
            Asked("On which day is the tetanus booster given?", "Thursday"),
            Asked("How much does a travel consultation cost?", "35 euros"),
            Asked("How early should I book it?", "six weeks", after="How much does a travel consultation cost?"),
            Asked("When is the measles vaccine given?", None),
        ],
    ),
}


def holds(answer: str | None, gold: tuple[str, ...] | str) -> bool:
    """One of the gold values in the answer, case and spacing aside."""

    def squeezed(text: str) -> str:
        return re.sub(r"\s+", " ", text.lower())

    golds = (gold,) if isinstance(gold, str) else gold
    return answer is not None and any(squeezed(value) in squeezed(answer) for value in golds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="qrag-siblings-") as scratch:
        for topic, (documents, questions) in CORPORA.items():
            folder = Path(scratch) / topic
            for name, text in documents.items():
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                (folder / name).write_text(text)
            with QuorumRAG(load_settings(store=Path(scratch) / "store", namespace=topic)) as rag:
                rag.ingest(folder)
                for asked in questions:
                    history = []
                    if asked.after is not None:
                        first = rag.answer(asked.after)
                        history = [
                            {"role": "user", "content": asked.after},
                            {"role": "assistant", "content": first.answer or "No answer."},
                        ]
                    started = time.perf_counter()
                    answer = rag.answer(asked.question, history=history)
                    rows.append(
                        {
                            "topic": topic,
                            "question": asked.question,
                            "follow_up": asked.after is not None,
                            "gold": asked.gold,
                            "answer": answer.answer,
                            "searched_for": answer.searched_for,
                            "abstained": answer.abstained,
                            "mark": answer.mark,
                            "mark_reason": answer.mark_reason,
                            "right": asked.gold is not None and holds(answer.answer, asked.gold),
                            "seconds": round(time.perf_counter() - started, 1),
                        }
                    )
                    print(json.dumps(rows[-1]), flush=True)
    answerable = [r for r in rows if r["gold"] is not None]
    near = [r for r in rows if r["gold"] is None]
    summary = {
        "answerable": len(answerable),
        "right_and_supported": sum(r["right"] and r["mark"] == "supported" for r in answerable),
        "right": sum(r["right"] for r in answerable),
        "wrong_and_supported": sum(not r["right"] and r["mark"] == "supported" for r in answerable),
        "answerable_abstained": sum(r["abstained"] for r in answerable),
        "near_misses": len(near),
        "near_misses_answered": sum(not r["abstained"] for r in near),
        "near_misses_supported": sum(r["mark"] == "supported" for r in near),
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
