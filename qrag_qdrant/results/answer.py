"""What the answer step returns: the answer, its claims with what the checks found of each, and
its mark (``Answer.mark``, worded by ``marks``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field

from . import marks
from .evidence import Evidence, uncited_part
from .marks import Mark


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
            "unclear",
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
    computed: str | None = Field(
        None,
        description="how an answer the model did not write was reached: a time order from the documents' dates",
    )
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
            return self.missing_part or marks.NO_EVIDENCE[self.abstain_reason or "no_quorum"]
        if mark == "clarifying question":
            return self.clarification.question if self.clarification else None
        if mark == "declined":
            return marks.DECLINED
        if not self.claims:
            return marks.model_failed(self.error) if self.error else marks.NO_CITATION
        if mark == "supported":
            claim = self.claims[0]
            return marks.says(claim.location, claim.sentence) if claim.sentence else None
        failed = next(claim for claim in self.claims if not claim.supported)
        return self.claim_reason(failed)

    def claim_reason(self, claim: Claim) -> str:
        """Why ``claim`` is not supported, in plain words a user can check against its passage."""
        if claim.invalid_citations:
            return marks.UNSHOWN_CITATION
        kind: str | None = claim.unsupported
        if kind == "off the question" and not claim.missing_terms:
            kind = "off the question, no key word"
        agreement = self.agreement
        if kind is None or (kind == "disputed" and agreement is None):
            return marks.FAILED_A_CHECK
        return marks.REASONS[kind].format(
            missing=", ".join(f'"{word}"' for word in claim.missing_terms[:3]),
            rival=claim.rival,
            probability=self.answer_probability or 0,
            agreeing=agreement.agreeing if agreement else 0,
            readings=agreement.readings if agreement else 0,
            confidence=self.confidence or 0,
            score=claim.score or 0,
            part=uncited_part(self.parts, claim.citations) or "a part",
        )

    @property
    def reached_model(self) -> bool:
        """Whether the model took this answer up (its client may have left while it waited)."""
        return "generation" in self.timings_ms

    @classmethod
    def from_evidence(cls, evidence: Evidence, **fields: object) -> Answer:
        """The answer to ``evidence``, every field kept: a dump would drop the ones excluded
        from the JSON (``gate_features``, which feedback rows need)."""
        return cls(**{name: getattr(evidence, name) for name in Evidence.model_fields}, **fields)
