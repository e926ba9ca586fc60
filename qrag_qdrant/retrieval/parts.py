"""The parts of a question that needs several documents: one part per document it names by its
publisher, and by its date or period where it gives one ("the TechCrunch report published on
October 2, 2023, and the Fortune piece of October 7"; "the notes of March 2024", "in Q3 2023").

The rules read what the namespace knows: its publishers (the documents' metadata). A part is
searched only in its publisher's documents (and within two weeks of its date), so that the strongest
document cannot crowd out the others; a question that names a publisher the namespace does not
hold ("a Bloomberg article") has a part no document can answer, and says so instead of answering
from another outlet. A question that names no publisher is not split: it takes the one-question
path, with the same evidence.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache

from ..store.filters import DocumentFilter
from ..text.dates import DATE, MONTHS, day_of

#: where a question's clauses meet: a part's own words run from one to the next
CLAUSE_BREAK = re.compile(
    r",?\s+(?:while|whereas|but|compared (?:to|with)|than|versus|and then|and|or)\s+|;\s*|,\s+", re.IGNORECASE
)
#: a source named as such: "an article by X", "a report from X", "another in X", "a X article", "reported
#: by X", "an article on X about ..." ("according to X" is left out: X is as often a person, and no
#: question of MultiHop-RAG needed it; "an article on X" alone is as often on a company as in an outlet)
OUTLET = r"(?i:the\s+)?(?P<name>[A-Z][\w.&-]*(?:\s+(?:of\s+|&\s+)?[A-Z][\w.&-]*){0,4})"
WRITTEN = r"(?:article|report|piece|story|review|analysis|coverage|column|op-ed|post)s?"
#: what only an outlet does with a story: "reported by X"
PUBLISHED = r"(?:reported|published|covered)"
#: what a person does as often: "mentioned by X" names an outlet only as "the X", or as a brand
#: written in capitals ("CNET") or with one inside ("TechCrunch"), never "Sam Altman" or "Musk"
SAID = r"(?:mentioned|noted|discussed|written|described)"
BRAND = r"(?P<name>[A-Z]{2,}[\w&-]*|[A-Z][a-z]+[A-Z][\w&-]*)\b"
#: what follows an outlet named with "on" when the article's subject comes next
SUBJECT = r"(?:about|discussing|detailing|regarding|concerning)"
NAMED_SOURCES = (
    re.compile(rf"\b(?i:(?:{WRITTEN}|another|one)\s+(?:by|from|in))\s+{OUTLET}"),
    re.compile(rf"\b(?i:an?|the|another)\s+['\"]?{OUTLET}['\"]?\s+(?i:{WRITTEN})\b"),
    re.compile(rf"\b(?i:{PUBLISHED}\s+by)\s+{OUTLET}"),
    re.compile(rf"\b(?i:{SAID}\s+by\s+the)\s+{OUTLET}"),
    re.compile(rf"\b(?i:{SAID}\s+by)\s+{BRAND}"),
    re.compile(rf"\b(?i:{WRITTEN}\s+on)\s+{OUTLET}\s+(?i:{SUBJECT})\b"),
)
#: a question's own words, apart from the outlets it names, that make a clause worth its own search
CLAUSE_WORDS = 5
#: a period a question names a document by: "the minutes of March 2023", "the report from Q3 2023",
#: "published in 2024", "the notes from the second half of 2023", "the update released last
#: quarter". Only after a document's noun or a verb of publishing: a period of the events a
#: document tells ("spent $26 billion in 2021", "its results in the last quarter") is no filter
#: on when it was published, nor a year that names a thing ("the 2023 handbook")
ORDINALS = ("first", "second", "third", "fourth")
DOCUMENT = (
    rf"(?:{WRITTEN}|minutes|notes|handbooks?|releases?|release notes?|editions?|versions?|issues?|"
    r"newsletters?|memos?|polic(?:y|ies)|guides?|documents?|files?|pages?|updates?|announcements?|ones?)"
)
PUBLISHING = r"(?:published|released|issued|dated|posted|written|filed)"
PERIOD = re.compile(
    rf"\b(?i:{DOCUMENT}\s+(?:{PUBLISHING}\s+)?(?:of|from|for|in|during|dated)|{PUBLISHING}(?:\s+(?:in|during|from))?)"
    r"\s+(?:the\s+)?(?i:"
    rf"(?P<month>{'|'.join(MONTHS)})\s+(?P<month_year>(?:19|20)\d{{2}})"
    r"|Q(?P<quarter>[1-4])\s+(?P<quarter_year>(?:19|20)\d{2})"
    r"|(?P<ordinal>first|second|third|fourth)\s+quarter\s+of\s+(?P<ordinal_year>(?:19|20)\d{2})"
    r"|(?P<half>first|second)\s+half\s+of\s+(?P<half_year>(?:19|20)\d{2})"
    r"|(?P<year>(?:19|20)\d{2})"
    r"|(?P<relative>last|this|past|previous)\s+(?P<unit>year|quarter|month))\b"
)
#: the days either side of a named date a part searches: a question's date is often a report's
#: day in another zone, or the day of the event it reports, and a later report may be a gold
#: article too (two weeks: on the tuning half every gold article reached the context for 0.679 of
#: the answerable questions, against 0.670 with a week, 0.675 with three and 0.670 with none)
DATE_SLACK = 14


@dataclass(frozen=True)
class Period:
    """The days a part's documents were published in: a day the question names and
    ``DATE_SLACK`` days either side, or a month, quarter, half or year; ``label`` as a reader
    names it ("2023-10-02", "2024-Q1")."""

    first: date
    last: date
    label: str

    @classmethod
    def around(cls, day: date) -> Period:
        return cls(day - timedelta(days=DATE_SLACK), day + timedelta(days=DATE_SLACK), day.isoformat())

    @classmethod
    def months(cls, year: int, month: int, count: int, label: str) -> Period:
        """``count`` months from ``month`` of ``year``, whole."""
        after = month - 1 + count
        return cls(date(year, month, 1), date(year + after // 12, after % 12 + 1, 1) - timedelta(days=1), label)


@dataclass(frozen=True)
class QuestionPart:
    """One document a question needs: the publishers it may come from (None: any), when it was
    published (None: any), and the question's words about it (``clause``, None when they
    are the whole question's). ``missing``: why no document can answer it (a publisher the
    namespace does not hold). ``named``: how a reader names it (its outlet, or "part 2")."""

    publishers: tuple[str, ...] | None
    when: Period | None = None
    clause: str | None = None
    named: str = ""
    missing: str | None = None
    #: searched by its own words alone (a part the model wrote), not the question's with them
    alone: bool = False

    @property
    def label(self) -> str:
        """The part as a reader names it: "TechCrunch, 2023-10-02"."""
        return ", ".join(part for part in (self.named, self.when.label if self.when else "") if part)

    @property
    def filter(self) -> DocumentFilter:
        when = self.when
        return DocumentFilter(
            publisher=self.publishers,
            after=when.first.isoformat() if when else None,
            before=(when.last + timedelta(days=1)).isoformat() if when else None,
        )


@dataclass(frozen=True)
class QuestionPlan:
    """How a question is searched: whole (no parts), or part by part; ``seconds``: what asking the
    model for its parts took (``model_parts``), 0 for the rules."""

    parts: tuple[QuestionPart, ...] = field(default=())
    seconds: float = 0.0

    @property
    def split(self) -> bool:
        return bool(self.parts)

    @property
    def alone(self) -> bool:
        """Every part searched by its own words alone, in every document (no publisher named)."""
        return self.split and all(part.alone for part in self.parts)

    def unnamed(self, question: str) -> str:
        """``question`` without the publishers its parts are searched in: a part's filter holds
        each to its publisher's documents, whose text seldom names it, so the gate reads the rest.
        ("What did The Verge say about the spacesuit?" is judged on "What did say about the spacesuit?")"""
        for name in {part.named for part in self.parts if part.publishers}:
            question = re.sub(rf"['\"‘’“”]?(?<![\w-]){re.escape(name)}(?![\w-])(?:['’]s)?['\"‘’“”]?", " ", question)
        return re.sub(r"\s+", " ", question).strip()


WHOLE = QuestionPlan()


def aliases(publisher: str) -> set[str]:
    """How a question may name a publisher: "Cnbc | World Business News Leader" as itself or
    "Cnbc"; "The Independent - Sports" as "The Independent"."""
    names = {publisher}
    for separator in (" | ", " - ", ": "):
        if separator in publisher:
            names.add(publisher.split(separator)[0])
    return {name.strip() for name in names if len(name.strip()) >= 3}


@dataclass(frozen=True)
class Mention:
    start: int
    end: int
    publishers: tuple[str, ...]
    named: str


@lru_cache(maxsize=32)
def publisher_names(publishers: frozenset[str]) -> tuple[re.Pattern[str], dict[str, tuple[str, ...]]]:
    """One pattern for every name of ``publishers``, longest first (so the longest name at a place
    wins), and each name's publishers: built once per set of publishers, whatever their number."""
    by_name: dict[str, set[str]] = {}
    for publisher in publishers:
        for name in aliases(publisher):
            by_name.setdefault(name.lower(), set()).add(publisher)
    names = sorted(by_name, key=len, reverse=True)
    pattern = re.compile(rf"(?<![\w-])(?:{'|'.join(map(re.escape, names))})(?![\w-])", re.IGNORECASE)
    return pattern, {name: tuple(sorted(found)) for name, found in by_name.items()}


