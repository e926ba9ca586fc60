"""The details a question states, and whether the sentence an answer comes from states them too.

A question written to look answerable swaps one detail of a sentence: "opened on 11 of what month"
over a sentence that says 12, "Scenes filmed in Australia" over one that says Austria, "Newman
Thomas" for Thomas Newman. The rest of its words match, so coverage and relevance pass it. So every
specific the question states (a number, a year, a month or weekday, a capitalised name, a quoted
phrase) must be found in the answer's sentence, its heading or its document's title or publisher,
exactly: no near spelling, and a name's words in their order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...text.terms import initials, with_initials
from .reading import said_forms
from .sentence import MONTHS, NUMBER, values_of

#: a month or weekday alone (numbers are the answer check's ``NUMBER``), a quoted phrase
DAY_OR_MONTH = re.compile(rf"\b(?:{MONTHS})\b", re.IGNORECASE)
QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")
#: a run of capitalised words (a name): after the question's first word, or from it when the run has
#: two words or more ("Newman Thomas was ...?"; "Scenes were ...?" names nothing)
NAME = re.compile(
    r"(?:(?<=\S )[A-Z][\w'’.-]*|^[A-Z][\w'’.-]*(?=\s+[A-Z]))(?:\s+(?:(?:of|the|de|von|van|del|da)\s+)?[A-Z][\w'’.-]*)*"
)
#: a possessive's ending: "Spectre's" names Spectre
POSSESSIVE = re.compile(r"['’]s$")
#: capitalised words that are no name: question words, pronouns and the like, where a title starts one
NOT_NAME_WORDS = (
    "i what who whom whose which when where why how was were is are did does do the a an in on of for and "
    "according after before during"
)
NOT_NAMES = frozenset(NOT_NAME_WORDS.split())


def specifics(question: str) -> list[str]:
    """The details ``question`` states: numbers, days and months, quoted phrases, names."""
    found = [m.group(1) for m in QUOTED.finditer(question)]
    found += NUMBER.findall(question)
    # written as a name ("May", "Tuesday"), and not the modal that opens a question: "How long may I park?"
    found += [
        m.group()
        for m in DAY_OR_MONTH.finditer(question)
        if m.group()[0].isupper() and not (m.start() == 0 and m.group() == "May")
    ]
    for match in NAME.finditer(question):
        words = [POSSESSIVE.sub("", w) for w in match.group().split() if w.lower() not in NOT_NAMES]
        if words and not any(DAY_OR_MONTH.fullmatch(w) for w in words):
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


def own_specifics(text: str, others: Sequence[str]) -> list[str]:
    """The specifics of ``text`` that none of ``others`` states: what tells one part of a question
    from its siblings ("2023" in "Did the 2023 handbook give the same notice period?" beside "Did
    the 2024 handbook ...")."""
    theirs = {detail for other in others for detail in specifics(other)}
    return [detail for detail in specifics(text) if detail not in theirs]


def lacking(question: str, text: str) -> list[str]:
    """The specifics of ``question`` that ``text`` does not state exactly."""
    return missing_details(specifics(question), text)


def missing_details(details: list[str], text: str) -> list[str]:
    """The ``details`` (``specifics``) that ``text`` does not state exactly."""
    plain = text.lower()
    numbers = values_of(text).get("number", set())  # 1,200 and 1200 are one
    words = [POSSESSIVE.sub("", word.strip(".")) for word in re.findall(r"[\w'’.-]+", plain)]
    missing = []
    for detail in details:
        if NUMBER.fullmatch(detail):
            held = detail.replace(",", "") in numbers
        elif " " in detail or (detail[:1].isupper() and not DAY_OR_MONTH.fullmatch(detail)):
            held = name_held(detail.lower().split(), words) or abbreviated(detail, text)
        else:
            held = re.search(rf"\b{re.escape(detail.lower())}\b", plain) is not None
        if not held:
            missing.append(detail)
    return missing


def abbreviated(name: str, text: str) -> bool:
    """Whether ``text`` writes a name of several words as its initials, in capitals: "EU" for
    "European Union" ("us" is no "United States")."""
    short = initials(name).upper()
    return len(short) >= 2 and short in {word.replace(".", "") for word in re.findall(r"[\w.]+", text)}


def as_written(question: str, text: str) -> str:
    """``question`` with each name ``text`` writes as its initials so written ("the European Union"
    over a sentence that says "EU" reads "the EU"), for the share of its words the sentence holds."""
    return with_initials(question, lambda run: abbreviated(run, text))


def name_held(name: list[str], words: list[str]) -> bool:
    """A name is held when its last word is (or its plural: "DVD" by "DVDs"), and those of its
    words the text holds come in its order ("Frank Burnet" by "Burnet"; "Newman Thomas" not by
    "Thomas Newman")."""

    def place(part: str) -> int | None:
        return next((words.index(said) for said in said_forms(part) if said in words), None)

    name = [part.strip(".") for part in name]
    if place(name[-1]) is None:
        return False
    places = [at for part in name if (at := place(part)) is not None]
    return places == sorted(places)
