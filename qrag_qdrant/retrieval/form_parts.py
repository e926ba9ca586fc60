"""The parts of a question that spans documents without naming them, read from its form: "Did
one article report that the city raised bus fares, while another described the new tram line?",
"Between a report on X published on October 7, 2023, and another on Y ...", "Which company,
accused of A, is also said to B?", "Did the 2023 handbook and the 2024 one give the same notice
period?", "Was the price cut announced before the battery plant?".

The rules of ``parts.plan_question`` key on the publishers a question names; these key on how it
is built, and cost no model call. The first that gives two parts or more is the plan:

- a question that refers to documents (``refers_to_documents``) is cut where its clauses meet
  (``CLAUSE_BREAK``), and each clause with words of its own, apart from the words that refer to
  documents ("as reported by one outlet"), is a part (``clauses_of``);
- two questions joined by ", and" ("Who leads the migration, and did it finish?") are each a part
  (``chained``);
- a question that orders two events ("Was X before Y?") is searched for each (``ordered``);
- a question that compares two short phrases ("the 2023 handbook and the 2024 one ... the same",
  "more ... than the 2023 handbook", "as long in release 2.2 as in release 3.0") is searched once
  with each phrase in the place of both (``paired``).

Each part is searched by its own words alone in every document the caller may read, within two
weeks of the date it gives where the namespace's documents carry dates. A question of one part
takes the one-question path, with the same evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..results import ValueRelation
from ..text.dates import DATE, MONTHS
from .model_parts import needs_model_split
from .parts import WHOLE, WRITTEN, QuestionPart, QuestionPlan, periods

#: where a question's clauses meet, for a question that refers to documents: a comma (and a word
#: that joins), a conjunction of clauses, "and" before a second subject or verb, or a word that
#: compares before "another" ("the same as another article's claim", "in the same way that another
#: article ...")
CLAUSE_BREAK = re.compile(
    r"\s*[,;]\s*(?:and\s+|while\s+|whereas\s+|but\s+|or\s+)?"
    r"|\s+(?:while|whereas|but also|but|compared (?:to|with)|in contrast to|versus)\s+"
    r"|\s+and\s+(?=(?:did|does|do|is|was|were|has|have|had|also|another|the other|one|other)\b)"
    r"|\s+(?:before|after)\s+(?=(?:another|the other|one|a|an|the)\s)"
    r"|\s+(?:in (?:a|the) (?:similar|same) way (?:that|to how|as)|similar to how|as|than|with)\s+"
    r"(?=(?:another|the other)\b)",
    re.IGNORECASE,
)
#: the words with which a question refers to documents, the outlets that wrote them, or how it
#: joins and orders its clauses: none of them says what a part is about
REFERRING_WORDS = (
    "article articles report reports piece pieces story stories review reviews analysis coverage column "
    "post posts outlet outlets source sources publication publications news one another other both "
    "reported discussed covered mentioned described featured according recently also between after before "
    "considering information based separate later earlier same date published the a an and or by from in "
    "on of as to with these those this that claims being been has have had is was were did does do it its "
    "their his her while whereas but"
)
REFERRING = frozenset(REFERRING_WORDS.split())
#: the words a part needs of its own: fewer is a fragment ("as reported by one outlet")
OWN_WORDS = 4
#: the words an ordered or paired phrase needs of its own ("the battery plant")
PHRASE_WORDS = 2
#: the most parts a question is searched in (MultiHop-RAG's questions need two to four documents)
MAX_PARTS = 4
#: a clause that asks how the reports relate, after the clauses that describe them ("..., was there
#: a change in the narrative regarding X", "indicating a difference in Y"): it describes no report
#: of its own, so searched alone it finds none and takes the slots of those that do
JUDGEMENT = re.compile(
    r"^(?:or\s+)?(?:was|were|is|are|did|do|does|has|have|indicating|suggesting|implying)\b.*\b(?:"
    r"chang\w*|consisten\w*|inconsisten\w*|discrepanc\w*|differ\w*|agree\w*|disagree\w*|similar\w*|"
    r"align\w*|contradict\w*|narrative|portrayal)\b",
    re.IGNORECASE,
)
#: "Was X before Y?", "Did X happen after Y?": an event ordered against another
ORDERED = re.compile(
    rf"^(?:was|were|did|does|do|is|has|had)\s+(?P<first>.+?)\s+(?P<order>before|after|earlier than|later than)\s+"
    rf"(?!(?:\d|{'|'.join(MONTHS)}|the same\b|that\b|this\b))(?P<second>.+)$",
    re.IGNORECASE,
)
#: what makes "Was X before Y?" ask more than the order of X and Y: whether a report changed, agreed
#: or stayed the same, what a report suggests, a comparison beside it, or a negation ("Did X fail to
#: ... before Y?")
MORE_THAN_ORDER = re.compile(
    r"\b(?:consisten\w*|inconsisten\w*|chang\w*|same|agree\w*|disagree\w*|differ\w*|contradict\w*|"
    r"remain\w*|maintain\w*|similar\w*|align\w*|compar\w*|suggest\w*|claim\w*|impl\w*|indicat\w*|"
    r"attribut\w*|while|whereas|or|not|no|never|fail\w*|"
    r"\w+n't)\b",
    re.IGNORECASE,
)
#: a second question joined to the first: "Who leads the migration, and did it finish under budget?"
ASKS = r"(?:who|what|which|when|where|why|how|did|does|do|is|was|were|has|have|had)\s"
CHAINED = re.compile(rf",\s+and\s+(?={ASKS})", re.IGNORECASE)
#: words that name a document or a version of one, beside those of news (``model_parts.DOCUMENTS``)
DOCUMENT = re.compile(
    rf"\b(?:{WRITTEN}|outlets?|reported|reports|notes|documents?|minutes|handbooks?|memos?|policy|policies|"
    r"editions?|versions?|releases?)\b",
    re.IGNORECASE,
)
#: the words that make two phrases things to compare, not one thing ("the Victoria and Albert Museum")
PAIR_COMPARES = re.compile(
    r"\b(?:both|same|differ\w*|agreed?|agrees|disagree\w*|compared?|versus|consistent|contradict\w*)\b",
    re.IGNORECASE,
)
#: a phrase that names one of two things compared: a determiner and a few words ("the 2023 handbook"),
#: or a name and a number ("release 2.1")
DETERMINER = r"(?:the|a|an|its|their|our|this|last|next)"
WORD = r"(?!(?:of|in|on|for|with|about|to|from|at|between|by|and|or|than)\b)[\w'.-]+"
FIRST_PHRASE = re.compile(rf"(?:\b{DETERMINER}\s+{WORD}(?:\s+{WORD}){{0,3}}|\b[A-Za-z]+\s+\d[\w.]*)$", re.I)
SECOND_START = re.compile(rf"^(?:both\s+)?(?:{DETERMINER}\s+|(?=[A-Za-z]+\s+\d))", re.IGNORECASE)
#: where the second phrase ends, when not at its first noun's repeat, "one" or a number: before a
#: verb, a preposition or the question's end
STOP = re.compile(
    r"\s+(?:give|gave|say|said|show|showed|state|stated|set|offer|offered|agree|agreed|differ|differed|"
    r"describe|described|mention|mentioned|allow|allowed|require|required|include|included|name|named|"
    r"approve|approved|keep|kept|"
    r"of|in|on|for|with|about|to|from|at|\w+ed)\b|\s*[,?;]|$",
    re.IGNORECASE,
)
#: "more ... than the 2023 handbook": the thing compared with, at the question's end
THAN = re.compile(rf"\s+than\s+(?P<other>{DETERMINER}\s+[\w' .-]+?|[A-Za-z]+\s+\d[\w.]*)\s*\??$", re.I)
PRONOUN = re.compile(r"^(?:it|they|he|she)\b", re.IGNORECASE)
#: "as long", "as much": the first half of "as ... as"
AS_MUCH = r"as\s+(?:much|many|long|high|large|big|often|far)"
#: "keep audit logs as long in release 2.2 as in release 3.0": the thing compared in two places
AS_AS = re.compile(
    rf"^(?P<head>.+?)\s+{AS_MUCH}\s+(?P<first>(?:in|by|at|for|under|from)\s+.+?)"
    r"\s+as\s+(?P<second>(?:in|by|at|for|under|from)\s+.+?)\s*\??$",
    re.IGNORECASE,
)
YES_OR_NO = re.compile(r"^(?:did|does|do|is|was|were|are|has|have|had)\b", re.IGNORECASE)
RELATIONS: tuple[tuple[ValueRelation, re.Pattern[str]], ...] = (
    ("more", re.compile(r"\b(?:more|higher|greater|larger|longer|bigger)\b.*\bthan\b", re.IGNORECASE)),
    ("less", re.compile(r"\b(?:fewer|less|lower|smaller|shorter)\b.*\bthan\b", re.IGNORECASE)),
    ("at least", re.compile(rf"\b{AS_MUCH}\s+.+\bas\b", re.IGNORECASE)),
    ("different", re.compile(r"\b(?:disagree|differ)s?\s+(?:on|about|over|in)\b", re.IGNORECASE)),
    ("same", re.compile(r"\b(?:the same|equal|identical|agrees?\s+(?:on|about|over))\b", re.IGNORECASE)),
    ("different", re.compile(r"\bdifferent\b", re.IGNORECASE)),
)
#: what makes a comparison more than one of two values: a stance ("suggest", "agree with", "in the
#: same way"; "agree on the budget" compares values), a change, a document compared ("the same
#: source"), a second question or a time order beside it, a negation
MORE_THAN_VALUES = re.compile(
    r"\b(?:suggest\w*|claim\w*|impl\w*|indicat\w*|consisten\w*|inconsisten\w*|align\w*|"
    r"(?:dis)?agree\w*(?!\s+(?:on|about|over)\b)|"
    r"contradict\w*|similar\w*|chang\w*|way|while|whereas|or|not|no|never|\w+n't|also|before|after|"
    r"and\s+(?:does|did|do|is|was|were|are|has|have)|"
    r"same\s+(?:source|publication|outlet|article|report|author|publisher|day|date|time|month|year))\b",
    re.IGNORECASE,
)


def own_words(text: str) -> int:
    """The words of ``text`` that say what it is about."""
    return sum(word.lower() not in REFERRING for word in re.findall(r"[A-Za-z0-9][\w'-]*", text))


def part_of(text: str, number: int) -> QuestionPart:
    """A part searched by ``text`` alone, in the day or period it names (if it names one)."""
    when = next((period for _, period in periods(text)), None)
    return QuestionPart(None, when, text.strip(" ,;?"), named=f"part {number}", alone=True)


def clauses_of(question: str) -> list[str]:
    """The clauses of a question that refers to documents, each with words of its own, less a last
    one that only judges how the others relate (``judges_the_others``), where two remain; the
    shortest two joined while there are more than ``MAX_PARTS``."""
    text = question.strip().rstrip("?")
    dates = [match.span() for match in (*DATE.finditer(text), *re.finditer(r"\d,\d{3}\b", text))]
    cuts = [m for m in CLAUSE_BREAK.finditer(text) if not any(start < m.start() < end for start, end in dates)]
    bounds = [0, *(at for m in cuts for at in m.span()), len(text)]
    found = [text[start:end].strip() for start, end in zip(bounds[::2], bounds[1::2], strict=True)]
    kept = [text for text in found if own_words(text) >= OWN_WORDS]
    if len(kept) > 2 and judges_the_others(kept[-1]):
        kept.pop()
    while len(kept) > MAX_PARTS:
        shortest = min(range(len(kept) - 1), key=lambda n: own_words(kept[n]) + own_words(kept[n + 1]))
        kept[shortest : shortest + 2] = [f"{kept[shortest]}, {kept[shortest + 1]}"]
    return kept


def judges_the_others(clause: str) -> bool:
    """Whether ``clause`` asks how the reports the other clauses describe relate (``JUDGEMENT``),
    naming no date of a report of its own."""
    return JUDGEMENT.search(clause) is not None and not periods(clause) and DATE.search(clause) is None


def head_noun(phrase: str) -> str:
    return phrase.split()[-1]


def second_phrase(text: str, first: str) -> str | None:
    """The phrase ``text`` starts with, compared with ``first``: up to ``first``'s noun repeated,
    "one" (then ``first``'s noun), a number, or a verb or preposition; None when it is no phrase."""
    start = SECOND_START.match(text)
    if start is None:
        return None
    words = text[start.end() :].split()
    head = head_noun(first).lower().strip("?,;")
    for n, word in enumerate(words[:5], start=1):
        bare = word.strip("?,;").lower()
        if bare in (head, "one") or (n > 1 and any(c.isdigit() for c in bare)):
            end = start.end() + len(" ".join(words[:n]).rstrip("?,;"))
            return text[:end]
    stop = STOP.search(text, start.end())
    phrase = text[: stop.start() if stop else len(text)]
    return phrase if len(phrase.split()) <= 6 else None


def paired(question: str) -> list[str]:
    """A question that compares two phrases ("the 2023 handbook and the 2024 one", "release 2.1 and
    release 2.2", "more remote days than the 2023 handbook"), once with each in the place of both;
    "one" as the second phrase's noun takes the first's ("the 2024 one": "the 2024 handbook")."""
    if (alike := AS_AS.match(question.strip())) is not None:
        return [f"{alike['head']} {alike['first']}", f"{alike['head']} {alike['second']}"]
    if (than := THAN.search(question)) is not None:
        other = than["other"].strip()
        head = head_noun(other).lower()
        before = question[: than.start()]
        mine = re.search(rf"\b{DETERMINER}\s+(?:[\w'.-]+\s+){{0,3}}{re.escape(head)}\b", before, re.I)
        if mine is None:
            return []
        return [before, before[: mine.start()] + other + before[mine.end() :]]
    if not PAIR_COMPARES.search(question):
        return []
    for joined in re.finditer(r"\s+and\s+", question):
        first_match = FIRST_PHRASE.search(question[: joined.start()])
        if first_match is None:
            continue
        first = first_match[0]
        second = second_phrase(question[joined.end() :], first)
        if second is None or own_words(first) < 1 or own_words(second) < 1:
            continue
        before = re.sub(r"\bboth\s+$", "", question[: first_match.start()], flags=re.IGNORECASE)
        after = question[joined.end() + len(second) :]
        second = re.sub(r"^both\s+", "", second, flags=re.IGNORECASE)
        if second.split()[-1].lower() == "one":
            second = f"{second.rsplit(' ', 1)[0]} {head_noun(first)}"
        return [f"{before}{first}{after}", f"{before}{second}{after}"]
    return []


def events_of(match: re.Match[str]) -> tuple[str, str]:
    """The two events of an ``ORDERED`` match; a pronoun that starts the second ("before it was
    removed") stands for the first's subject."""
    first, second = match["first"], match["second"]
    subject = re.match(
        rf"^(?:{DETERMINER}\s+)?(?:[\w'.-]+\s+){{0,3}}?[\w'.-]+(?=\s+(?:was|were|is|are|\w+ed)\b)", first
    )
    if PRONOUN.match(second) and subject is not None:
        second = PRONOUN.sub(subject[0], second, count=1)
    return first, second


def ordered(question: str) -> list[str]:
    """The two events of "Was X before Y?" (``events_of``), each with words of its own."""
    match = ORDERED.match(question.strip().rstrip("?"))
    if match is None:
        return []
    first, second = events_of(match)
    if min(own_words(first), own_words(second)) < PHRASE_WORDS:
        return []
    return [first, second]


@dataclass(frozen=True)
class TimeOrder:
    """A question that asks only whether its first event came ``order`` its second: the order, and
    the two events as the question words them."""

    order: Literal["before", "after"]
    events: tuple[str, str]

    def for_parts(self, names: Sequence[str]) -> tuple[str, str]:
        """The events in the order of two parts whose publishers are ``names`` (``QuestionPart.named``:
        an outlet, or "part 1"): swapped when the second event names the first part's publisher and
        the first event the second's ("Did The Verge ... after TechCrunch ...?" split as TechCrunch,
        The Verge)."""
        first, second = (event.lower() for event in self.events)
        names = [name.lower() for name in names]
        if len(names) == 2 and names[0] in second and names[1] in first and names[0] not in first:
            return self.events[1], self.events[0]
        return self.events


def time_order(question: str) -> TimeOrder | None:
    """Whether the question asks only whether one event came before (or after) another ("Did the
    Platform Team deprecate the v1 API before removing it?"), and which: the events' order is
    then the answer, as the dates of the documents that report them tell it. None for a question
    that asks more ("Did X change its stance after Y reported ...?")."""
    match = ORDERED.match(question.strip().rstrip("?"))
    if match is None or MORE_THAN_ORDER.search(question):
        return None
    order: Literal["before", "after"] = "before" if match["order"].lower() in ("before", "earlier than") else "after"
    return TimeOrder(order, events_of(match))


def value_comparison(question: str) -> ValueRelation | None:
    """How a yes-or-no question relates the values its two parts state ("Did the 2023 handbook and
    the 2024 one give the same notice period?": "same"; "Does the 2024 handbook allow more remote
    days than the 2023 handbook?": "more", the first part's value against the second's); None for
    a question that asks more than two values ("Does X suggest a higher price, while Y ...?")."""
    text = question.strip()
    if not YES_OR_NO.match(text) or MORE_THAN_VALUES.search(text):
        return None
    return next((relation for relation, form in RELATIONS if form.search(text)), None)


def within(plan: QuestionPlan, question: str) -> QuestionPlan:
    """A question that names one publisher and asks only the order of two events ("Did the
    Platform Team deprecate the v1 API before removing it?") or compares two of its values ("Did
    the People Team's 2023 handbook and its 2024 handbook give the same notice period?"): a part
    each, both searched in that publisher's documents, so that each finds its own and their dates
    or values can be compared; any other plan as it is."""
    if len(plan.parts) != 1 or plan.parts[0].missing is not None:
        return plan
    asked = time_order(question)
    texts = asked.events if asked is not None else paired(question) if value_comparison(question) else ()
    if len(texts) != 2:
        return plan
    return QuestionPlan(tuple(replace(plan.parts[0], clause=text) for text in texts))


def chained(question: str) -> list[str]:
    """The questions of "Who leads the migration, and did it finish under budget?", each with
    words of its own."""
    if not re.match(ASKS, question, re.IGNORECASE):
        return []
    texts = [without_attribution(text) for text in CHAINED.split(question.strip().rstrip("?")) if text.strip()]
    return texts if len(texts) >= 2 and all(own_words(text) >= PHRASE_WORDS for text in texts) else []


def without_attribution(text: str) -> str:
    """``text`` without its pieces, between commas, that say nothing of what it asks ("as reported
    by one article and another article")."""
    return ", ".join(piece for piece in re.split(r",\s*", text.strip()) if own_words(piece))


def refers_to_documents(question: str) -> bool:
    """Whether a question refers to documents twice, or once beside a word that compares or orders."""
    documents = len(DOCUMENT.findall(question))
    return (
        needs_model_split(question) or documents >= 2 or (documents == 1 and PAIR_COMPARES.search(question) is not None)
    )


def plan_by_form(question: str) -> QuestionPlan:
    """The parts of a question that spans documents it does not name (see the module's
    docstring); WHOLE for a question of one part."""
    texts = clauses_of(question) if refers_to_documents(question) else []
    for form in (chained, ordered, paired):
        texts = texts if len(texts) >= 2 else form(question)
    if len(texts) < 2:
        return WHOLE
    return QuestionPlan(tuple(part_of(text, n) for n, text in enumerate(texts[:MAX_PARTS], 1)))
