"""Support decided at the sentence: the sentence of a cited passage that holds the answer must say
what the question asks about, and no other sentence of the cited passages may answer it as well
with another value.

A small reader copies a plausible value from the passage it is shown: asked about sick days over a
passage on vacation days, it answers with the vacation figure, grounded and cited. Which words of
the question matter is read from how rare they are (``text.term_stats.key_term_weights``:
general language and the namespace), so "call" cannot block an answer and "sick" can. The holding
sentence, with the headings above it (and the sentence before it, where it points back to that one:
"He came back to Lahore in 1908."), must carry ``generation.min_coverage`` of the question's
weight. And when another sentence of the cited passages matches the question better and
gives a different value of the answer's kind (a number, a date, a name), the answer is ambiguous:
the passage holds a rival ("domestic travel: NOK 550" beside "international travel: NOK 800").
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ...results import Passage
from ...text.dates import MONTHS
from ...text.numbers import NUMBER
from ...text.spelling import near_spelling
from ...text.terms import CAPITALISED_RUN, initials, terms, word_terms, written_abbreviations
from .reading import POSSESSIVE, degree_forms, said_forms, sentences_of

#: a missing word is named (in the mark's reason) when it weighs this share of the weightiest word:
#: "sick" is, "many" in "how many sick days" is not
SHOWN_SHARE = 0.2
#: values of a kind the answer and a rival sentence can hold: numbers and amounts (``text.numbers.NUMBER``
#: in figures), dates and times, names (capitalised words after a sentence's first)
DAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: a month's or a weekday's name, as a pattern's alternatives
MONTHS_OR_DAYS = "|".join((*MONTHS, *DAY_NAMES))
TIME = re.compile(rf"\b(?:{MONTHS_OR_DAYS})\b|\b\d{{1,2}}:\d{{2}}\b|\b(?:1[0-9]|20)\d{{2}}\b", re.IGNORECASE)
NAME = re.compile(r"(?<=[\w,;:)\]] )[A-Z][\w'-]+(?:\s+[A-Z][\w'-]+)*")


@dataclass(frozen=True)
class SentenceCheck:
    """What the sentence that holds a claim says about the question."""

    #: the sentence (with its heading path when the passage has one)
    sentence: str
    #: the share of the question's key-word weight the sentence carries
    coverage: float
    #: the question's key words it lacks, weightiest first (those worth naming)
    missing: tuple[str, ...]
    #: another sentence of the cited passages that answers as well with another value, if any
    rival: str | None
    #: the share the sentence carries with its headings alone, without the sentence it points back
    #: to: whether the answer's own sentence says what was asked, where a hesitant model is trusted
    coverage_alone: float


def read_together(*parts: str | None) -> str:
    """What a sentence is read with (a document's name, a heading, the sentence it points back to,
    the sentence, a publisher), as one text whose parts a name cannot run across: "Films",
    "Spectre" and "The Harbour Film Society ..." joined by spaces would be one run of capitalised
    words, whose initials lose "HFS"."""
    return " | ".join(part for part in parts if part)


def spelled_words(text: str) -> set[str]:
    """The words of ``text`` as spelled, lower case, for the readings no stemmer makes (a typo, a
    plural, an adjective's degree)."""
    return set(re.findall(r"\w+", text.lower()))


def coverage(
    text: str, weights: Mapping[str, float], asked: frozenset[str] = frozenset()
) -> tuple[float, tuple[str, ...]]:
    """The share of ``weights`` whose words ``text`` holds (by the analyser's stems, in the plural
    the stemmer leaves alone: "DVDs" for "DVD", as a near spelling: "Counil" for "Council", as an
    abbreviation either way: "EU", or in ``PARAPHRASES``' words), and the words it lacks that
    weigh enough to name, weightiest first. A word of ``asked``, the noun the question asks with
    ("country" of "In what country ...?", ``terms.asked_with``), counts where ``text`` says it and
    is not asked of it where it does not: "Lisieux in Normandy, France" answers it. A question
    without key words is covered whole."""
    total = sum(weights.values())
    if not total:
        return 1.0, ()
    held = terms(text)
    spelled = spelled_words(text)
    missing = [
        word
        for word in weights
        if not word_terms(word) <= held
        and not {*said_forms(word.lower()), *degree_forms(word.lower())} & spelled
        and not near_spelling(word, spelled)
        and not paraphrased(word, text)
    ]
    short = abbreviations(text) if missing else set()
    missing = sorted(
        (word for word in missing if word not in short and not spelled_out(word, missing, spelled)),
        key=lambda w: -weights[w],
    )
    total -= sum(weights[word] for word in missing if word in asked)
    missing = [word for word in missing if word not in asked]
    if total <= 0:
        return 1.0, ()
    share = round(1 - sum(weights[word] for word in missing) / total, 4)
    floor = SHOWN_SHARE * max(weights.values())
    return share, tuple(word for word in missing if weights[word] >= floor)


#: a question's word of quantity and the words a sentence states it with ("the maximum number" is
#: "at most six", "up to six")
PARAPHRASES = {
    "maximum": re.compile(r"\b(?:at most|up to|no more than|max(?:imum)?|limit(?:ed)?|capacity)\b", re.IGNORECASE),
    "minimum": re.compile(r"\b(?:at least|no (?:less|fewer) than|min(?:imum)?)\b", re.IGNORECASE),
    "required": re.compile(r"\b(?:must|mandatory|obligatory|(?:has|have|need|needs) to)\b", re.IGNORECASE),
}


def paraphrased(word: str, text: str) -> bool:
    """Whether ``text`` says ``word`` in other words (``PARAPHRASES``)."""
    said = PARAPHRASES.get(word)
    return said is not None and said.search(text) is not None


#: "and" or "&" between two capitalised words, which an abbreviation leaves out or writes as "&":
#: "V&A" is the Victoria and Albert Museum, "S&P" Standard & Poor's
JOINED_BY_AND = re.compile(r"\b([A-Z][a-z]+)\s+(?:and|&)\s+(?=[A-Z][a-z])")


def abbreviations(text: str) -> set[str]:
    """The abbreviations ``text`` spells out or writes, lower case: the initials of two or more
    consecutive capitalised words, "and" between them left out ("European Union" gives "eu"; "The
    Department of Human Resources" "dhr", "hr"; "the Victoria and Albert Museum" "va", "vam"), and
    the capitals of those it writes, with points or an ampersand too ("U.S." gives "us")."""
    found = written_abbreviations(text)
    for run in CAPITALISED_RUN.findall(JOINED_BY_AND.sub(r"\1 ", text)):
        short = initials(run)
        found |= {short[i:j] for i in range(len(short)) for j in range(i + 2, len(short) + 1)}
    return found


def spelled_out(word: str, missing: Sequence[str], spelled: set[str]) -> bool:
    """Whether ``word`` is one of consecutive question words whose initials the text writes as an
    abbreviation ("European Union" in the question, "EU" in the sentence)."""
    at = missing.index(word)
    for start in range(max(0, at - 4), at + 1):
        for end in range(at + 1, min(len(missing), start + 5) + 1):
            if end - start >= 2 and "".join(w[0] for w in missing[start:end]) in spelled:
                return True
    return False


def relevance_of(claimed: set[int], asked: set[int], holding: Sequence[str]) -> float:
    """The share of the question's words (``asked``) in the best of the sentences ``holding`` a
    claim; 0.0 when the claim adds no word to the question's (an echo, not an answer), 1.0 for a
    question of stopwords."""
    if claimed and claimed <= asked:
        return 0.0
    if not asked:
        return 1.0
    return round(max(len(asked & terms(sentence)) for sentence in holding) / len(asked), 4)


def value_of(kind: str, match: str) -> str:
    """A number, date or name as ``values_of`` keeps it: ``1,200`` and ``1200`` are one."""
    return match.replace(",", "") if kind == "number" else match.lower()


def values_of(text: str) -> dict[str, set[str]]:
    """The numbers, dates and names ``text`` holds, normalised (``value_of``)."""
    patterns = {"number": NUMBER, "time": TIME, "name": NAME}
    found = {kind: {value_of(kind, match) for match in pattern.findall(text)} for kind, pattern in patterns.items()}
    return {kind: held for kind, held in found.items() if held}


def kinds_of(answer: str) -> dict[str, set[str]]:
    """The answer's own values, by kind; a name only when it has no number or date (a capitalised
    word opens most short answers). A capitalised answer ("the" aside) is a name whole too:
    ``values_of`` reads a name after a sentence's first word, so "Saudi Arabia" alone would be
    "Arabia", and "the Treaty on European Union (TEU)" would lose its "TEU"."""
    found = values_of(answer)
    if re.sub(r"^the\s+", "", answer, flags=re.IGNORECASE)[:1].isupper():
        found.setdefault("name", set()).add(answer.lower())
    if "number" in found or "time" in found:
        found.pop("name", None)
    return found


def sentence_check(
    claim_words: str,
    holding: str,
    heading: str | None,
    cited: Sequence[Passage],
    weights: Mapping[str, float],
    unseen: Sequence[str] = (),
    lacking: Sequence[str] = (),
    referred: str = "",
    asked: frozenset[str] = frozenset(),
) -> SentenceCheck:
    """The holding sentence's coverage of the question (with its ``heading`` and the sentence it
    points back to, ``referred``), and a rival sentence in ``cited`` if one matches the question
    better with a different value of the answer's kind. A word of ``unseen`` (rare, and in no
    document of the namespace) that the cited passages do not hold as a near spelling either, or a
    specific of the question the sentence ``lacking`` leaves out (``specifics.lacking``), makes the
    coverage 0: the answer is to another question."""
    own, missing = coverage(read_together(heading, referred, holding), weights, asked)
    alone = coverage(read_together(heading, holding), weights, asked)[0] if referred else own
    rival = rival_of(claim_words, holding, own, cited, weights)
    # a word its file's name says
    text = read_together(*(part for passage in cited for part in (passage.document_name, passage.text)))
    spelled = spelled_words(text)
    short = abbreviations(text) if unseen else set()  # "PO" for the Presiding Officer
    absent = [
        word
        for word in unseen
        if not near_spelling(word, spelled)
        and not degree_forms(word) & spelled
        and not paraphrased(word, text)
        and word not in short
    ]
    absent = [*lacking, *(word for word in absent if word not in lacking)]  # a swapped detail named first
    if absent:  # the question is about something else; a rival still has to beat what the sentence says
        own, alone, missing = 0.0, 0.0, (*absent, *(word for word in missing if word not in absent))
    return SentenceCheck(holding.strip(), own, missing, rival, alone)


def offered_values(sentence: str, weights: Mapping[str, float]) -> dict[str, set[str]]:
    """The values ``sentence`` offers as an answer: those it holds (``values_of``) less the ones
    the question states itself, every word of them a key word of the question ("Super Bowl" in
    "the oldest quarterback to play in a Super Bowl" is asked about, not an answer to it), and
    the capitalised words that say nothing ("Who" of "Doctor Who" opening a sentence)."""
    asked = set(weights)
    found = {
        kind: {value for value in held if terms(value) and not name_words(value) <= asked}
        for kind, held in values_of(sentence).items()
    }
    return {kind: held for kind, held in found.items() if held}


def rival_of(
    claim_words: str,
    holding: str,
    own: float,
    cited: Sequence[Passage],
    weights: Mapping[str, float],
) -> str | None:
    answer = kinds_of(claim_words)
    if not answer or not weights:
        return None
    for passage in cited:
        headings = {passage.heading, passage.title, *(heading for _, heading in passage.heading_marks)}
        for sentence in sentences_of(passage.text):
            if not sentence.strip() or sentence.strip() == holding.strip() or is_heading(sentence, headings):
                continue
            score, _ = coverage(sentence, weights)
            # a sentence that only ties the holding one is as often another fact the question does not ask
            if score <= own:
                continue
            held = offered_values(sentence, weights)
            for kind, values in answer.items():
                if held.get(kind) and not any(same_value(kind, value, values) for value in held[kind]):
                    return sentence.strip()
    return None


def name_words(value: str) -> set[str]:
    """A name's words, lower case, without a possessive: "Israel's" is Israel."""
    return {POSSESSIVE.sub("", word.strip('()[],;:"')) for word in value.lower().split()}


def same_value(kind: str, held: str, values: set[str]) -> bool:
    """Whether a value a sentence offers is the answer's: one of ``values``, or for a name, one of
    its words or a name that holds it whole ("Saudi" of "Saudi Arabia", "TEU" of "the Treaty on
    European Union (TEU)"). "New Paltz" is no "New Rochelle": every word must be the other's."""
    if held in values:
        return True
    if kind != "name":
        return False
    words = name_words(held)
    return any(words <= (own := name_words(value)) or own <= words for value in values)


def is_heading(sentence: str, headings: set[str | None]) -> bool:
    """A heading or title names what follows it; it answers no question, so it is no rival: a
    Markdown heading line, or one of the passage's headings or its title."""
    line = sentence.strip()
    named = {part.strip() for heading in headings if heading for part in heading.split("›")}  # a heading path
    return line.startswith("#") or line in named


#: a Markdown heading line a passage's text holds (a loader that keeps them in the text)
MARKDOWN_HEADING = re.compile(r"^#+\s+(.+)$", re.MULTILINE)


def heading_above(text: str, offset: int) -> str | None:
    """The last Markdown heading line of ``text`` before ``offset``, if it holds one."""
    lines = MARKDOWN_HEADING.findall(text[:offset])
    return lines[-1] if lines else None


#: a sentence that names what it is about by pointing back: opening, or after an opening phrase of
#: up to four words and a comma ("In response,"), with a pronoun, a possessive or a demonstrative
#: ("He came back to Lahore in 1908.", "His successor ...", and after one word: "However that
#: year, ..."), or with "the" and a word or two in lower case (group 1) that may name again what
#: the sentence before it named ("The company installed ..."; "the Harbour Gallery Weekend" is a
#: name, "Returns after the trial ..." speaks of returns)
OPENING_PHRASE = r"(?:[\w'’-]+\s+){0,3}[\w'’-]+,\s+"
REFERS_BACK = re.compile(
    rf"^\W*(?:(?:{OPENING_PHRASE}|[\w'’-]+\s+)?(?i:he|she|it|they|his|her|its|their|this|these|those|that)\b|"
    rf"(?:{OPENING_PHRASE})?(?i:the)\s+((?:\d+\s+)?[a-z][\w'’-]*(?:\s+[a-z][\w'’-]*)?))"
)


def sentence_referred_to(text: str, sentence: str) -> str:
    """The sentence before ``sentence`` in ``text`` where ``sentence`` points back to it
    (``REFERS_BACK``): what "He" or "The company" names, which the question names in full ("What
    year did Iqbal return to Lahore?" over "He came back to Lahore in 1908."); "" where it points
    at nothing before it in ``text``."""
    opening = REFERS_BACK.match(sentence)
    if opening is None:
        return ""
    found = sentences_of(text)
    at = next((i for i, s in enumerate(found) if s.strip() == sentence.strip()), 0)
    before = found[at - 1] if at else ""
    named = opening.group(1)
    if not named:
        return before
    said = spelled_words(before)  # "the theater" names the Tower Theatre again
    return before if terms(named) & terms(before) or any(near_spelling(w, said) for w in named.split()) else ""


#: questions that ask for a place, a person or a thing by name: a bare time, date or number answers
#: none of them ("Where is lunch served?" "12:30")
ASKS_FOR_A_NAME = re.compile(r"^\W*(?:and\s+)?(?:where|who|whom|whose)\b", re.IGNORECASE)
#: questions that ask for a quantity: an answer with no number in figures or words answers none
ASKS_FOR_A_QUANTITY = re.compile(r"^\W*(?:and\s+)?how (?:much|many)\b", re.IGNORECASE)
NUMBER_WORDS = re.compile(
    r"\b(?:zero|none|no|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|"
    r"fifty|sixty|hundred|thousand|million|billion|dozen|half|third|quarter|single|double|free|percent|most|all|"
    r"several|few|many|majority)\b",
    re.IGNORECASE,
)


#: a question that asks for one year ("In what year did ABC stop using its jingle?"), and a span of
#: years, which names when something lasted, not the year asked ("1998–2002")
ASKS_FOR_A_YEAR = re.compile(r"\b(?:what|which)\s+year\b", re.IGNORECASE)
SPAN_OF_YEARS = re.compile(r"\b\d{4}\s*(?:[–—-]|to)\s*\d{4}\b")


def fits_the_question(question: str, answer: str) -> bool:
    """Whether the answer is of the kind the question asks for, where the question's form says it
    plainly: a place or a person is not a bare time or number, a year is not a span of years, a
    quantity holds a number."""
    bare_value = not re.sub(r"[\d\s:.,/%-]|\b(?:am|pm|a\.m\.|p\.m\.)\b", "", answer, flags=re.IGNORECASE)
    if ASKS_FOR_A_NAME.search(question) and (bare_value or TIME.fullmatch(answer.strip())):
        return False
    if ASKS_FOR_A_YEAR.search(question) and SPAN_OF_YEARS.search(answer):
        return False
    return not ASKS_FOR_A_QUANTITY.search(question) or bool(NUMBER.search(answer) or NUMBER_WORDS.search(answer))
