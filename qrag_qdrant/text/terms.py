"""A text's terms as Qdrant's English BM25 analyser reads them (stems, no stopwords), and what
a word says about a question: how rare general English finds it, whether it only shapes the
question ("happens", "may", "how long"), the initials a name may be written as.

Every stage reads words this way: ingest counts them, the gate and the follow-up readings weigh
them, the answer checks look for them in a sentence."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from functools import cache, lru_cache
from pathlib import Path
from typing import Any


@cache
def _analyser() -> Any:
    """Qdrant's own English BM25 analyser: the stems and stopwords the BM25 retrievers use."""
    from qdrant_edge import Bm25, Bm25Config

    return Bm25(Bm25Config(k=1.2, b=0.75, avg_len=100.0, language="english"))


def terms(text: str) -> set[int]:
    """The analyser's distinct term ids of ``text``."""
    return set(_analyser().embed_query(text).indices)


@lru_cache(maxsize=1 << 16)
def word_terms(word: str) -> frozenset[int]:
    return frozenset(_analyser().embed_query(word).indices)


#: the analyser's own split into word characters
TOKEN = re.compile(r"\w+")


def question_terms_in(text: str, question: str) -> set[int]:
    """The analyser's terms of ``text`` that can be the question's, one distinct word at a time.

    Only the question's terms are ever looked for, and a word shares a stem with another only if
    both begin with the same two letters (over the analyser's own split into word characters), so
    other words are skipped. On 6,000 squad-dev question/paragraph pairs the question's terms
    found this way equal those of analysing the whole text; it takes about half the time, and
    cached words recur across questions.
    """
    prefixes = {word[:2] for word in TOKEN.findall(question.lower())}
    return set().union(*(word_terms(word) for word in set(TOKEN.findall(text.lower())) if word[:2] in prefixes))


#: Zipf frequencies (log10 of uses per billion words) between which a word goes from saying what a
#: question is about (rare: "diem" 3.0, "password" 4.1) to shaping it (common: "get" 6.3, "call"
#: 5.5); the analyser drops the stopwords before either
ZIPF_RARE, ZIPF_COMMON = 3.5, 6.0
#: how often general English uses each word at or above ``ZIPF_RARE``: "zipf<TAB>word" lines from
#: wordfreq's English list (``scripts/word_frequencies.py`` writes it; CC BY-SA 4.0, as its header
#: says), shipped in place of wordfreq and its 65 MB
ZIPF_TABLE = Path(__file__).with_name("english-zipf.tsv")


@cache
def _english_zipf() -> dict[str, float]:
    lines = ZIPF_TABLE.read_text(encoding="utf-8").splitlines()
    rows = (line.split("\t") for line in lines if not line.startswith("#"))  # the header: source, licence
    return {word: float(zipf) for zipf, word in rows}


def zipf_frequency(word: str) -> float:
    """How often general English uses ``word`` (lower case), on the Zipf scale; 0 for a word under
    ``ZIPF_RARE`` or with a digit (the table holds neither), which count as fully rare. A
    hyphenated word is its pieces' combined frequency, 1/f = 1/f1 + 1/f2 + ..., rounded to three
    significant digits (as wordfreq reads "follow-up")."""
    table = _english_zipf()
    pieces = [piece for piece in (part.strip("'") for part in word.split("-")) if piece]
    if not pieces or any(piece not in table for piece in pieces):
        return 0.0
    frequency = 1.0 / sum(10 ** (9 - table[piece]) for piece in pieces)
    frequency = round(frequency, math.floor(-math.log10(frequency)) + 3)
    return round(math.log10(frequency) + 9, 2)


def general_rarity(word: str) -> float:
    """1 for a word general English rarely uses, 0 for one it uses all the time."""
    return min(1.0, max(0.0, (ZIPF_COMMON - zipf_frequency(word)) / (ZIPF_COMMON - ZIPF_RARE)))


#: verbs a question asks with, not about ("What happens to ...?", "How long does it take?"): no
#: sentence that answers need repeat them, so they carry no weight (every form the analyser keeps)
GENERIC_VERB_FORMS = (
    "happen happens happened happening occur occurs occurred do does did done doing get gets got gotten "
    "getting take takes took taken taking have has had having make makes made making go goes went gone "
    "locate locates located locating situated "
    "going become becomes became come comes came give gives gave given need needs needed"
)
GENERIC_VERBS = frozenset(GENERIC_VERB_FORMS.split())
#: modal verbs: how a question asks ("How long may I park?", "What should I bring?"), never what about
MODAL_VERBS = frozenset(["can", "could", "may", "might", "must", "shall", "should", "would"])
#: adverbs a question asks with ("Approximately how many ...?", "Who else ...?", "Besides X, what
#: ...?"): the sentence that answers states the amount, or the other one, without them
ASKING_ADVERBS = frozenset(["approximately", "roughly", "else", "besides"])
#: "How long", "how much", "how often": the asking word and this one ask for a quantity, which the
#: answer's sentence states ("for at most 2 hours") without either
HOW_WORDS = re.compile(
    r"\bhow\s+(?:long|much|many|often|far|old|big|large|small|tall|high|deep|wide|heavy|early|late|soon|fast)\b"
)


def words_of(text: str) -> dict[str, frozenset[int]]:
    """The words of ``text`` (lower case, once each, no numbers) that have analyser terms, with them."""
    found = dict.fromkeys(re.findall(r"[\w'-]+", text.lower()))
    return {word: ids for word in found if (ids := word_terms(word)) and not word.isdigit()}


