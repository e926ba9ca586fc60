"""Numbers as documents write them: in figures ("1,200"), in words ("five", "fourth") and, for a
king or a war, in Roman numerals ("Henry VIII", "World War II"). A number a question states in
one way is the number a sentence states in another."""

from __future__ import annotations

import re

#: counts written in words, as documents write small ones
COUNTS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100}
NUMBER_NAMES = {
    word: n for n, word in enumerate([*COUNTS.split(), "seventeen", "eighteen", "nineteen", "twenty"])
} | TENS
#: ordinals in words: "fourth" is 4 ("4th" in figures)
ORDINAL_WORDS = (
    "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth "
    "fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"
)
ORDINALS = {word: n for n, word in enumerate(ORDINAL_WORDS.split(), start=1)}
#: every number said in words, counts and ordinals
SAID_NUMBERS = NUMBER_NAMES | ORDINALS
#: a number in figures: 1,200 and 1200 are one
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
#: a number in words, or a Roman numeral of two letters or more ("I" is a pronoun)
IN_WORDS = re.compile(rf"\b(?i:{'|'.join(SAID_NUMBERS)})\b|\b[IVX]{{2,}}\b")
ROMAN = {"I": 1, "V": 5, "X": 10}


def roman(numeral: str) -> int:
    """The value of a Roman numeral of I, V and X ("XIV": 14)."""
    values = [ROMAN[letter] for letter in numeral]
    return sum(-value if value < after else value for value, after in zip(values, [*values[1:], 0]))


def numbers_in(text: str) -> set[str]:
    """The numbers ``text`` states, in figures without their thousands' commas: "1,200", "five",
    "fourth" and "World War II" give "1200", "5", "4" and "2"."""
    found = {match.replace(",", "") for match in NUMBER.findall(text)}
    for match in IN_WORDS.findall(text):
        found.add(str(SAID_NUMBERS[match.lower()] if match.lower() in SAID_NUMBERS else roman(match)))
    return found
