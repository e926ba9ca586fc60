"""How the answer checks read an answer's words and the passages it cites: one normal form for
both (``normalised``), a claim's own words (``bare``), and each passage's sentences found once
(``sentences_of``), so that every check of every claim reads the same sentences without cutting
a passage again."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from ...text.sentences import sentences

CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
LABEL = re.compile(r"^\s*(?:answer|quote)\s*:\s*", re.IGNORECASE)
NOT_WORD = re.compile(r"[\W_]+")
#: currency symbols, kept as words where other punctuation goes: "£71,000" is not what "$71,000" says
CURRENCIES = {"$": "usd", "£": "gbp", "€": "eur", "¥": "jpy", "₹": "inr"}
CURRENCY = re.compile("|".join(map(re.escape, CURRENCIES)))
#: the punctuation and quotes around a claim's words, or a piece's
STRIPPED = " .,;:\"'“”‘’"


@lru_cache(maxsize=512)
def sentences_of(text: str) -> tuple[str, ...]:
    """A passage's sentences (``text.sentences``), cut once however many claims and checks read
    them."""
    return tuple(sentences(text))


def bare(text: str) -> str:
    """A claim's own words: no citations, label (``Answer:``) or surrounding quotes."""
    return LABEL.sub("", CITATION.sub("", text)).strip().strip(STRIPPED).strip()


@lru_cache(maxsize=4096)
def normalised(text: str) -> str:
    """Case, accents' forms, punctuation and spacing aside: `` 19 march 1932 ``; a currency symbol
    is a word (`` gbp 71 000 ``)."""
    text = CURRENCY.sub(lambda symbol: f" {CURRENCIES[symbol[0]]} ", unicodedata.normalize("NFKC", text))
    return f" {' '.join(NOT_WORD.sub(' ', text.casefold()).split())} "


#: a possessive's ending: "Spectre's" names Spectre, "Israel's" Israel
POSSESSIVE = re.compile(r"['’]s$")
#: the endings a word's plural may add ("thursdays", "dvds", "boxes"): a word is said in its plural too
PLURAL_ENDINGS = ("s", "es")
#: a word of "-man", whose plural is "-men" and the other way round ("Frenchman", "Frenchmen";
#: "women", "woman"); two letters before it at least ("omen" is no "Oman")
MAN_OR_MEN = re.compile(r"(?<=\w{2})m([ae])n$")


def said_forms(word: str) -> tuple[str, ...]:
    """``word`` and its plurals (``PLURAL_ENDINGS``), as a sentence may say it: "dvd", "dvds",
    "dvdes"; a word of "-man" in "-men" too, and the other way round ("3,600 Frenchmen" says how
    many "Frenchman" asks)."""
    other = MAN_OR_MEN.sub(lambda found: "men" if found[1] == "a" else "man", word)
    return (word, *(word + ending for ending in PLURAL_ENDINGS), *((other,) if other != word else ()))


#: the endings of an adjective's degrees ("richer", "richest"), the shortest base each leaves
DEGREE_ENDINGS = (("est", 3), ("er", 3))


def degree_forms(word: str) -> set[str]:
    """An adjective's other degrees, where ``word`` (lower case) reads as a comparative or a
    superlative: "richer" is said by "rich" and "richest", "hottest" by "hot", "latest" by "late",
    "earliest" by "early". Empty for a word with neither ending; a form that is no word matches
    nothing."""
    for ending, shortest in DEGREE_ENDINGS:
        base = word.removesuffix(ending)
        if base != word and len(base) >= shortest:
            bases = {base}
            if len(base) > 3 and base[-1] == base[-2]:  # "hott" of "hottest"
                bases.add(base[:-1])
            if base.endswith("i"):  # "earli" of "earliest"
                bases.add(base[:-1] + "y")
            return {form for b in bases for form in (b, b + "e", b + "er", b + "est")} - {word}
    return set()


@lru_cache(maxsize=1024)
def _as_said(words: str) -> re.Pattern[str]:
    """``words`` (normalised) where a word may also be said in its plural: "thursday" in "on thursdays"."""
    endings = f"(?:{'|'.join(PLURAL_ENDINGS)})?"
    plural = [re.escape(word) + (endings if word.isalpha() else "") for word in words.split()]
    return re.compile(" " + " ".join(plural) + " ")


def holds(text: str, words: str) -> bool:
    """Whether ``text`` holds ``words`` (normalised) after normalisation, a word of them in its
    plural too: a claim "Thursday" is what "given on Thursdays" says."""
    found = normalised(text)
    return words in found or (bool(words.strip()) and _as_said(words).search(found) is not None)


def holding_sentences(words: str, passage: str) -> list[str]:
    """The sentences of ``passage`` that hold ``words`` (a claim's own, or a piece's) after
    normalisation: none when they cross a sentence boundary."""
    found = normalised(words)
    return [s for s in sentences_of(passage) if holds(s, found)]