#: the noun a question asks with ("In what country is Lisieux located?", "What sport attracts most
#: tourists?", "What year did ...?"): it names the kind of the answer, which the sentence that
#: answers may state ("France", "golf") without naming its kind; "kind of", "type of" before it
ASKED_NOUN = re.compile(
    r"^\s*(?:[A-Za-z]+\s+)?(?:[Ww]hat|[Ww]hich)\s+(?:(?P<kind>(?:kind|type|sort)s?)\s+of\s+)?(?P<noun>[a-z][\w'-]*)"
)
#: what follows a noun the question asks with ("In what country is ...?"), and a verb that may
#: ("What sport attracts ...?") where the word before it is no verb itself ("What causes floods?",
#: "What caused floods?")
AUXILIARY_AFTER = re.compile(
    r"\s+(?:is|was|are|were|did|does|do|has|have|had|can|could|will|would|should|may|might|must)\b"
)
VERB_AFTER = re.compile(r"\s+[a-z]+(?:s|ed)\b")


def asked_with(question: str) -> frozenset[str]:
    """The words ``question`` asks with that name the answer's kind (``ASKED_NOUN``), lower case:
    "kind" or "type" of "what kind of", and the noun after "what" or "which" where a verb follows it."""
    found = ASKED_NOUN.match(question)
    if found is None:
        return frozenset()
    noun = found["noun"]
    verb_follows = AUXILIARY_AFTER.match(question, found.end()) is not None or (
        VERB_AFTER.match(question, found.end()) is not None and not noun.endswith(("s", "ed"))
    )
    return frozenset(word for word in (found["kind"], noun if verb_follows else None) if word)


def question_words(question: str) -> dict[str, frozenset[int]]:
    """The question's content words (lower case, no numbers, no generic or modal verb or asking
    adverb, not the word of "how long" or "how much"; an abbreviation as its capitals: "V&A" is
    "va") with their analyser terms."""
    asking = GENERIC_VERBS | MODAL_VERBS | ASKING_ADVERBS
    question = POINTED_ABBREVIATION.sub(lambda written: abbreviation_letters(written.group()) or "", question)
    return {word: ids for word, ids in words_of(HOW_WORDS.sub(" how ", question.lower())).items() if word not in asking}


#: two to five capitalised words, "of (the)" or a hyphen between them: a name an abbreviation may
#: stand for ("European Union", "Department of Human Resources", "Sam Bankman-Fried")
CAPITALISED_RUN = re.compile(r"(?:\b[A-Z][a-z]+(?:\s+(?:of\s+(?:the\s+)?)?|-(?=[A-Z])|\b)){2,5}")
#: the fewest initials a name is searched by as well: two letters ("SA", "NY") stand for too much
SEARCHED_INITIALS = 3


#: an abbreviation written with points or an ampersand between its capitals: "U.S.", "V&A", "AT&T"
POINTED_ABBREVIATION = re.compile(r"(?<![\w&.])[A-Z]{1,3}(?:[.&][A-Z]{1,3})+\.?(?![\w&])")


def abbreviation_letters(word: str) -> str | None:
    """The capitals an abbreviation is made of, however it is written ("U.S." and "US" give "US",
    "V&A" "VA", "AT&T" "ATT"): what tells one abbreviation from another; None for a word that is
    no abbreviation ("Paris", "Ph.D.")."""
    word = word.strip()
    if POINTED_ABBREVIATION.fullmatch(word):
        return re.sub(r"[.&]", "", word)
    word = word.rstrip(".")  # a sentence's last word
    return word if len(word) >= 2 and word.isalpha() and word.isupper() else None


def written_abbreviations(text: str) -> set[str]:
    """The capitals of each abbreviation ``text`` writes, lower case, however written: "U.S." and
    "US" give "us", "V&A" "va"."""
    return {letters.lower() for word in re.findall(r"[\w.&]+", text) if (letters := abbreviation_letters(word))}


def initials(run: str) -> str:
    """The initials of a run's capitalised words, lower case, an opening "The" left out:
    "Department of Human Resources" gives "dhr", "Sam Bankman-Fried" "sbf", "The Wall Street
    Journal" "wsj"."""
    words = re.split(r"[\s-]+", run.removeprefix("The "))
    return "".join(word[0] for word in words if word and word[0].isupper()).lower()


def with_name_initials(text: str) -> str:
    """``text`` with the initials of each name it writes in full appended, in capitals, for the
    lexical search: news and reports write a person or body named in three words or more by its
    initials ("SBF allegedly tried to buy off Trump" for a question on Sam Bankman-Fried), which
    BM25 cannot match otherwise. An initialism no document holds adds nothing to a BM25 score, and
    one that means something else ("NFT" for a National Football Team) is a lexical hit the dense
    voters do not back, so it rarely reaches quorum. A run that starts the text is read without
    its first word, capitalised as a sentence starts ("Did Sam Bankman-Fried ...")."""
    runs = [match.group().strip() for match in CAPITALISED_RUN.finditer(text)]
    if runs and text.startswith(runs[0]):
        runs[0] = runs[0].partition(" ")[2]
    found = sorted({short.upper() for name in runs if len(short := initials(name)) >= SEARCHED_INITIALS})
    return " ".join([text, *found])


def with_initials(question: str, written: Callable[[str], bool], from_start: bool = True) -> str:
    """``question`` with each name (a ``CAPITALISED_RUN``) that ``written`` says is written as its
    initials replaced by them, in capitals ("the European Union" -> "the EU"). ``from_start``
    False: not a run that starts the question, capitalised as a sentence starts."""
    runs = {match.group().strip() for match in CAPITALISED_RUN.finditer(question) if from_start or match.start() > 0}
    for run in runs:
        if written(run):
            question = question.replace(run, initials(run).upper())
    return question
