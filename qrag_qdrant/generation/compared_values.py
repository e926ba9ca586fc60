"""A yes-or-no question that compares a value each of its two parts states ("Did the 2023 handbook
and the 2024 one give the same notice period?", "Does the 2024 handbook allow more remote days a
week than the 2023 handbook?"), answered by reading the two values and comparing them: whether
four weeks is six is arithmetic, and the packaged model answers "Yes" to most such questions.

Retrieval says which questions ask that (``Evidence.comparison``, read from the question's form)
and searches each side as a part. Each side's value is read from the sentence, among the passages
shown, that names the thing compared (the words the two parts share: "notice period") with at
least ``generation.min_relevance`` of them, with the heading above it, and whose passage states
the side's own details (those its part states and the other does not: "2023", "release 2.1",
"February"), in the sentence, the headings above it or the document's title, publisher, date or
file name. The sentence must state one amount, old values aside ("rises from 50 MB to 200 MB":
200 MB; "180 days instead of 90": 180 days). Two amounts in one unit, or in units one converts to
the other (weeks and days, GB and MB), give the answer, "Yes [2][5]" or "No [2][5]", and the checks
read it as they read the model's verdict. Where one side is read and no passage shown is of the
other's document at all (its details nowhere: "release 2.4" among releases 2.1 to 3.0), the
question abstains, naming that part; anything else (a side no sentence states, sentences as good
that state different amounts, units that do not compare) leaves the question to the model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date

from ..results import Evidence, Passage, file_name_words
from ..text.numbers import NUMBER, NUMBER_NAMES
from ..text.terms import terms
from .checks.reading import sentences_of
from .checks.sentence import heading_above, relevance_of
from .checks.specifics import missing_details, own_specifics

#: an amount and the unit after it ("four weeks'", "55,000 euros", "500 MB"), or a currency before it ("€40")
AMOUNT = re.compile(
    rf"(?:(?P<currency>[€$£])\s?)?(?P<amount>\b\d+(?:[.,]\d+)*\b|\b(?:{'|'.join(NUMBER_NAMES)})\b)"
    r"(?:\s*(?P<unit>%|[A-Za-z]+)['’]?)?",
    re.IGNORECASE,
)
#: a value the sentence replaces, not the one it states: "from 50 MB to", "instead of 90"
OLD_VALUE = re.compile(r"(?:\bfrom|\binstead of|\brather than|\bup from|\bdown from|\bpreviously)\s+$", re.IGNORECASE)
#: the title a Markdown document opens with
TITLE = re.compile(r"^#\s+(.+)$", re.MULTILINE)
#: the words that say how two values compare, not what they are values of
COMPARING = (
    "same different equal identical agree disagree differ more less fewer higher lower greater larger longer shorter "
    "smaller bigger than"
)
#: words after a number that join it to the rest of the sentence, not its unit
NOT_UNIT_WORDS = "a an and at by for from in instead of on or per than the to with"
NOT_UNITS = frozenset(NOT_UNIT_WORDS.split())
#: units that are another's multiple: (the unit compared, how many of it)
UNITS = {
    "week": ("day", 7),
    "fortnight": ("day", 14),
    "hour": ("minute", 60),
    "kb": ("mb", 0.001),
    "gb": ("mb", 1000),
    "tb": ("mb", 1_000_000),
    "eur": ("euro", 1),
    "€": ("euro", 1),
    "usd": ("dollar", 1),
    "$": ("dollar", 1),
    "gbp": ("pound", 1),
    "£": ("pound", 1),
    "percent": ("%", 1),
}


@dataclass(frozen=True)
class Amount:
    """An amount as a sentence states it, and in the unit it is compared in."""

    said: str
    value: float
    unit: str


@dataclass(frozen=True)
class Side:
    """One side of the comparison: the passage and sentence its amount was read from."""

    passage: Passage
    sentence: str
    amount: Amount


@dataclass(frozen=True)
class ComparedValues:
    """The verdict and the two sides whose amounts gave it."""

    holds: bool
    first: Side
    second: Side

    @property
    def text(self) -> str:
        """The answer as the model would write it: the verdict, then each side's passage."""
        return f"{'Yes' if self.holds else 'No'} [{self.first.passage.citation}][{self.second.passage.citation}]"

    @property
    def how(self) -> str:
        """What a reader is told of the computation."""
        return (
            f"from the values the passages state: [{self.first.passage.citation}] {self.first.amount.said}, "
            f"[{self.second.passage.citation}] {self.second.amount.said}"
        )

    @property
    def read(self) -> tuple[Passage, Passage]:
        """The passage each part's side was read from, in the parts' order."""
        return self.first.passage, self.second.passage


@dataclass(frozen=True)
class MissingSide:
    """A comparison whose other side is read while no passage shown is of this one's document
    ("release 2.4" in a namespace of releases 2.1 to 3.0): the question abstains, naming it."""

    part: int
    details: tuple[str, ...]

    @property
    def why(self) -> str:
        """What the part lacks, as its ``missing`` says it."""
        return f"no passage shown names {' '.join(self.details)}"


