"""The details a question states, and whether the sentence an answer comes from states them too.

A question written to look answerable swaps one detail of a sentence: "opened on 11 of what month"
over a sentence that says 12, "Scenes filmed in Australia" over one that says Austria, "Newman
Thomas" for Thomas Newman, "the Ujazdow Gallery Weekend" for the Warsaw one, or asks what was
*not* so of a sentence that denies nothing. The rest of its words match, so coverage and relevance
pass it. So every specific the question states (a number, a year, a month or weekday, a
capitalised name, a quoted phrase) must be found in the answer's sentence, its heading or its
document's title (its file's name where there is none) or publisher, exactly: no near spelling
(accents aside), a name's words in their order and no other name's word in the place of one of
them; and a question's "not" needs a sentence that denies.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ...text.dates import MONTHS
from ...text.numbers import NUMBER, numbers_in
from ...text.spelling import near_spelling
from ...text.terms import abbreviation_letters, initials, with_initials, written_abbreviations
from .reading import POSSESSIVE, said_forms
from .sentence import MONTHS_OR_DAYS, abbreviations

#: a month or weekday alone (numbers are the answer check's ``NUMBER``), a quoted phrase
DAY_OR_MONTH = re.compile(rf"\b(?:{MONTHS_OR_DAYS})\b", re.IGNORECASE)
QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")
#: a month's short name: "Feb 2010" is February 2010
MONTH_SHORT = {name[:3]: name for name in MONTHS if name != "may"} | {"sept": "september"}
#: a run of capitalised words (a name): after the question's first word, or from it when the run has
#: two words or more ("Newman Thomas was ...?"; "Scenes were ...?" names nothing)
CAPITALISED = r"[A-Z][\w'’.&–—-]*"  # "V&A", "AT&T" are one word
NAME = re.compile(
    rf"(?:(?<=\S ){CAPITALISED}|^{CAPITALISED}(?=\s+[A-Z]))(?:\s+(?:(?:of|the|de|von|van|del|da)\s+)?{CAPITALISED})*"
)
#: capitalised words that are no name: question words, pronouns and the like, where a title starts one
NOT_NAME_WORDS = (
    "i what who whom whose which when where why how was were is are did does do the a an in on of for and "
    "according after before during"
)
NOT_NAMES = frozenset(NOT_NAME_WORDS.split())


def specifics(question: str) -> list[str]:
    """The details ``question`` states: numbers, days and months, quoted phrases, names."""
    found = [quoted for m in QUOTED.finditer(question) if (quoted := m.group(1).strip(" ?!.,;:"))]
    found += NUMBER.findall(question)
    # written as a name ("May", "Tuesday"), and not the modal that opens a question: "How long may I park?"
    found += [
        m.group()
        for m in DAY_OR_MONTH.finditer(question)
        if m.group()[0].isupper() and not (m.start() == 0 and m.group() == "May")
    ]
    for match in NAME.finditer(question):
        words = [word for w in match.group().split() if (word := quoteless(w)).lower() not in NOT_NAMES]
        if words and not any(DAY_OR_MONTH.fullmatch(w) for w in words):
            found.append(" ".join(words))
    return list(dict.fromkeys(found))


def quoteless(word: str) -> str:
    """A name's word without its possessive or the single quotes around it: "Spectre's", "Zhi'"
    (of 'Da Yuan Tong Zhi') and "'Forest'" are "Spectre", "Zhi" and "Forest"."""
    return POSSESSIVE.sub("", word).strip("'’")


def own_specifics(text: str, others: Sequence[str]) -> list[str]:
    """The specifics of ``text`` that none of ``others`` states: what tells one part of a question
    from its siblings ("2023" in "Did the 2023 handbook give the same notice period?" beside "Did
    the 2024 handbook ...")."""
    theirs = {detail for other in others for detail in specifics(other)}
    return [detail for detail in specifics(text) if detail not in theirs]


#: a question that asks what is not so ("What was not considered ...?")
NEGATED = re.compile(r"(?<!\bor )\b(?:not|never|cannot)\b|n['’]t\b", re.IGNORECASE)  # "whether or not" denies nothing
#: the ways a sentence denies or excludes something, any of which may be what such a question asks
DENIAL = re.compile(
    r"\b(?:not|never|cannot|no|nor|neither|none|nobody|nothing|without|lacks?|lacking|lacked|except|excluding|"
    r"fail(?:s|ed)?|unable|instead|rather|only|absent|outside|den(?:y|ies|ied)|refus(?:e|es|ed|al))\b|n['’]t\b",
    re.IGNORECASE,
)
#: the prefixes that negate a word: "not formal" is "informal", "did not agree" "disagreed"
NEGATING_PREFIX = r"(?:un|in|im|ir|il|non-?|dis)"


def lacking(question: str, text: str, answer: str = "") -> list[str]:
    """The specifics of ``question`` that ``text`` does not state exactly, and its "not" where it
    asks what is not so and ``text``, the ``answer`` it holds aside, denies nothing: "What was not
    considered an important element?" over "the lack of X remained an important element" asks the
    opposite of what the sentence says, whatever the answer's own "lack"."""
    missing = missing_details(specifics(question), text)
    denied = NEGATED.search(question)
    rest = re.sub(re.escape(answer), " ", text, flags=re.IGNORECASE) if answer.strip() else text
    return [*missing, denied.group()] if denied and not denies(question, rest) else missing


def unaccented(text: str) -> str:
    """``text`` without its accents: "the Ming dynasty" is what "the Míng dynasty" says."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def denies(question: str, text: str) -> bool:
    """Whether ``text`` denies or excludes anything: a word of denial, or one of the question's words
    with a negating prefix ("informal" for "not formal")."""
    negated = "|".join(re.escape(word) for word in re.findall(r"[a-z]{4,}", question.lower()))
    return bool(DENIAL.search(text) or (negated and re.search(rf"\b{NEGATING_PREFIX}(?:{negated})", text, re.I)))


#: an en or em dash, read as a hyphen in a name: "Polish–Lithuanian" is "Polish-Lithuanian"
DASH = re.compile("[–—]")
#: words that stand before a name in its first name's place: "President Wilson" is Woodrow Wilson
TITLE_WORDS = "president king queen prince princess sir dr mr mrs ms saint st pope emperor general lord lady"
TITLES = frozenset(TITLE_WORDS.split())


def missing_details(details: list[str], text: str) -> list[str]:
    """The ``details`` (``specifics``) that ``text`` does not state exactly, accents aside."""
    text = unaccented(text)
    plain = text.lower()
    numbers = numbers_in(text)  # 1,200 and 1200 are one, and five is 5
    tokens = list(re.finditer(r"[\w'’.&-]+", DASH.sub("-", text)))
    written = [quoteless(token.group().strip(".")) for token in tokens]
    words = [word.lower() for word in written]
    before = names_before(tokens, written)
    missing = []
    for asked in details:
        detail = unaccented(asked)
        if NUMBER.fullmatch(detail):
            held = detail.replace(",", "") in numbers
        elif (month := MONTH_SHORT.get(detail.lower().rstrip("."))) is not None:  # "Feb" is February
            held = re.search(rf"\b(?:{month}|{detail.rstrip('.')})\b", plain, re.IGNORECASE) is not None
        elif " " in detail or (detail[:1].isupper() and not DAY_OR_MONTH.fullmatch(detail)):
            held = name_stated(detail, text, words, before)
        else:
            held = re.search(rf"\b{re.escape(detail.lower())}\b", plain) is not None
        if not held:
            missing.append(asked)  # as the question spells it
    return missing


def name_stated(detail: str, text: str, words: list[str], before: Sequence[str | None]) -> bool:
    """Whether ``text`` states a name: its words (``name_held``), its initials in capitals ("EU" for
    "European Union"), or, where the name is itself an abbreviation, the capitalised words it
    abbreviates ("UMC" by "the United Methodist Church", "V&A" by "the Victoria and Albert Museum")
    or its capitals written otherwise ("U.S." by "US")."""
    held = name_held(DASH.sub("-", detail).split(), words, before) or abbreviated(detail, text)
    letters = abbreviation_letters(detail)
    return held or (letters is not None and letters.lower() in abbreviations(text))


def names_before(tokens: Sequence[re.Match[str]], written: Sequence[str]) -> list[str | None]:
    """For each word, the capitalised word right before it in one run of a name (a space between
    them, no punctuation; not a title or a word like "The"), lower case; None where there is none."""
    before: list[str | None] = [None]
    for prior, token, word in zip(tokens, tokens[1:], written):
        joined = token.string[prior.end() : token.start()].isspace()
        lowered = word.lower()
        before.append(lowered if joined and word[:1].isupper() and lowered not in NOT_NAMES | TITLES else None)
    return before


def abbreviated(name: str, text: str) -> bool:
    """Whether ``text`` writes a name of several words as its initials, in capitals: "EU" for
    "European Union" ("us" is no "United States")."""
    short = initials(name)
    return len(short) >= 2 and short in written_abbreviations(text)


def as_written(question: str, text: str) -> str:
    """``question`` with each name ``text`` writes as its initials so written ("the European Union"
    over a sentence that says "EU" reads "the EU"), for the share of its words the sentence holds."""
    return with_initials(question, lambda run: abbreviated(run, text))


def name_held(name: list[str], words: list[str], before: Sequence[str | None]) -> bool:
    """A name (its words as written) is held where its last word is (``name_forms``) with those of its
    words the text holds before it, in its order ("Frank Burnet" by "Burnet"; "Newman Thomas" not
    by "Thomas Newman"; "the Irish Channel" by "the English Channel, the Irish Channel"), and no
    other name's word where a word of it is missing ("Ujazdow Gallery Weekend" is not held by
    "Warsaw Gallery Weekend"; ``before``: ``names_before``). A near spelling there is the name's
    word misspelled ("Sigimund's Column")."""
    spots = [[at for at, word in enumerate(words) if word in forms] for forms in map(name_forms, name)]
    name = [part.strip(".").lower() for part in name]
    for end in spots[-1]:
        follower, held = end, True
        for part, found in zip(reversed(name[:-1]), reversed(spots[:-1])):
            earlier = [at for at in found if at < follower]
            if earlier:
                follower = earlier[-1]
                continue
            rival = before[follower]
            if found or (
                rival and rival not in name and part not in rival.split("-") and not near_spelling(part, {rival})
            ):
                held = False  # the word only after it, out of order, or another name's word in its place
                break
        if held:
            return True
    return False


#: the endings that make a place's name an adjective: "South African holdings" are held in South
#: Africa, "a Japanese firm" in Japan ("Austrian" is no "Australia")
ADJECTIVE_ENDINGS = ("n", "an", "ian", "ese")
#: the plural endings a name's word said in the plural may lose: "Huguenots", "Marches"
PLURAL_END = re.compile(r"(?<=[a-z]{3})(?:e?s)$")


def name_forms(word: str) -> set[str]:
    """A name's word (as the question writes it) as a sentence may say it, lower case: itself, its
    plurals ("DVDs" for "DVD"), and where the question says it in the plural, its singular ("a
    Huguenot family" for "the Huguenots"), a place's adjective ("African" for "Africa":
    ``ADJECTIVE_ENDINGS``), and its other spelling of "-re" ("Center" for "Centre", "Theatre" for
    "Theater"). An abbreviation keeps its last letter: "FISS" is no "FIS"."""
    lowered = word.strip(".").lower()
    forms = set(said_forms(lowered))
    if word.isupper():
        return forms
    forms |= {lowered + ending for ending in ADJECTIVE_ENDINGS}
    forms |= {lowered[:-2] + ending[::-1] for ending in ("re", "er") if len(lowered) > 4 and lowered.endswith(ending)}
    if PLURAL_END.search(lowered):
        forms |= {lowered[:-1], PLURAL_END.sub("", lowered)}  # "churches": "churche", "church"
    return forms
