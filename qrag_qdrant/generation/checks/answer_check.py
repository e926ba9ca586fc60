"""Answer checks: every claim's citations, and whether its cited passages hold it.

A claim is a line or sentence of the answer with the ``[n]`` citations in or right after it.
A citation of a passage that was not shown is invalid. The grounding check is exact and
needs no model: a claim is grounded when its text (the short answer, or the quote, without
citations) occurs, after normalisation, in a passage it cites (a claim that cites nothing is
held to the passages the rest of the answer cites; one that lists things, piece by piece across
them: ``pieces``). With ``generation.judge`` and a backend
that can judge, a grounded claim is also put to the model as a yes/no question against its
passages, and P(yes) from its top log-probabilities is its score; a claim is supported when
it is grounded and, if judged, the judge agrees. No NLI or cross-encoder weights can be had
offline; another judge registers as a backend with ``yes_probability``.

Grounding alone cannot see whether the passage answers *this* question: a model asked about
something the corpus lacks copies a name from a passage about something else, and the copy is
exact. So a grounded claim is also scored for relevance: the share of the question's words
(stems, no stopwords) found in the sentence of the cited passage that holds it. A claim is
supported only when that share reaches ``generation.min_relevance``, and a short answer that
only repeats the question's words is no answer.

Neither check sees a wrong span of the right sentence, nor a name copied from a sentence on the
question's topic. The model's own token probabilities do: a grounded, relevant claim is supported
only when the model wrote its short answer with a geometric-mean token probability of at least
``generation.min_answer_probability`` (backends that report log-probabilities), and, where
``generation.min_evidence_confidence`` is set, when the evidence gate was that confident of the context.

The steps, in order: a decline or an unusable answer (``claims``); the claims and their citations
(``claims``); for each claim, the passage that holds it and one reading of it against its cited
passages (``claim_reading``); the checks over that reading, first finding first (``findings``);
the answer's own doubts and the judge; the warnings and the mark (``results.marks``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ...config.sections import GenerationSettings
from ...results import Answer, Claim, Passage
from ...results.marks import INSTRUCTION_WITHHELD, WARNINGS
from ..base import Judge
from ..prompt import fence
from .claim_reading import read_pieces, read_verdict, read_whole
from .claims import cited_by, confident, declined, grounding, one_target, repointed, short_answer_of, split_claims
from .findings import PIECES, VERDICT, WHOLE, Doubt, first_finding
from .pieces import pieces_of
from .reading import bare, normalised
from .verdict import is_verdict

JUDGE_SYSTEM = "You check whether quoted passages support a claim. Reply with one word: yes or no."
#: a claim is supported when the judge's P(yes) is at least this
SUPPORTED = 0.5


def judge_prompt(claim: Claim, passages: Sequence[Passage]) -> str:
    cited = [p for p in passages if p.citation in claim.citations] or list(passages)
    quoted = "\n\n".join(fence(p) for p in cited)
    return f"Passages:\n\n{quoted}\n\nClaim: {bare(claim.text)}\n\nDo the passages support the claim? Answer yes or no."


#: a sentence's coverage of the question (a share of its key words' weight) at which it says what
#: was asked: nearly every key word (chosen on the tuning articles' recorded answers, where 0.9 to
#: 0.999 gave 5 right answers more and no wrong one, and 0.85 two wrong ones)
COVERED = 0.9


def answer_doubt(answer: Answer, options: GenerationSettings, covered: bool = False) -> Doubt | None:
    """What a claim of ``answer`` falls short of beside its own reading: the model's confidence in
    its short answer (``min_answer_probability``, or ``min_answer_probability_covered`` for a
    claim whose sentence carries nearly every key word of the question: ``covered``), the agreement of
    its readings, the gate's confidence."""
    wanted = options.min_answer_probability_covered if covered else options.min_answer_probability
    if not confident(answer.answer_probability, min(wanted, options.min_answer_probability)):
        return "unsure"
    if answer.agreement is not None and answer.agreement.share < options.min_agreement:
        return "disputed"
    return None if confident(answer.confidence, options.min_evidence_confidence) else "weak evidence"


