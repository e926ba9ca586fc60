"""A claim whose pieces come from different passages: "Google and Apple [1][3]", with Google in
passage 1 and Apple in passage 3. No one passage holds the claim whole, so the exact grounding
check cannot hold it; each piece of the list is held instead to the passages the claim cites.
The claim is grounded when every piece is found, after normalisation, in one of them, and
relevant when the sentence holding each piece has at least ``generation.min_relevance`` of the
question's words (of its part's own words, for a passage of one part of a question). A claim
with one piece that no cited passage holds is still not found."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ...results import Passage, QuestionPartEvidence
from ...text.terms import terms
from .reading import STRIPPED, holding_sentences, holds, normalised
from .sentence import relevance_of
from .verdict import own_words

#: what joins the pieces of a listed answer: a comma, a semicolon, "and", "or", "as well as", "&"
JOINER = re.compile(r"(?:\s*(?:[,;&]|\band\b|\bor\b|\bas well as\b)\s*)+", re.IGNORECASE)


@dataclass(frozen=True)
class PiecesCheck:
    """Each piece's best sentence in the cited passages, its share of the question's words, and
    where it is; or the first piece no cited passage holds."""

    relevance: float = 0.0
    sentences: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    not_found: str | None = None


def pieces_of(words: str) -> list[str]:
    """The pieces of a claim's own words when they list two or more things ("Google and Apple",
    "Paris, Lyon or Nice"); none for one, or for a piece that holds no word of substance."""
    found = [piece for piece in (piece.strip(STRIPPED) for piece in JOINER.split(words)) if piece]
    if len(found) < 2 or not all(terms(piece) for piece in found):
        return []
    return found


def pieces_check(
    pieces: Sequence[str],
    cited: Collection[int],
    passages: Sequence[Passage],
    question: str,
    parts: Sequence[QuestionPartEvidence],
) -> PiecesCheck:
    """Every piece against the passages numbered in ``cited``, in the grounding check's normal form."""
    asked = terms(question)
    asked_of = {number: own_words(part) for part in parts for number in part.citations}
    relevances: list[float] = []
    sentences: list[str] = []
    locations: list[str] = []
    for piece in pieces:
        words = normalised(piece)
        holders = [p for p in passages if p.citation in cited and holds(p.text, words)]
        if not holders:
            return PiecesCheck(not_found=piece)
        claimed = terms(piece)
        share, sentence, holder = max(
            (
                (relevance_of(claimed, asked_of.get(p.citation, asked), [s]), s, p)
                for p in holders
                for s in holding_sentences(piece, p.text) or [p.text]
            ),
            key=lambda found: found[0],
        )
        relevances.append(share)
        sentences.append(sentence.strip())
        locations.append(holder.location)
    return PiecesCheck(min(relevances), sentences, locations)
