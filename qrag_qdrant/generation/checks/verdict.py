"""A yes or no to a question of several parts ("Did TechCrunch report the delay, while The Verge
reported the suit?"). No passage holds the word "yes", so the exact grounding check cannot hold
it; the verdict rests instead on the passages it cites of each part. It is grounded when it cites
a passage of every part that has evidence, and relevant when, in each of those, a sentence holds
at least ``generation.min_relevance`` of that part's own words. A verdict that cites one side only
is "one-sided": it cannot have compared them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ...results import Passage, QuestionPartEvidence, uncited_part
from ...text.terms import terms
from .reading import sentences_of
from .sentence import relevance_of

#: what a verdict says, as the answer's short form reads after normalisation
VERDICTS = frozenset({"yes", "no", "true", "false"})


@dataclass(frozen=True)
class VerdictCheck:
    """What each part's cited passages say: the least share of a part's words found in the best
    sentence of its cited passages, those sentences and where they are; or the part it cites
    nothing of."""

    relevance: float = 0.0
    sentences: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    uncited_part: str | None = None


def is_verdict(words: str) -> bool:
    """``words``: a claim's own words, normalised (``reading.normalised``)."""
    return words.strip() in VERDICTS


def own_words(part: QuestionPartEvidence) -> set[int]:
    """The terms of a part's own words (its event's, in a question of time order), not its
    outlet's name."""
    return terms(part.event or part.searched_for) - terms(part.label)


def verdict_check(
    cited: Collection[int],
    parts: Sequence[QuestionPartEvidence],
    passages: Sequence[Passage],
) -> VerdictCheck:
    """Each part with evidence against the passages the verdict cites of it."""
    if (uncited := uncited_part(parts, cited)) is not None:
        return VerdictCheck(uncited_part=uncited)
    relevances: list[float] = []
    sentences: list[str] = []
    locations: list[str] = []
    for part in parts:
        if part.missing is not None:
            continue
        own = [p for p in passages if p.citation in cited and p.citation in part.citations]
        asked = own_words(part)  # a bare verdict repeats none of them: no claimed words
        share, sentence, passage = max(
            ((relevance_of(set(), asked, [s]), s, p) for p in own for s in sentences_of(p.text) or [p.text]),
            key=lambda found: found[0],
        )
        relevances.append(share)
        sentences.append(sentence.strip())
        locations.append(passage.location)
    return VerdictCheck(min(relevances, default=0.0), sentences, locations)