def publisher_mentions(question: str, publishers: frozenset[str]) -> list[Mention]:
    """Where the question names a publisher; a name shared by several publishers ("FOX News")
    names them all. Case aside, but the name must be capitalised as a name is: "fortune" and
    "the age" are words, not outlets."""
    if not publishers:
        return []
    pattern, by_name = publisher_names(publishers)
    return [
        Mention(match.start(), match.end(), by_name[match[0].lower()], match[0])
        for match in pattern.finditer(question)
        if match[0][0].isupper()
    ]


def unknown_sources(question: str, mentions: Sequence[Mention]) -> list[str]:
    """The outlets the question names as sources ("a Bloomberg article", "a report from Reuters")
    that are no publisher of the namespace."""
    unknown: list[str] = []
    for match in (m for pattern in NAMED_SOURCES for m in pattern.finditer(question)):
        start, end = match.span("name")
        name = question[start:end].strip()
        if any(m.start < end and start < m.end for m in mentions):
            continue
        if (question[end : end + 1] and question[end] in "'’") or name in unknown:  # a possessive or a title
            continue
        first = name.split()[0]
        if name.lower().removeprefix("the ") and first.lower() not in MONTHS and not re.fullmatch(r"Q[1-4]", first):
            unknown.append(name)  # not "one from October 5", "the report from Q3 2023"
    return unknown


