"""The typed results of a query: what ``--json`` prints and what the Python API returns, and the
stage timings (``timings_ms``) they carry."""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, Field, computed_field

AbstainReason = Literal[
    "no_quorum", "low_confidence", "part_missing", "model_declined", "unsupported_answer", "needs_clarification"
]


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
    """How a question in a conversation became what was searched (retrieval.conversation)."""

    how: str = Field(
        description="first_turn: no history; stand_alone: the question names its own subject; rewritten: the "
        "model made it stand-alone; unchanged: the model kept it; chosen: it picks one of two readings offered; "
        "last: retrieval.conversation = last; rewrite_failed: searched as typed (note says why)"
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
    round: int = Field(1, description="the search that found it; 2: searched again with what other parts found")


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


class Claim(BaseModel):
    """One sentence of the answer, with the passages it cites."""

    text: str
    citations: list[int]
    invalid_citations: list[int] = Field(default_factory=list, description="cited, but no such passage was shown")
    grounded: bool | None = Field(
        None,
        description="its words (the short answer or quote) occur in a passage it "
        "cites, after normalisation: the exact check, no model call",
    )
    location: str | None = Field(
        None,
        description="where the sentence that holds the claim is: the cited passage's source with the heading over "
        "that sentence (a passage can start in one section and hold the claim in the next), or its pages",
    )
    relevance: float | None = Field(
        None,
        description="the share of the question's words found in the sentence "
        "of the cited passage that holds the claim (0 for a claim that only repeats "
        "the question); None when not grounded",
    )
    sentence: str | None = Field(
        None, description="the sentence of the cited passage that holds the claim; None when not grounded"
    )
    coverage: float | None = Field(
        None,
        description="the share of the question's key words, weighed by rarity, that sentence carries "
        "(generation.min_coverage); None when not grounded",
    )
    missing_terms: list[str] = Field(
        default_factory=list,
        description="the question's key words that sentence lacks, weightiest first: it may answer another question",
    )
    rival: str | None = Field(
        None,
        description="another sentence of the cited passages that matches the question as well and gives another "
        "value: the answer is ambiguous (generation.rivals)",
    )
    supported: bool | None = Field(
        None,
        description="grounded, relevant (generation.min_relevance), written with "
        "enough of the model's confidence (generation.min_answer_probability), from "
        "evidence the gate is confident enough of (generation.min_evidence_confidence), "
        "and confirmed by the judge where one is on (generation.judge); None when not "
        "checked",
    )
    unsupported: (
        Literal[
            "not found",
            "instruction",
            "off the question",
            "ambiguous",
            "unsure",
            "disputed",
            "weak evidence",
            "doubted",
            "one-sided",
            "wrong kind",
        ]
        | None
    ) = Field(
        None,
        description="why it is not supported: which of those checks it failed first (one-sided: a yes or no "
        "to a question of several parts that cites no passage of one of them)",
    )
    score: float | None = Field(None, description="the judge's P(yes) that the cited passages support the claim")


class TokenUsage(BaseModel):
    """What generating the answer cost, as the backend counted it."""

    prompt_tokens: int
    cached_tokens: int = Field(0, description="prompt tokens reused from the backend's prompt cache")
    completion_tokens: int
    completion_seconds: float


class AnswerAgreement(BaseModel):
    """What the readings of the prompt said (generation.samples): the greedy answer, then the samples."""

    readings: int = Field(description="answers read: the greedy one and generation.samples more")
    agreeing: int = Field(
        description="readings that give the shown (greedy) answer, after normalisation, itself included"
    )
    share: float = Field(description="agreeing / readings: generation.min_agreement applies to it")
    answers: list[str] = Field(description="each reading's short answer, the greedy one first")
    probabilities: list[float | None] = Field(description="how sure the model was of each (answer_probability)")


#: the marks an answer can carry (``Answer.mark``)
Mark = Literal["supported", "not supported", "ambiguous", "declined", "no evidence", "clarifying question"]
NO_EVIDENCE = {
    "no_quorum": "the retrievers did not agree on any evidence in the documents",
    "low_confidence": "the retrievers agreed on evidence too weak to answer from",
}


def claim_reason(claim: Claim, answer: Answer) -> str:
    """Why a claim is not supported, in plain words a user can check against its passage."""
    missing = ", ".join(f'"{word}"' for word in claim.missing_terms[:3])
    agreement = answer.agreement
    if claim.invalid_citations:
        return "it cites passages that were not shown"
    reasons = {
        None: "",
        "not found": "it is not found in the passages it cites",
        "instruction": "it repeats a sentence that gives orders to an assistant, not a fact",
        "off the question": f"the sentence it comes from does not mention {missing}"
        if missing
        else "the sentence it comes from shares too few of the question's words",
        "ambiguous": f'the passage also says "{claim.rival}"',
        "unsure": f"the model was only {answer.answer_probability or 0:.0%} sure of it",
        "disputed": f"only {agreement.agreeing} of {agreement.readings} readings gave it" if agreement else "",
        "weak evidence": f"the evidence is weak (confidence {answer.confidence or 0:.3f})",
        "doubted": f"the judge doubted it (score {claim.score or 0:.2f})",
        "one-sided": f"it cites no passage of {uncited_part(answer.parts, claim.citations) or 'a part'}",
        "wrong kind": "it is not what the question asks for (a time or number where it asks where or who)",
    }
    return reasons[claim.unsupported] or "it failed a check"


class Answer(Evidence):
    answer: str | None = None
    short_answer: str | None = Field(
        None, description="the answer alone, without citations or quote, for scripts and eval"
    )
    complete: bool = Field(True, description="false when the answer stream was cut off")
    error: str | None = None
    decline_probability: float | None = Field(
        None, description='the model\'s probability of answering "not in the documents" (backends that report it)'
    )
    answer_probability: float | None = Field(
        None,
        description="how sure the model was of its short answer: the geometric mean of the probabilities of "
        "the tokens that wrote it (backends that report log-probabilities)",
    )
    agreement: AnswerAgreement | None = Field(None, description="the readings' agreement (generation.samples > 0)")
    claims: list[Claim] = Field(default_factory=list)
    usage: TokenUsage | None = Field(None, description="the backend's token counts (backends that report them)")
    model: str | None = Field(None, description="the model that wrote the answer, as its backend names it")
    model_server: str | None = Field(
        None, description='where that model ran: a server\'s URL (without credentials), or "in-process"'
    )
    warnings: list[str] = Field(default_factory=list, description="what was changed or found, in one line each")
    client_left: bool = Field(
        False, description="the answer was stopped because its client went away (error says when)"
    )

    @property
    def outcome(self) -> str:
        """How the answer ended, for the operator's counts: answered, declined, cancelled (its
        client left) or error (the model failed)."""
        if self.client_left:
            return "cancelled"
        return "error" if self.error else "declined" if self.abstained else "answered"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mark(self) -> Mark | None:
        """What a user is told of the answer, the same in every interface: supported, not supported,
        ambiguous (a cited passage gives another value as well), declined (the model found no answer in
        the passages), or no evidence (nothing reached the model); None before an answer was asked."""
        if self.abstain_reason in ("no_quorum", "low_confidence", "part_missing"):
            return "no evidence"
        if self.abstain_reason == "needs_clarification":
            return "clarifying question"
        if self.abstain_reason == "model_declined":
            return "declined"
        if not self.claims:
            return "not supported" if self.answer or self.error else None
        if all(claim.supported for claim in self.claims):
            return "supported"
        return "ambiguous" if any(claim.unsupported == "ambiguous" for claim in self.claims) else "not supported"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def mark_reason(self) -> str | None:
        """Why, in plain words: what the supporting sentence says, or what the check found."""
        mark = self.mark
        if mark is None:
            return None
        if mark == "no evidence":
            return self.missing_part or NO_EVIDENCE[self.abstain_reason or "no_quorum"]
        if mark == "clarifying question":
            return self.clarification.question if self.clarification else None
        if mark == "declined":
            return "the model found that the passages do not hold the answer"
        if not self.claims:
            return f"the model failed: {self.error}" if self.error else "the answer cites no passage"
        if mark == "supported":
            claim = self.claims[0]
            return f'{claim.location or "the cited passage"} says "{claim.sentence}"' if claim.sentence else None
        failed = next(claim for claim in self.claims if not claim.supported)
        return claim_reason(failed, self)

    @property
    def reached_model(self) -> bool:
        """Whether the model took this answer up (its client may have left while it waited)."""
        return "generation" in self.timings_ms

    @classmethod
    def from_evidence(cls, evidence: Evidence, **fields: object) -> Answer:
        """The answer to ``evidence``, every field kept: a dump would drop the ones excluded
        from the JSON (``gate_features``, which feedback rows need)."""
        return cls(**{name: getattr(evidence, name) for name in Evidence.model_fields}, **fields)


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Sets ``timings[stage]`` to the block's wall time (ms, 3 decimals), even when it raises."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = round((time.perf_counter() - started) * 1000, 3)
