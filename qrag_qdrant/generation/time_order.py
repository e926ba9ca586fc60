"""A question that asks only whether one event came before another ("Was the v1 API deprecated
before it was removed?", "Did Engadget report the discount before The Verge reported the sale?"),
answered from the dates of the documents that report each event: the order of two dates is
arithmetic, and the packaged model answers "Yes" to such questions whatever the dates say.

Retrieval says which questions ask that (``Evidence.time_order``, read from the question's form)
and searches each event as a part. The events' passages are chosen together among the passages
shown (``dated_answer``): each with a dated document, holding in one sentence at least
``generation.min_relevance`` of its event's words (the share the verdict check asks of a yes or
no to such a question) and every number and name the event states. Two such passages on different
days give the answer, "Yes [1][3]" or "No [1][3]", and the checks read it as they read the model's
verdict; anything less (an event no dated passage tells, the same day, a tie between two answers)
leaves the question to the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from ..results import Evidence, Passage, QuestionPartEvidence
from ..text.dates import stated_when
from .checks.reading import sentences_of
from .checks.sentence import relevance_of
from .checks.specifics import lacking
from .checks.verdict import own_words
from .compared_values import TITLE


@dataclass(frozen=True)
class DatedAnswer:
    """The verdict, the two passages whose dates gave it, and those dates."""

    holds: bool
    first: Passage
    second: Passage
    days: tuple[str, str]

    @property
    def text(self) -> str:
        """The answer as the model would write it: the verdict, then each side's passage."""
        return f"{'Yes' if self.holds else 'No'} [{self.first.citation}][{self.second.citation}]"

    @property
    def read(self) -> tuple[Passage, Passage]:
        """The passage each part's event was read from, in the parts' order."""
        return self.first, self.second

    @property
    def how(self) -> str:
        """What a reader is told of the computation: each passage's publisher, if known, and date."""
        sides = (
            f"[{passage.citation}] {', '.join(filter(None, (passage.publisher, day)))}"
            for passage, day in zip(self.read, self.days, strict=True)
        )
        return f"from the documents' dates: {', '.join(sides)}"


def fit(part: QuestionPartEvidence, passage: Passage, min_relevance: float) -> tuple[float, str] | None:
    """How well ``passage`` tells the part's event, and the sentence that tells it best: the most of
    the event's words (its publisher's name aside) one of its sentences holds, among the sentences
    that, with the passage's heading, title and publisher, state every number and name the event
    does (``specifics.lacking``: "raised to 500 MB" is not the sentence that says 200); None below
    ``min_relevance``."""
    event, asked = part.event or part.searched_for, own_words(part)
    about = " ".join(filter(None, (passage.heading, passage.title, passage.publisher)))
    shares = [
        (relevance_of(set(), asked, [sentence]), sentence)
        for sentence in sentences_of(passage.text) or (passage.text,)
        if not lacking(event, f"{sentence} {about}")
    ]
    best = max(shares, default=(0.0, ""), key=lambda found: found[0])
    return best if best[0] >= min_relevance else None


def when(passage: Passage, sentence: str) -> str | None:
    """The day (or month) an event a passage's ``sentence`` tells is dated: its document's
    publication day where its metadata has one, else the one date the sentence states ("on 12
    March 2023"), else the one its document's title, heading or file name states ("# Steering
    committee minutes, February 2023", "minutes-2023-02.md")."""
    if passage.published:
        return day(passage)
    title = TITLE.match(passage.text)
    named = (sentence, title[1] if title else None, passage.heading, passage.title, PurePosixPath(passage.source).stem)
    return next((stated for text in named if text and (stated := stated_when(text))), None)


def earlier(one: str, other: str) -> bool | None:
    """Whether the day or month ``one`` comes before ``other``, at the coarser of the two; None
    where they fall together ("2023-02" and "2023-02-08")."""
    common = min(len(one), len(other))
    return None if one[:common] == other[:common] else one[:common] < other[:common]


def dated_answer(evidence: Evidence, min_relevance: float) -> DatedAnswer | None:
    """The answer to a question that asks whether its first part's event came before (or after)
    its second's, from their dates (``when``); None where they do not tell it.

    The two events' passages are chosen together, among every passage shown whose event can be
    dated (an event a publisher's part names: among that publisher's, ``told_by``): the pair of
    passages of two documents that tell them best (the sum of each one's ``fit``); of pairs alike,
    the one whose passages are more of them their own part's, then the better ranked. A release note
    that says the v1 API "is deprecated and will be removed" tells the removal as well as the one
    that says "is removed", but not both events at once. A pair as good that gives the other
    answer, or dates that fall together, leave the question to the model."""
    if evidence.time_order is None or evidence.abstained or len(evidence.parts) != 2:
        return None
    shown = list(evidence.passages)
    publishers = {passage.publisher for passage in shown if passage.publisher}
    dated: list[list[tuple[float, str] | None]] = []
    for part in evidence.parts:
        fits = [fit(part, passage, min_relevance) if told_by(part, passage, publishers) else None for passage in shown]
        dated.append(
            [
                (found[0], stated) if found and (stated := when(passage, found[1])) else None
                for found, passage in zip(fits, shown, strict=True)
            ]
        )
    first_part, second_part = (set(part.citations) for part in evidence.parts)
    pairs = [
        # how well, then how many of the two are their own part's passages, then the better ranked
        (
            (one[0] + other[0], (shown[a].citation in first_part) + (shown[b].citation in second_part), -(a + b)),
            (a, b),
            (one[1], other[1]),
        )
        for a, one in enumerate(dated[0])
        if one is not None
        for b, other in enumerate(dated[1])
        if other is not None and shown[a].source != shown[b].source
    ]
    if not pairs:
        return None
    best = max(rank[0] for rank, _, _ in pairs)
    tied = sorted((pair for pair in pairs if pair[0][0] == best), reverse=True)
    before = evidence.time_order == "before"
    orders = [earlier(*days) for _, _, days in tied]
    answers = {order == before for order in orders if order is not None}
    _, (first, second), days = tied[0]
    if orders[0] is None or len(answers) != 1:
        return None
    return DatedAnswer(answers.pop(), shown[first], shown[second], days)


def told_by(part: QuestionPartEvidence, passage: Passage, publishers: set[str]) -> bool:
    """Whether ``passage`` may tell the part's event: any passage, unless the part names a
    publisher ("CBSSports.com", "TechCrunch, 2023-10-02"), whose documents alone then may."""
    named = next((name for name in publishers if part.label == name or part.label.startswith(f"{name}, ")), None)
    return named is None or passage.publisher == named


def day(passage: Passage) -> str:
    """The day its document was published: ``YYYY-MM-DD``."""
    return (passage.published or "")[:10]