def periods(text: str, today: date | None = None) -> list[tuple[int, Period]]:
    """Where ``text`` names a day or a period, and which, in order; "last quarter" is read
    against ``today`` (the date now, unless given)."""
    days = [(match.start(), Period.around(day)) for match in DATE.finditer(text) if (day := day_of(match))]
    named = [(match.start(), period_of(match, today or date.today())) for match in PERIOD.finditer(text)]
    return sorted(days + named, key=lambda found: found[0])


def period_of(match: re.Match[str], today: date) -> Period:
    if match["month"]:
        year, month = int(match["month_year"]), MONTHS.index(match["month"].lower()) + 1
        return Period.months(year, month, 1, f"{year}-{month:02d}")
    if match["quarter"] or match["ordinal"]:
        quarter = int(match["quarter"]) if match["quarter"] else ORDINALS.index(match["ordinal"].lower()) + 1
        year = int(match["quarter_year"] or match["ordinal_year"])
        return Period.months(year, 3 * quarter - 2, 3, f"{year}-Q{quarter}")
    if match["half"]:
        half, year = ORDINALS.index(match["half"].lower()) + 1, int(match["half_year"])
        return Period.months(year, 6 * half - 5, 6, f"{year}-H{half}")
    if match["year"]:
        return Period.months(int(match["year"]), 1, 12, match["year"])
    back = int(match["relative"].lower() != "this")
    unit = match["unit"].lower()
    if unit == "year":
        return Period.months(today.year - back, 1, 12, str(today.year - back))
    if unit == "quarter":
        year, quarter = divmod(today.year * 4 + (today.month - 1) // 3 - back, 4)
        return Period.months(year, 3 * quarter + 1, 3, f"{year}-Q{quarter + 1}")
    year, month = divmod(today.year * 12 + today.month - 1 - back, 12)
    return Period.months(year, month + 1, 1, f"{year}-{month + 1:02d}")


def clauses(question: str, mentions: Sequence[Mention]) -> list[str]:
    """Each mention's own words: the question cut, between one mention and the next, at the last
    place two clauses meet (the whole question when nothing meets there)."""
    cuts = [0]
    for before, after in itertools.pairwise(mentions):
        breaks = [m.start() for m in CLAUSE_BREAK.finditer(question, before.end, after.start)]
        cuts.append(breaks[-1] if breaks else -1)
    cuts.append(len(question))
    spans: list[str] = []
    for n in range(len(mentions)):
        start, end = cuts[n], cuts[n + 1]
        spans.append("" if start < 0 or end < 0 else question[start:end].strip(" ,;?"))
    return spans


def own_words(clause: str, mentions: Sequence[Mention]) -> int:
    for mention in mentions:
        clause = clause.replace(mention.named, " ")
    return len(re.findall(r"[A-Za-z][\w'-]+", clause))


def plan_question(question: str, publishers: Iterable[str], today: date | None = None) -> QuestionPlan:
    """The parts of ``question``: one per publisher mention, and one per day or period written
    after it before the next mention (``periods``), and a missing part per outlet the namespace
    does not hold, if it holds any: in a namespace whose documents name no publisher, an outlet
    is only words. No parts (the whole question) when it names none."""
    known = frozenset(publishers)
    mentions = publisher_mentions(question, known)
    unknown = unknown_sources(question, mentions) if known else []
    if not mentions and not unknown:
        return WHOLE
    named_when = periods(question, today)
    parts: list[QuestionPart] = []
    for n, (mention, clause) in enumerate(zip(mentions, clauses(question, mentions), strict=True)):
        until = mentions[n + 1].start if n + 1 < len(mentions) else len(question)
        # "the committee's minutes of March and its minutes of May": a part for each
        whens: list[Period | None] = list(
            {period.label: period for at, period in named_when if mention.end <= at < until}.values()
        )
        own = clause if clause and own_words(clause, mentions) >= CLAUSE_WORDS else None
        for when in whens or [None]:
            part = QuestionPart(mention.publishers, when, own, mention.named)
            repeated = any(
                (other.publishers, other.when) == (part.publishers, when) and (own is None or other == part)
                for other in parts
            )
            if not repeated:  # a publisher named again, with no words of its own, adds no search
                parts.append(part)
    parts += [QuestionPart(None, named=name, missing=f"no document from {name}") for name in unknown]
    return QuestionPlan(tuple(parts))
