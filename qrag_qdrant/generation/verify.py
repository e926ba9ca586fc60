"""Answer checks: every claim's citations, and whether its cited passages support it.

A claim is a sentence of the answer with the ``[n]`` citations in or right after it. A
citation of a passage that was not shown is invalid. With a backend that can judge, each
claim is put to the model as a yes/no question against its cited passages, and P(yes) from
its top log-probabilities is the claim's support score. No NLI or cross-encoder weights can
be had offline; another judge registers as a backend with ``yes_probability``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..evidence import Answer, Claim, Passage
from .base import Judge
from .prompt import NOT_IN_DOCUMENTS, fence

CITATION = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")
JUDGE_SYSTEM = "You check whether quoted passages support a claim. Reply with one word: yes or no."
#: a claim is supported when the judge's P(yes) is at least this
SUPPORTED = 0.5


def citations_in(text: str) -> list[int]:
    return [int(n) for group in CITATION.findall(text) for n in re.split(r"\s*[,;]\s*", group)]


def split_claims(answer: str, shown: Sequence[int]) -> list[Claim]:
    """Sentences with their citations; a fragment that is only citations joins the sentence before."""
    claims: list[Claim] = []
    for sentence in SENTENCE_END.split(answer.strip()):
        if not sentence.strip():
            continue
        if claims and not CITATION.sub("", sentence).strip(" .,;"):
            claims[-1] = _claim(f"{claims[-1].text} {sentence}", shown)
        else:
            claims.append(_claim(sentence, shown))
    return claims


def _claim(text: str, shown: Sequence[int]) -> Claim:
    cited = list(dict.fromkeys(citations_in(text)))
    return Claim(text=text.strip(), citations=cited, invalid_citations=[n for n in cited if n not in shown])


def declined(answer: str) -> bool:
    """The model said the passages do not hold the answer (and nothing else of substance)."""
    text = " ".join(CITATION.sub("", answer).lower().split()).strip(" .\"'")
    return text.startswith(NOT_IN_DOCUMENTS) or text.endswith(NOT_IN_DOCUMENTS) and len(text) < 80


def judge_prompt(claim: Claim, passages: Sequence[Passage]) -> str:
    cited = [p for p in passages if p.citation in claim.citations] or list(passages)
    quoted = "\n\n".join(fence(p) for p in cited)
    return f"Passages:\n\n{quoted}\n\nClaim: {CITATION.sub('', claim.text).strip()}\n\n" \
           "Do the passages support the claim? Answer yes or no."


def check_answer(answer: Answer, passages: Sequence[Passage], judge: Judge | None, unsupported: str) -> None:
    """Fill ``answer.claims`` and its warnings; turn a decline or a refused answer into an abstention."""
    text = (answer.answer or "").strip()
    if declined(text):
        answer.abstained, answer.abstain_reason = True, "model_declined"
        return
    shown = [p.citation for p in passages]
    answer.claims = split_claims(text, shown)
    invalid = sorted({n for claim in answer.claims for n in claim.invalid_citations})
    if invalid:
        answer.warnings.append(f"the answer cites passages that were not shown: {', '.join(f'[{n}]' for n in invalid)}")
    if not any(claim.citations for claim in answer.claims):
        answer.warnings.append("the answer cites no passage: check it against the evidence")
    if judge is None:
        return
    for claim in answer.claims:
        if claim.citations and not claim.invalid_citations:
            claim.score = round(judge.yes_probability(JUDGE_SYSTEM, judge_prompt(claim, passages)), 4)
            claim.supported = claim.score >= SUPPORTED
    unsupported_claims = [c for c in answer.claims if c.supported is False or c.invalid_citations]
    if unsupported_claims:
        answer.warnings.append(f"{len(unsupported_claims)} of {len(answer.claims)} claims are not supported by "
                               "the passages they cite")
        if unsupported == "refuse":
            answer.abstained, answer.abstain_reason = True, "unsupported_answer"
