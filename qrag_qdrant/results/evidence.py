"""What retrieval returns: a question's evidence (clusters of numbered passages, the gate's
confidence, the parts of a question of several parts), and the stage timings it carries."""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field, computed_field

AbstainReason = Literal[
    "no_quorum", "low_confidence", "part_missing", "model_declined", "unsupported_answer", "needs_clarification"
]


#: the words a name leaves in lower case ("Victoria and Albert Museum", "Bank of England")
NAME_JOINERS = frozenset(["a", "an", "and", "at", "for", "in", "of", "on", "the", "to"])


def file_name_words(source: str) -> str:
    """A document's file name as words: "handbook-2024.md" reads "handbook 2024"."""
    return re.sub(r"[-_.]+", " ", PurePosixPath(source).stem)


class Passage(BaseModel):
    """A contiguous piece of one source; ``start``/``end`` are character offsets into it."""

    citation: int = Field(description="the [n] the prompt and the answer use")
    source: str
    start: int
    end: int
    text: str
    pages: list[int] | None = Field(None, description="[first, last] page of a PDF source")
    heading: str | None = Field(None, description='the heading path of an HTML or Word source, e.g. "Setup › Accounts"')
    title: str | None = Field(None, description="the document's title, where its metadata holds one")
    publisher: str | None = Field(None, description="who published the document, where its metadata says")
    published: str | None = Field(None, description="when the document was published (ISO 8601, UTC), where known")
    part: int | None = Field(None, description="the part of a question of several parts it is evidence for: 1, 2, ...")
    #: (offset in ``text``, heading path) where the heading changes: which section a sentence is in
    heading_marks: list[tuple[int, str]] = Field(default_factory=list, exclude=True, repr=False)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def location(self) -> str:
        """What a reader looks up: "handbook.pdf p. 12–13", "wiki.html › Setup › Accounts", "notes.txt"."""
        if self.pages:
            first, last = self.pages
            return f"{self.source} p. {first}" + (f"–{last}" if last != first else "")
        return f"{self.source} › {self.heading}" if self.heading else self.source

    @property
    def document_name(self) -> str:
        """What its document is called: its title, or where its metadata holds none, its file's
        name in words, capitalised as a name ("super-bowl-50.txt": "Super Bowl 50";
        "victoria-and-albert-museum.txt": "Victoria and Albert Museum", whose initials "V&A"
        writes). A sentence of an article on the Huguenots speaks of them without naming them; the
        checks read this name beside it."""
        if self.title:
            return self.title
        words = file_name_words(self.source).split()
        return " ".join(word if word in NAME_JOINERS else word[:1].upper() + word[1:] for word in words)

    @property
    def byline(self) -> str:
        """What the model and a reader are told of the document beside its text: "TechCrunch,
        2023-10-14" (empty when its metadata says neither)."""
        return ", ".join(part for part in (self.publisher, (self.published or "")[:10]) if part)

    def location_at(self, offset: int) -> str:
        """Where the passage's text at ``offset`` is: the heading over that point, not the passage's."""
        heading = next((h for at, h in reversed(self.heading_marks) if at <= offset), None)
        return f"{self.source} › {heading}" if heading and not self.pages else self.location


class EvidenceCluster(BaseModel):
    rank: int
    score: float
    support: int = Field(description="distinct retrievers that found this evidence")
    retrievers: list[str]
    passages: list[Passage]
    expansions: list[str] = Field(
        default_factory=list,
        description="the query expansions (labels) whose searches also found this evidence; they add rank, not support",
    )


class QueryExpansion(BaseModel):
    """What one query expansion (retrieval.expansions) wrote and searched, or why it did not."""

    kind: str = Field(description="multi_query, hyde, or a plug-in's")
    texts: list[str] = Field(default_factory=list, description="what the model wrote; each was searched")
    labels: list[str] = Field(default_factory=list, description="each text's name in clusters' expansions")
    retrievers: list[str] = Field(default_factory=list, description="the retrievers that searched the texts")
    seconds: float | None = Field(None, description="the model's time for this expansion")
    error: str | None = Field(None, description="why it was not used; the question was searched without it")


class ConversationStep(BaseModel):
    """How a question in a conversation became what was searched (retrieval.conversation.mode)."""

    how: str = Field(
        description="first_turn: no history; stand_alone: the question names its own subject; rewritten: the "
        "model made it stand-alone; unchanged: the model kept it; chosen: it picks one of two readings offered; "
        "last: retrieval.conversation.mode = last; rewrite_failed: searched as typed (note says why)"
    )
    turns: int = Field(0, description="earlier turns the client sent")
    note: str | None = Field(None, description="why a rewrite was not used, or what its second reading changed")


class Clarification(BaseModel):
    """A question back to the user: two readings of their follow-up found different evidence."""

    question: str = Field(description="what to ask the user, in plain words")
    readings: list[str] = Field(description="the two stand-alone questions; either, sent back, continues")


