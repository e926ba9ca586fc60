"""Near misses: small corpora that hold a sibling of the fact a question asks for (vacation days, not
sick days; international travel, not domestic), so a reader that copies the sibling's value writes a
grounded, cited, wrong answer. How often is such an answer shown as supported?

    python benchmarks/near_miss.py --store $(mktemp -d) --json-out near-miss.json

Each case is one corpus of its own (two or three short documents), asked its near-miss question
through the same answer path users get: alone, and (the odd cases) as a follow-up to a first
question about the sibling that the corpus does answer, as a user in a chat would ask it. The set
was written before the answer's checks were changed to read the sentence an answer comes from.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.config.settings import load_settings


@dataclass(frozen=True)
class Case:
    #: the corpus: file name -> text
    documents: dict[str, str]
    #: a question the corpus answers (the sibling fact), and its answer
    sibling: str
    sibling_answer: str
    #: the near miss: a question whose answer the corpus does not hold, asked alone
    missing: str
    #: the same, as a follow-up to ``sibling``
    follow_up: str


FILLER = (
    "Questions about this policy go to the people team. The policy is reviewed every year, and changes are "
    "announced on the intranet a month before they apply."
)


def case(name: str, fact: str, sibling: str, answer: str, missing: str, follow_up: str, other: str = "") -> Case:
    documents = {f"{name}.md": f"# {name.replace('-', ' ').title()}\n\n{fact} {FILLER}"}
    if other:
        documents[f"{name}-other.md"] = other
    return Case(documents, sibling, answer, missing, follow_up)


CASES = [
    case(
        "leave",
        "Full-time employees get 25 vacation days per year.",
        "How many vacation days do employees get?",
        "25",
        "How many sick days do employees get?",
        "And sick days?",
    ),
    case(
        "per-diem",
        "For international travel the per diem is NOK 800 per day.",
        "What is the per diem for international travel?",
        "800",
        "What is the per diem for domestic travel?",
        "And within Norway?",
    ),
    case(
        "parental-leave",
        "The primary carer receives 16 weeks of paid parental leave.",
        "How many weeks of parental leave does the primary carer get?",
        "16",
        "How many weeks of parental leave does the secondary carer get?",
        "And the secondary carer?",
    ),
    case(
        "revenue",
        "In 2023 the company's revenue was 41 million euros.",
        "What was the revenue in 2023?",
        "41",
        "What was the revenue in 2024?",
        "And in 2024?",
    ),
    case(
        "opening-hours",
        "On weekdays the library opens at 8:00 and closes at 20:00.",
        "When does the library open on weekdays?",
        "8:00",
        "When does the library open on Sundays?",
        "What about Sundays?",
    ),
    case(
        "tickets",
        "An adult ticket to the museum costs 15 euros.",
        "How much is an adult ticket?",
        "15",
        "How much is a child ticket?",
        "And for a child?",
    ),
    case(
        "shipping",
        "Standard shipping takes five working days.",
        "How long does standard shipping take?",
        "five",
        "How long does express shipping take?",
        "And express shipping?",
    ),
    case(
        "shift-pay",
        "Night shifts are paid a supplement of 40 percent.",
        "What is the supplement for night shifts?",
        "40",
        "What is the supplement for weekend shifts?",
        "And for weekend shifts?",
    ),
    case(
        "hours",
        "Full-time staff work 37.5 hours a week.",
        "How many hours a week do full-time staff work?",
        "37.5",
        "How many hours a week do part-time staff work?",
        "And part-time staff?",
    ),
    case(
        "offices",
        "The Oslo office is at Karl Johans gate 12.",
        "Where is the Oslo office?",
        "Karl Johans gate 12",
        "Where is the Bergen office?",
        "And the Bergen office?",
    ),
    case(
        "server-room",
        "The server room must stay below 24 degrees.",
        "What is the maximum temperature of the server room?",
        "24",
        "What is the minimum humidity of the server room?",
        "And the minimum humidity?",
    ),
    case(
        "install",
        "On Windows, the VPN client is installed from the Software Center.",
        "Where do I install the VPN client on Windows?",
        "Software Center",
        "Where do I install the VPN client on a Mac?",
        "And on a Mac?",
    ),
    case(
        "insurance",
        "Home insurance covers water damage up to 200,000 kroner.",
        "How much water damage does home insurance cover?",
        "200,000",
        "How much theft does travel insurance cover?",
        "And travel insurance?",
    ),
    case(
        "roaming",
        "Roaming in the EU costs nothing extra.",
        "What does roaming in the EU cost?",
        "nothing",
        "What does roaming in the US cost?",
        "And in the US?",
    ),
    case(
        "plans",
        "The monthly plan costs 99 kroner.",
        "How much is the monthly plan?",
        "99",
        "How much is the annual plan?",
        "And the annual plan?",
    ),
    case(
        "rooms",
        "Meeting room Fjord is on the first floor.",
        "Which floor is meeting room Fjord on?",
        "first",
        "Which floor is meeting room Glacier on?",
        "And Glacier?",
    ),
    case(
        "baggage",
        "Economy passengers may check one bag of 23 kg.",
        "How much checked baggage may economy passengers bring?",
        "23",
        "How much checked baggage may business passengers bring?",
        "And in business?",
    ),
    case(
        "salary-bands",
        "The junior salary band starts at 520,000 kroner.",
        "Where does the junior salary band start?",
        "520,000",
        "Where does the senior salary band start?",
        "And the senior band?",
    ),
    case(
        "membership",
        "Gold membership costs 1,200 kroner a year.",
        "How much is gold membership?",
        "1,200",
        "How much is silver membership?",
        "And silver?",
    ),
    case(
        "deadlines",
        "Expense reports for January are due on 10 February.",
        "When are January's expense reports due?",
        "10 February",
        "When are March's expense reports due?",
        "And for March?",
    ),
    case(
        "passwords",
        "Passwords must have at least 12 characters.",
        "How long must a password be?",
        "12",
        "How often must a password be changed?",
        "And how often must it be changed?",
    ),
    case(
        "support",
        "The service desk answers on extension 4417.",
        "Which extension is the service desk?",
        "4417",
        "Which extension is the facilities desk?",
        "And facilities?",
    ),
    case(
        "parking",
        "Staff parking costs 30 kroner a day.",
        "How much does staff parking cost?",
        "30",
        "How much does visitor parking cost?",
        "And for visitors?",
    ),
    case(
        "canteen",
        "Lunch in the canteen costs 75 kroner.",
        "How much is lunch in the canteen?",
        "75",
        "How much is breakfast in the canteen?",
        "And breakfast?",
    ),
    case(
        "onboarding",
        "New engineers get a laptop on their first day.",
        "When do new engineers get a laptop?",
        "first day",
        "When do new engineers get a phone?",
        "And a phone?",
    ),
    case(
        "pension",
        "The company pays 7 percent of salary into the pension.",
        "How much does the company pay into the pension?",
        "7",
        "How much does the employee pay into the pension?",
        "And the employee?",
    ),
    case(
        "bonus",
        "The sales team's bonus is paid in March.",
        "When is the sales team's bonus paid?",
        "March",
        "When is the engineering team's bonus paid?",
        "And engineering's?",
    ),
    case(
        "training",
        "Each employee has a training budget of 10,000 kroner.",
        "How large is the training budget?",
        "10,000",
        "How large is the conference budget?",
        "And the conference budget?",
    ),
    case(
        "notice",
        "The notice period during probation is 14 days.",
        "What is the notice period during probation?",
        "14",
        "What is the notice period after probation?",
        "And after probation?",
    ),
    case(
        "probation",
        "Probation lasts six months.",
        "How long does probation last?",
        "six months",
        "How long does an internship last?",
        "And an internship?",
    ),
    case(
        "mileage",
        "Driving a private car on business pays 4.50 kroner per kilometre.",
        "What is the mileage rate for a car?",
        "4.50",
        "What is the mileage rate for a motorcycle?",
        "And for a motorcycle?",
    ),
    case(
        "hotel",
        "The maximum hotel rate in Oslo is 1,600 kroner a night.",
        "What is the maximum hotel rate in Oslo?",
        "1,600",
        "What is the maximum hotel rate in Stockholm?",
        "And in Stockholm?",
    ),
    case(
        "overtime",
        "Overtime on weekdays is paid at 150 percent.",
        "What is overtime paid at on weekdays?",
        "150",
        "What is overtime paid at on public holidays?",
        "And on public holidays?",
    ),
    case(
        "backups",
        "Databases are backed up every night at 02:00.",
        "When are databases backed up?",
        "02:00",
        "When are laptops backed up?",
        "And laptops?",
    ),
    case(
        "retention",
        "Email is kept for five years.",
        "How long is email kept?",
        "five years",
        "How long are chat messages kept?",
        "And chat messages?",
    ),
    case(
        "elevator",
        "The north elevator is serviced on Mondays.",
        "When is the north elevator serviced?",
        "Mondays",
        "When is the south elevator serviced?",
        "And the south one?",
    ),
    case(
        "age-limit",
        "Guests must be 18 to rent a kayak.",
        "How old must a guest be to rent a kayak?",
        "18",
        "How old must a guest be to rent a bicycle?",
        "And to rent a bicycle?",
    ),
    case(
        "fees",
        "Withdrawing cash abroad costs 35 kroner per withdrawal.",
        "What does a cash withdrawal abroad cost?",
        "35",
        "What does a card payment abroad cost?",
        "And a card payment?",
    ),
    case(
        "sla",
        "Priority 1 incidents must be answered within 15 minutes.",
        "How fast must a priority 1 incident be answered?",
        "15 minutes",
        "How fast must a priority 3 incident be answered?",
        "And priority 3?",
    ),
    case(
        "capacity",
        "The large auditorium seats 320 people.",
        "How many people does the large auditorium seat?",
        "320",
        "How many people does the small auditorium seat?",
        "And the small one?",
    ),
    case(
        "licences",
        "Each designer gets one Figma licence.",
        "How many Figma licences does a designer get?",
        "one",
        "How many Adobe licences does a designer get?",
        "And Adobe licences?",
    ),
    case(
        "gym",
        "The gym is open from 06:00 on weekdays.",
        "When does the gym open on weekdays?",
        "06:00",
        "When does the gym open on Saturdays?",
        "And on Saturdays?",
    ),
    case(
        "vat", "Books carry 0 percent VAT.", "What VAT do books carry?", "0", "What VAT does food carry?", "And food?"
    ),
    case(
        "flights",
        "Flights longer than six hours may be booked in premium economy.",
        "When may premium economy be booked?",
        "longer than six hours",
        "When may business class be booked?",
        "And business class?",
    ),
]


def shown_supported(answer) -> bool:
    """What a user reads as supported: an answer whose every claim passed its checks."""
    return not answer.abstained and bool(answer.claims) and all(claim.supported for claim in answer.claims)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--cases", type=int, default=len(CASES), help="the first N cases only")
    args = parser.parse_args()
    store = args.store or Path(tempfile.mkdtemp(prefix="qrag-near-miss-"))
    rows = []
    for number, near in enumerate(CASES[: args.cases]):
        corpus = store / "corpora" / f"case-{number}"
        corpus.mkdir(parents=True, exist_ok=True)
        for name, text in near.documents.items():
            (corpus / name).write_text(text)
        settings = load_settings(store=store / "index", namespace=f"case-{number}")
        with QuorumRAG(settings) as rag:
            rag.ingest(corpus)
            as_follow_up = number % 2 == 1
            if as_follow_up:
                first = rag.answer(near.sibling)
                history = [
                    {"role": "user", "content": near.sibling},
                    {"role": "assistant", "content": first.answer or ""},
                ]
                answer = rag.answer(near.follow_up, history=history)
            else:
                answer = rag.answer(near.missing)
        row = {
            "case": number,
            "asked": near.follow_up if as_follow_up else near.missing,
            "follow_up": as_follow_up,
            "searched_for": answer.searched_for,
            "answer": answer.answer,
            "abstained": answer.abstained,
            "abstain_reason": answer.abstain_reason,
            "copied_the_sibling": near.sibling_answer.lower() in (answer.answer or "").lower(),
            "shown_supported": shown_supported(answer),
            "marks": [claim.unsupported for claim in answer.claims],
            "mark": answer.mark,
            # what each rule of the mark reads, to apply other thresholds to the same answers
            "coverage": [claim.coverage for claim in answer.claims],
            "missing_terms": [claim.missing_terms for claim in answer.claims],
            "relevance": [claim.relevance for claim in answer.claims],
            "answer_probability": answer.answer_probability,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    alone = [r for r in rows if not r["follow_up"]]
    follow = [r for r in rows if r["follow_up"]]
    summary = {
        "cases": len(rows),
        "shown_supported": sum(r["shown_supported"] for r in rows),
        "shown_supported_alone": f"{sum(r['shown_supported'] for r in alone)} of {len(alone)}",
        "shown_supported_follow_up": f"{sum(r['shown_supported'] for r in follow)} of {len(follow)}",
        "copied_the_sibling": sum(r["copied_the_sibling"] for r in rows),
        "abstained": sum(r["abstained"] for r in rows),
    }
    print(json.dumps(summary, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
