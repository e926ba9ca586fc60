"""Words typed with a slip: a question's word that is a near spelling of a word the documents use.

People type "guage" for "gauge" and "Kllbrandon" for "Kilbrandon"; the analyser's stems then
match nothing, and the word reads as something no document says. The answer checks accept a
near spelling of a word of the cited passages (``near_spelling``); the evidence gate reads a
question's word that no chunk of the namespace holds as the retrieved evidence's word it
misspells (``term_stats.with_spellings``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: how alike two spellings must be (difflib's ratio) for one word to be a typo of the other
NEAR_SPELLING = 0.8


def spelling_ratio(word: str, other: str) -> float:
    """How alike two spellings are: difflib's ratio, 1.0 for the same."""
    return difflib.SequenceMatcher(None, word, other).ratio()


def near_spelling(word: str, spelled: Iterable[str]) -> bool:
    """A typo of one of ``spelled`` (``spelling_ratio`` at least ``NEAR_SPELLING``), for a word of
    four letters or more."""
    return len(word) > 3 and any(spelling_ratio(word, token) >= NEAR_SPELLING for token in spelled)


def misspelt(word: str, spelled: Iterable[str]) -> str | None:
    """The word of ``spelled`` that ``word`` most likely misspells, or None: the nearest spelling
    at ``NEAR_SPELLING`` or above that starts with the same letter and is at most two letters
    longer or shorter, for a word of five letters or more (a slip seldom hits the first letter or
    drops a syllable: "methylmercaptopurine" is no slip for "mercaptopurine"; short words have
    too many neighbours)."""
    if len(word) < 5:
        return None
    near = [
        (spelling_ratio(word, token), token)
        for token in spelled
        if token[:1] == word[:1] and token != word and abs(len(token) - len(word)) <= 2
    ]
    best = max(near, default=None)
    return best[1] if best is not None and best[0] >= NEAR_SPELLING else None