class QuestionPartEvidence(BaseModel):
    """One part of a question that needs several documents: what it names, what was searched for
    it, and its passages, or why it has none."""

    label: str = Field(description='the document the part names: "TechCrunch, 2023-10-02"')
    searched_for: str = Field(description="the question's words about this part, searched within its filter")
    filter: str | None = Field(None, description="the documents it was searched in")
    citations: list[int] = Field(default_factory=list, description="its passages' numbers")
    missing: str | None = Field(None, description="why it has no evidence; the question then abstains")
    names_first: list[str] = Field(
        default_factory=list,
        description="of a question asking for one thing its parts describe: the names the best passages of two "
        "parts or more agree on; this part's passages that hold one were ranked first",
    )
    event: str | None = Field(
        None, description="of a question that asks only the time order of two events: this part's, as worded"
    )


#: how a yes-or-no question relates the values of its two parts: "the same notice period", "a different
#: chair", "more remote days than", "fewer", "as long in release 2.2 as in release 3.0" ("at least")
ValueRelation = Literal["same", "different", "more", "less", "at least"]


def uncited_part(parts: Sequence[QuestionPartEvidence], citations: Collection[int]) -> str | None:
    """The first part with evidence of which ``citations`` cite no passage: what a yes or no
    to a question of several parts leaves out."""
    cited = set(citations)
    return next((part.label for part in parts if part.missing is None and not cited & set(part.citations)), None)


class Evidence(BaseModel):
    question: str = Field(description="the question as the user asked it")
    searched_for: str | None = Field(
        None,
        description="what was searched and answered: the question, or in a conversation its stand-alone rewrite",
    )
    conversation: ConversationStep | None = Field(None, description="how the history was used")
    clarification: Clarification | None = Field(
        None, description="two readings of a follow-up found different evidence: ask the user which one they mean"
    )
    abstained: bool
    abstain_reason: AbstainReason | None = Field(
        None,
        description="no_quorum: the retrievers did not agree; low_confidence: they agreed on evidence "
        "too weak to answer from; model_declined: the model said the passages do not hold the answer; "
        "unsupported_answer: the answer was withheld (generation.unsupported, or a planted instruction); "
        "needs_clarification: two readings of the follow-up found different evidence (see clarification); "
        "part_missing: a part of a question that needs several documents has no evidence (see parts)",
    )
    parts: list[QuestionPartEvidence] = Field(
        default_factory=list,
        description="a question that names several documents (by publisher, date) is searched part by part; "
        "empty for a question searched whole",
    )
    time_order: Literal["before", "after"] | None = Field(
        None,
        description="a question of two parts that asks only whether the first part's event came before "
        "(or after) the second's: answered from the dates of the documents that report them",
    )
    comparison: ValueRelation | None = Field(
        None,
        description="a yes-or-no question of two parts that compares a value each states: whether they are "
        "the same, different, or the first more, less or at least as much; answered from the values where "
        "the passages state them",
    )
    confidence: float | None = Field(None, description="the gate's confidence that the context holds the answer")
    gate_threshold: float | None = Field(
        None,
        description="the confidence below which the gate abstains "
        "(retrieval.min_confidence, or the gate model's own threshold)",
    )
    retrievers: int = Field(description="retrievers consulted; support is out of this many")
    clusters: list[EvidenceCluster]
    context_policy: str | None = Field(
        None, description="how much evidence reached the model and why, e.g. 'adaptive: top cluster margin 0.41'"
    )
    expansions: list[QueryExpansion] = Field(
        default_factory=list,
        description="retrieval.expansions: what the model wrote and was searched beside the question",
    )
    timings_ms: dict[str, float]
    #: the gate's inputs, kept for feedback rows (``feedback export``); not part of the JSON
    gate_features: dict[str, float] | None = Field(None, exclude=True)
    #: the question's key words and their weight, for the check of the sentence an answer comes from
    key_terms: dict[str, float] = Field(default_factory=dict, exclude=True)
    #: the question's rare words no document of the namespace holds (``term_stats.unseen_words``)
    unseen_terms: list[str] = Field(default_factory=list, exclude=True)

    @property
    def searched(self) -> str:
        """The stand-alone question: what the gate, the context and the answer read."""
        return self.searched_for or self.question

    @property
    def passages(self) -> list[Passage]:
        return [passage for cluster in self.clusters for passage in cluster.passages]

    @property
    def missing_part(self) -> str | None:
        """Why a question of several parts has no answer: its first part without evidence."""
        return next((part.missing for part in self.parts if part.missing), None)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def context_words(self) -> int:
        """Words of evidence the model is sent."""
        return sum(len(passage.text.split()) for passage in self.passages)


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Sets ``timings[stage]`` to the block's wall time (ms, 3 decimals), even when it raises."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = round((time.perf_counter() - started) * 1000, 3)
