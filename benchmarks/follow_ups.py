"""Follow-ups as a user types them, and what each is searched as: twenty follow-ups on small
corpora of sibling facts, each after one earlier exchange, run through ``QuorumRAG.retrieve`` with
that history (the path the CLI, chat and the service take), with the configured model writing the
rewrites (the packaged one by default).

    python benchmarks/follow_ups.py --json-out follow-ups.json
    PYTHONPATH=$OTHER_CHECKOUT python benchmarks/follow_ups.py --json-out follow-ups-before.json

For each follow-up it prints how it was read (``conversation.how``), what was searched, the second
reading's note, whether the user was asked which reading they meant, and whether the gold value is
in the best cluster and in the evidence. Counted: gold in the best cluster, gold in the evidence,
clarifications asked, searches that lost a content word the user typed (or its capital), second
readings that searched without a word, and words put after the question mark.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from sibling_facts import CORPORA

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.retrieval.conversation import POINTS_BACK, WORD
from qrag_qdrant.text.terms import terms, word_terms

PER_DIEMS = (
    "# Per diems\n\nThe per diem for domestic travel within Norway is NOK 550 a day.\n\n"
    "The per diem for travel to Sweden is SEK 600 a day.\n\n"
    "The per diem for travel to the United States is USD 80 a day.\n"
)
ROOMS = (
    "# Room C310: laser lab\n\nEveryone entering room C310 must wear laser safety glasses.\n\n"
    "The laser lab holds at most six people at once.\n\n"
    "# Room C204: seminar room\n\nRoom C204 seats at most 40 people, and its projector is booked through "
    "the front desk.\n"
)
TRAINS = (
    "# Trains to the airport\n\nThe first train leaves the central station at 05:10.\n\n"
    "The trip from the central station to the airport takes 22 minutes.\n"
)


@dataclass(frozen=True)
class FollowUp:
    corpus: str
    #: the earlier exchange: the user's question and the assistant's reply
    before: tuple[str, str]
    question: str
    gold: str


FOLLOW_UPS = [
    FollowUp("library", ("How long can I borrow a DVD?", "7 days [1]"), "And books?", "28 days"),
    FollowUp("library", ("What is the fine for a late book?", "20 cents a day [1]"), "And for a DVD?", "1 euro"),
    FollowUp("gym", ("How much does the Plus plan cost?", "45 euros a month [1]"), "And the Premium one?", "69 euros"),
    FollowUp("gym", ("When does the gym open on weekends?", "08:00 [1]"), "And when does it close?", "20:00"),
    FollowUp("gym", ("When does the gym open on weekdays?", "06:00 [1]"), "What about weekends?", "08:00"),
    FollowUp(
        "parking", ("How much does parking cost in zone B?", "2 euros an hour [1]"), "What about zone C?", "1 euro"
    ),
    FollowUp("parking", ("How long may I park in zone A?", "2 hours [1]"), "And in zone B?", "4 hours"),
    FollowUp("parking", ("How much is a resident permit?", "120 euros a year [1]"), "Where is it valid?", "one zone"),
    FollowUp("conference", ("When does the data track start?", "10:30 [1]"), "Where is it?", "Hall 2"),
    FollowUp("conference", ("When is lunch served?", "12:30 [1]"), "And where?", "foyer"),
    FollowUp("conference", ("When does the closing panel start?", "16:00 [1]"), "In which hall?", "Hall 1"),
    FollowUp(
        "clinic",
        ("How much does a travel consultation cost?", "35 euros [1]"),
        "How early should I book it?",
        "six weeks",
    ),
    FollowUp("clinic", ("When is the flu vaccine given?", "On Tuesdays [1]"), "And the tetanus booster?", "Thursdays"),
    FollowUp(
        "per-diems", ("What is the per diem for Norway?", "NOK 550 a day [1]"), "And for the United States?", "USD 80"
    ),
    FollowUp(
        "per-diems",
        ("What is the per diem for the United States?", "USD 80 [1]"),
        "And for Sweden, what is it?",
        "SEK 600",
    ),
    FollowUp(
        "per-diems",
        (
            "What is the per diem?",
            "Do you mean “What is the per diem for travel to Sweden?” or “What is the per diem for travel to the "
            "United States?”?",
        ),
        "the second one",
        "USD 80",
    ),
    FollowUp(
        "rooms", ("What must I wear in room C310?", "laser safety glasses [1]"), "How many people fit there?", "six"
    ),
    FollowUp("rooms", ("How many people does room C204 seat?", "40 [1]"), "How is its projector booked?", "front desk"),
    FollowUp("rooms", ("How many people does room C204 seat?", "40 [1]"), "And room C310?", "six"),
    FollowUp(
        "trains",
        ("How long does the trip to the airport take?", "22 minutes [1]"),
        "And when does the first one leave?",
        "05:10",
    ),
]


def documents() -> dict[str, dict[str, str]]:
    corpora = {topic: files for topic, (files, _) in CORPORA.items()}
    return corpora | {
        "per-diems": {"per-diems.md": PER_DIEMS},
        "rooms": {"rooms.md": ROOMS},
        "trains": {"trains.md": TRAINS},
    }


def lost_words(typed: str, searched: str) -> list[str]:
    """The content words the user typed that the searched question lacks (by the analyser's stems;
    not a word that points back, which a rewrite replaces), and those with a capital it writes in
    lower case ("c310")."""
    held, spelled = terms(searched), set(WORD.findall(searched))
    lowered = {word.lower() for word in spelled}
    return [
        word
        for word in WORD.findall(typed)
        if word_terms(word)
        and not POINTS_BACK.fullmatch(word)
        and (not word_terms(word) <= held or (word != word.lower() and word not in spelled and word.lower() in lowered))
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="qrag-follow-ups-") as scratch:
        opened: dict[str, QuorumRAG] = {}
        try:
            for topic, files in documents().items():
                folder = Path(scratch) / topic
                folder.mkdir()
                for name, text in files.items():
                    (folder / name).write_text(text)
                opened[topic] = QuorumRAG(load_settings(store=Path(scratch) / "store", namespace=topic))
                opened[topic].ingest(folder)
            for follow_up in FOLLOW_UPS:
                asked, replied = follow_up.before
                history = [{"role": "user", "content": asked}, {"role": "assistant", "content": replied}]
                evidence = opened[follow_up.corpus].retrieve(follow_up.question, history=history)
                step = evidence.conversation
                best = " ".join(p.text for p in evidence.clusters[0].passages) if evidence.clusters else ""
                searched = evidence.searched_for or follow_up.question
                rows.append(
                    {
                        "corpus": follow_up.corpus,
                        "after": asked,
                        "typed": follow_up.question,
                        "how": step.how if step else None,
                        "searched": searched,
                        "note": step.note if step else None,
                        "clarification": evidence.clarification.question if evidence.clarification else None,
                        "abstained": evidence.abstained,
                        "gold": follow_up.gold,
                        "gold_best": follow_up.gold.lower() in best.lower(),
                        "gold_evidence": any(follow_up.gold.lower() in p.text.lower() for p in evidence.passages),
                        # a reply that picks a reading offered is searched as that reading
                        "lost": [] if step and step.how == "chosen" else lost_words(follow_up.question, searched),
                    }
                )
                print(json.dumps(rows[-1]), flush=True)
        finally:
            for rag in opened.values():
                rag.close()
    summary = {
        "follow_ups": len(rows),
        "gold_in_best_cluster": sum(r["gold_best"] for r in rows),
        "gold_in_evidence": sum(r["gold_evidence"] for r in rows),
        "clarifications": sum(r["clarification"] is not None for r in rows),
        "abstained": sum(r["abstained"] for r in rows),
        "lost_a_typed_word": sum(bool(r["lost"]) for r in rows),
        "searched_without_a_word": sum(
            r["note"] is not None and r["note"].startswith("searched without") for r in rows
        ),
        "words_after_the_question_mark": sum(bool(re.search(r"\?\s*\w", r["searched"])) for r in rows),
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
