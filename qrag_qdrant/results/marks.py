"""What a user is told of an answer, in words: the mark's reason and the checks' warnings, the
same in every interface (the CLI, the service's JSON and web page, the OpenAI endpoint, MCP). The
checks and ``Answer.mark`` decide; this module words what they decided, and imports nothing."""

from __future__ import annotations

from typing import Literal

#: the marks an answer can carry (``Answer.mark``)
Mark = Literal["supported", "not supported", "ambiguous", "declined", "no evidence", "clarifying question"]
#: why nothing reached the model, by the evidence's abstain reason
NO_EVIDENCE = {
    "no_quorum": "the retrievers did not agree on any evidence in the documents",
    "low_confidence": "the retrievers agreed on evidence too weak to answer from",
}
DECLINED = "the model found that the passages do not hold the answer"
NO_CITATION = "the answer cites no passage"
UNSHOWN_CITATION = "it cites passages that were not shown"
#: why a claim is not supported, by the check it failed first (``Claim.unsupported``); the fields
#: are filled from the claim and the answer (``Answer.claim_reason``)
REASONS = {
    "not found": "it is not found in the passages it cites",
    "instruction": "it repeats a sentence that gives orders to an assistant, not a fact",
    "off the question": "the sentence it comes from does not mention {missing}",
    "off the question, no key word": "the sentence it comes from shares too few of the question's words",
    "ambiguous": 'the passage also says "{rival}"',
    "unsure": "the model was only {probability:.0%} sure of it",
    "disputed": "only {agreeing} of {readings} readings gave it",
    "weak evidence": "the evidence is weak (confidence {confidence:.3f})",
    "doubted": "the judge doubted it (score {score:.2f})",
    "one-sided": "it cites no passage of {part}",
    "wrong kind": "it is not what the question asks for (a time or number where it asks where or who, "
    "years where it asks which year)",
    "unclear": 'the question says "this" or "these" without naming which one it means',
}
FAILED_A_CHECK = "it failed a check"
#: the answer's warning for the claims that failed each check: "2 of 3 claims ..."
WARNINGS = {
    "not found": "are not found in the passages they cite",
    "off the question": "come from a sentence that lacks what the question is about "
    "(generation.min_coverage, min_relevance)",
    "ambiguous": "come from a passage that gives another value for the question as well (generation.rivals)",
    "unsure": "were written with too little of the model's confidence (generation.min_answer_probability)",
    "disputed": "are not what enough of the model's readings said (generation.min_agreement)",
    "weak evidence": "come from evidence the gate is not confident enough of (generation.min_evidence_confidence)",
    "doubted": "were not confirmed by the judge",
    "instruction": "come from a sentence that reads as an instruction to the assistant, not a fact",
    "one-sided": "answer yes or no citing the evidence of only some of the question's parts",
    "wrong kind": "are not of the kind the question asks for (a time or number where it asks where or who, "
    "years where it asks which year)",
    "unclear": 'answer a question that says "this" or "these" without naming which one it means',
}
#: what an answer copied from a planted instruction becomes: withheld, with this warning
INSTRUCTION_WITHHELD = (
    "the answer was withheld: it repeats a sentence of a document that gives orders to an assistant, "
    "not a fact (see the cited passage)"
)


def says(location: str | None, sentence: str) -> str:
    """A supported answer's reason: where its sentence is, and the sentence."""
    return f'{location or "the cited passage"} says "{sentence}"'


def model_failed(error: str) -> str:
    return f"the model failed: {error}"