def check_claim(
    claim: Claim,
    answer: Answer,
    passages: Sequence[Passage],
    valid: Sequence[int],
    judge: Judge | None,
    options: GenerationSettings,
) -> None:
    """One claim: read once, checked in order, then the answer's doubts, then the judge (not for a
    bare verdict, which is no claim it can weigh). ``valid``: the shown passages the answer cites,
    which a claim citing none is held to."""
    words = bare(claim.text)
    if answer.parts and is_verdict(normalised(words)):
        claim.unsupported = first_finding(VERDICT, read_verdict(claim, cited_by(claim, ()), answer, passages), options)
        claim.unsupported = claim.unsupported or answer_doubt(answer, options)
        claim.supported = claim.unsupported is None
        return
    holder = grounding(claim, passages, valid)
    # a claim that cites a shown passage without its words: the model misread the passages' numbers,
    # so its hesitation is not excused by a sentence that says every word of the question
    miscited = holder is None and claim.citations != claim.invalid_citations
    holder = holder or repointed(claim, passages, answer)
    if holder is None and (pieces := pieces_of(words)):
        read, checks = read_pieces(claim, pieces, cited_by(claim, valid), answer, passages), PIECES
    else:
        read, checks = read_whole(claim, holder, answer, passages), WHOLE
    # the sentence itself says nearly every word asked; one it points back to is weaker evidence
    covered = read.sentence is not None and read.sentence.coverage_alone >= COVERED and not miscited
    claim.unsupported = first_finding(checks, read, options) or answer_doubt(answer, options, covered)
    if judge is not None and claim.unsupported is None:
        claim.score = round(judge.yes_probability(JUDGE_SYSTEM, judge_prompt(claim, passages)), 4)
        claim.unsupported = "doubted" if claim.score < SUPPORTED else None
    claim.supported = claim.unsupported is None


def check_answer(answer: Answer, passages: Sequence[Passage], judge: Judge | None, options: GenerationSettings) -> None:
    """Fill ``answer.short_answer``, its claims and warnings; turn a decline or a refused answer
    into an abstention. ``answer.answer_probability``, when the generation step could tell it,
    must reach ``options.min_answer_probability`` (``answer_doubt``)."""
    text = (answer.answer or "").strip()
    if declined(text):
        answer.abstained, answer.abstain_reason = True, "model_declined"
        return
    answer.short_answer = short_answer_of(text)
    shown = [p.citation for p in passages]
    text = one_target(text, shown, answer)
    answer.claims = split_claims(text, shown)
    invalid = sorted({n for claim in answer.claims for n in claim.invalid_citations})
    if invalid:
        answer.warnings.append(f"the answer cites passages that were not shown: {', '.join(f'[{n}]' for n in invalid)}")
    if not any(claim.citations for claim in answer.claims):
        answer.warnings.append("the answer cites no passage: check it against the evidence")
    valid = [n for claim in answer.claims for n in cited_by(claim, ())]
    for claim in answer.claims:
        check_claim(claim, answer, passages, valid, judge, options)
    counts: Counter[str | None] = Counter(c.unsupported for c in answer.claims if not c.supported)
    answer.warnings.extend(
        f"{counts[kind]} of {len(answer.claims)} claims {why}" for kind, why in WARNINGS.items() if counts[kind]
    )
    if counts["instruction"]:  # an attack's payload, not an answer: withheld whatever generation.unsupported says
        answer.abstained, answer.abstain_reason = True, "unsupported_answer"
        answer.answer = answer.short_answer = None
        answer.warnings.append(INSTRUCTION_WITHHELD)
    elif counts and options.unsupported == "refuse":
        answer.abstained, answer.abstain_reason = True, "unsupported_answer"