def amount_of(match: re.Match[str]) -> Amount:
    """The amount ``match`` (of ``AMOUNT``) states, in the unit it is compared in: a currency
    before it, else the word after it unless that word only joins ("40 for", "90 and")."""
    written = match["amount"].lower()
    value = float(NUMBER_NAMES[written]) if written in NUMBER_NAMES else float(written.replace(",", ""))
    unit = (match["unit"] or "").lower()
    end = match.end()
    if match["currency"] or unit in NOT_UNITS:
        unit, end = (match["currency"] or "").lower(), match.end("amount")
    unit = unit[:-1] if len(unit) > 3 and unit.endswith("s") and not unit.endswith("ss") else unit
    base, times = UNITS.get(unit, (unit, 1))
    return Amount(match.string[match.start() : end].strip().rstrip("'’"), value * times, base)


def amounts_stated(sentence: str, asked: set[str]) -> set[Amount]:
    """The amounts ``sentence`` states as its values: not those it replaces (``OLD_VALUE``), nor a
    number the question states itself ("release 2.1", "2023"), nor a time of day."""
    found = set()
    for match in AMOUNT.finditer(sentence):
        if OLD_VALUE.search(sentence[: match.start()]) or match["amount"].replace(",", "") in asked:
            continue
        if sentence[match.end() : match.end() + 1] == ":" or sentence[max(0, match.start() - 1) : match.start()] == ":":
            continue
        found.add(amount_of(match))
    return found


def document_words(passage: Passage) -> str:
    """What a passage says of its document: its heading path, title, publisher, date (with the
    month's name), file name, and the Markdown title its text opens with."""
    day = (passage.published or "")[:10]
    dated = date.fromisoformat(day).strftime("%d %B %Y") if len(day) == 10 else ""
    title = TITLE.match(passage.text)
    words = (
        title[1] if title else None,
        passage.heading,
        passage.title,
        passage.publisher,
        day,
        dated,
        file_name_words(passage.source),
    )
    return " ".join(filter(None, words))


def side_of(
    details: list[str], compared: set[int], asked: set[str], passages: list[Passage], min_relevance: float
) -> Side | None:
    """The side whose passage states ``details`` and whose sentence names the thing compared best
    (at least ``min_relevance`` of ``compared``, with the heading above it and the document's
    words) and states one amount; None where no sentence does, or sentences as good state
    different amounts."""
    best: list[tuple[float, Side]] = []
    for passage in passages:
        document, offset = document_words(passage), 0
        for sentence in sentences_of(passage.text):
            offset = max(passage.text.find(sentence, offset), offset)
            read = f"{heading_above(passage.text, offset) or ''} {sentence} {document}"
            stated = amounts_stated(sentence, asked)
            if missing_details(details, read) or len({(a.value, a.unit) for a in stated}) != 1:
                continue
            if (share := relevance_of(set(), compared, [read])) >= min_relevance:
                best.append((share, Side(passage, sentence.strip(), next(iter(stated)))))
    if not best:
        return None
    top = max(share for share, _ in best)
    tied = [side for share, side in best if share == top]
    return tied[0] if len({(side.amount.value, side.amount.unit) for side in tied}) == 1 else None


def compared_values(evidence: Evidence, min_relevance: float) -> ComparedValues | MissingSide | None:
    """The answer to a question that compares a value of its first part with one of its second,
    from the amounts the passages state; the side no passage shown is of, where the other is read;
    None where they do not tell it (see the module)."""
    if evidence.comparison is None or evidence.abstained or len(evidence.parts) != 2:
        return None
    one, other = evidence.parts
    sides = [
        own_specifics(one.searched_for, [other.searched_for]),
        own_specifics(other.searched_for, [one.searched_for]),
    ]
    compared = terms(one.searched_for) & terms(other.searched_for) - terms(COMPARING)
    if not all(sides) or not compared:  # nothing tells the sides apart, or names what they compare
        return None
    asked = {n.replace(",", "") for part in evidence.parts for n in NUMBER.findall(part.searched_for)}
    shown = list(evidence.passages)
    first = side_of(sides[0], compared, asked, shown, min_relevance)
    second = side_of(sides[1], compared, asked, shown, min_relevance)
    if (first is None) != (second is None):
        absent = 0 if first is None else 1
        of_it = [p for p in shown if not missing_details(sides[absent], f"{p.text} {document_words(p)}")]
        return None if of_it else MissingSide(absent, tuple(sides[absent]))
    if first is None or second is None or first.passage.citation == second.passage.citation:
        return None
    a, b = first.amount, second.amount
    if a.unit != b.unit:
        return None
    holds = {
        "same": a.value == b.value,
        "different": a.value != b.value,
        "more": a.value > b.value,
        "less": a.value < b.value,
        "at least": a.value >= b.value,
    }[evidence.comparison]
    return ComparedValues(holds, first, second)
