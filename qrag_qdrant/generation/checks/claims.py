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
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Literal

from ...config.sections import GenerationSettings
from ...results import Answer, Claim, Passage
from ...results.marks import INSTRUCTION_WITHHELD, WARNINGS
from ...text.sentences import sentences, unwrapped
from ...text.terms import terms
from ..base import Judge
from ..prompt import NOT_IN_DOCUMENTS, fence
from .instructions import reads_as_instruction
from .pieces import PiecesCheck, pieces_check, pieces_of
from .reading import CITATION, bare, holding_sentences, holds, normalised
from .sentence import SentenceCheck, coverage, fits_the_question, heading_above, relevance_of, sentence_check
from .specifics import as_written, lacking
from .verdict import VerdictCheck, is_verdict, verdict_check

#: the checks any claim can fail beside its grounding: the model's confidence, agreement, the gate's
Doubt = Literal["unsure", "disputed", "weak evidence"]

#: the quote format's answer line, and a line's leading label
ANSWER_LINE = re.compile(r"^\s*answer\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)
JUDGE_SYSTEM = "You check whether quoted passages support a claim. Reply with one word: yes or no."
#: a claim is supported when the judge's P(yes) is at least this
SUPPORTED = 0.5


def citations_in(text: str) -> list[int]:
    return [int(n) for group in CITATION.findall(text) for n in re.split(r"\s*[,;]\s*", group)]


def split_claims(answer: str, shown: Sequence[int]) -> list[Claim]:
    """Sentences with their citations; a fragment that is only citations joins the sentence before."""
    claims: list[Claim] = []
    for sentence in sentences(answer):
        if claims and not CITATION.sub("", sentence).strip(" .,;"):
            claims[-1] = _claim(f"{claims[-1].text} {sentence}", shown)
        else:
            claims.append(_claim(sentence, shown))
    return claims


def _claim(text: str, shown: Sequence[int]) -> Claim:
    cited = list(dict.fromkeys(citations_in(text)))
    return Claim(text=text.strip(), citations=cited, invalid_citations=[n for n in cited if n not in shown])


def one_target(text: str, shown: Sequence[int], answer: Answer) -> str:
    """With one passage shown, every ``[n]`` can only mean it (a model shown one passage of several
    paragraphs numbers the paragraphs): each is read as it, in the text too, with a warning."""
    if len(shown) != 1 or not (wrong := sorted({n for n in citations_in(text) if n not in shown})):
        return text
    answer.answer = cites_only(text, shown[0])
    cited = ", ".join(f"[{n}]" for n in wrong)
    answer.warnings.append(f"the answer cited {cited}; one passage was shown, so it is read as [{shown[0]}]")
    return answer.answer


def cites_only(text: str, number: int) -> str:
    """``text`` with every citation made ``[number]``, said once where it repeats."""
    only = f"[{number}]"
    return re.sub(rf"{re.escape(only)}(?:\s*{re.escape(only)})+", only, CITATION.sub(only, text))


def declined(answer: str) -> bool:
    """The model said the passages do not hold the answer (and nothing else of substance)."""
    text = " ".join(CITATION.sub("", answer).lower().split()).strip(" .\"'")
    return text.startswith(NOT_IN_DOCUMENTS) or (text.endswith(NOT_IN_DOCUMENTS) and len(text) < 80)


def short_answer_of(answer: str) -> str | None:
    """The answer alone: the quote format's ``Answer:`` line, else the first line."""
    match = ANSWER_LINE.search(answer)
    line = match[1] if match else next((line for line in answer.splitlines() if line.strip()), "")
    return bare(line) or None


def cited_by(claim: Claim, fallback: Sequence[int]) -> list[int]:
    """The passages a claim cites that were shown, or when it cites none, ``fallback``'s."""
    return [n for n in claim.citations if n not in claim.invalid_citations] if claim.citations else list(fallback)


def grounding(claim: Claim, passages: Sequence[Passage], fallback: Sequence[int]) -> Passage | None:
    """The first passage the claim cites (or, citing none, of ``fallback``) that holds its own words."""
    return first_holder(claim, passages, cited_by(claim, fallback))


def first_holder(claim: Claim, passages: Sequence[Passage], numbers: Collection[int]) -> Passage | None:
    """The first of the passages numbered in ``numbers`` that holds the claim's own words (none for
    a claim of no words)."""
    words = normalised(bare(claim.text))
    return (
        next((p for p in passages if p.citation in numbers and holds(p.text, words)), None) if words.strip() else None
    )


def repointed(claim: Claim, passages: Sequence[Passage], answer: Answer) -> Passage | None:
    """A claim that cites only passages that were not shown ("[3]" of two), while a shown passage
    holds its words: read as citing that one, in the answer's text too, with a warning; its other
    checks then read that passage. A claim that cites a shown passage is held to it: re-pointed
    too, 7 right answers of 400 recorded were marked supported, and 3 wrong ones."""
    if not claim.citations or claim.citations != claim.invalid_citations:
        return None
    holder = first_holder(claim, passages, [p.citation for p in passages])
    if holder is None:
        return None
    cited, text = ", ".join(f"[{n}]" for n in claim.citations), cites_only(claim.text, holder.citation)
    answer.answer = (answer.answer or "").replace(claim.text, text, 1)
    claim.text, claim.citations, claim.invalid_citations = text, [holder.citation], []
    answer.warnings.append(
        f"the answer cited {cited} for words passage [{holder.citation}] holds: read as [{holder.citation}]"
    )
    return holder


def relevance(question: str, claim: str, passage: str, holding: Sequence[str]) -> float:
    """The share of the question's words found in the sentence of ``passage`` that holds the
    claim's words (``holding``; the whole passage when they cross a sentence boundary). 0.0 when
    the claim adds no word to the question's (an echo, not an answer); 1.0 for a question of
    stopwords."""
    read = holding or [passage]
    return relevance_of(terms(bare(claim)), terms(as_written(question, " ".join(read))), read)


def read_sentence(
    claim: Claim, holder: Passage, holding: Sequence[str], passages: Sequence[Passage], answer: Answer
) -> SentenceCheck:
    """The sentence of ``holder`` that holds the claim (the first of ``holding``), with the heading
    over it: what it says of the question, and a rival sentence in the passages the claim cites."""
    sentence = holding[0] if holding else holder.text
    text = unwrapped(holder.text)
    offset = max(text.find(sentence.strip()), 0)
    heading = next((h for at, h in reversed(holder.heading_marks) if at <= offset), holder.heading)
    heading = heading or heading_above(text, offset)
    cited = [p for p in passages if p.citation in claim.citations] or [holder]
    left_out = lacking(answer.searched, f"{heading or ''} {sentence} {holder.title or ''} {holder.publisher or ''}")
    weights, unseen = answer.key_terms, answer.unseen_terms
    return sentence_check(bare(claim.text), sentence, heading, cited, weights, unseen, left_out)


def holding_offset(passage: str, holding: Sequence[str]) -> int:
    """Where in ``passage`` the first of the ``holding`` sentences starts (0: none, the claim's words
    cross a sentence boundary)."""
    return max(unwrapped(passage).find(holding[0].strip()), 0) if holding else 0


def answer_probability(answer: str, tokens: Sequence[tuple[str, float]] | None) -> float | None:
    """How sure the model was of its short answer: the geometric mean of the probabilities of the
    ``tokens`` (the answer's, as the backend reported them) that wrote it, at its last occurrence
    (the quote format's ``Answer:`` line), or of every token when it is not among them. None: no
    log-probabilities."""
    if not tokens:
        return None
    short = short_answer_of(answer)
    text = "".join(token for token, _ in tokens)
    start = text.rfind(short) if short else -1
    chosen = list(tokens)
    if short and start >= 0:
        ends = list(itertools.accumulate(len(token) for token, _ in tokens))
        chosen = [
            (token, logprob)
            for (token, logprob), end in zip(tokens, ends)
            if end > start and end - len(token) < start + len(short)
        ]
    return round(math.exp(sum(logprob for _, logprob in chosen) / len(chosen)), 4)


def confident(probability: float | None, minimum: float) -> bool:
    """A confidence (the model's in its answer, the gate's in the context) reaches ``minimum``; one
    that was not reported is not checked."""
    return probability is None or probability >= minimum


def held_across(claim: Claim, found: VerdictCheck | PiecesCheck) -> None:
    """A claim held by a sentence in each of several passages: the least relevance of them, their
    places and their sentences, in order."""
    claim.relevance, claim.location = found.relevance, "; ".join(found.locations)
    claim.sentence = " … ".join(found.sentences)


def check_verdict(
    claim: Claim,
    answer: Answer,
    passages: Sequence[Passage],
    options: GenerationSettings,
    doubt: Doubt | None,
) -> None:
    """A yes or no to a question of several parts, held to the passages it cites of each part
    (``verdict.verdict_check``); the model's confidence, agreement and the gate apply as to any
    claim (``doubt``: the first of them that fell short), the judge does not (a bare verdict is no
    claim it can weigh)."""
    found = verdict_check(cited_by(claim, ()), answer.parts, passages)
    claim.grounded = found.uncited_part is None
    if claim.grounded:
        held_across(claim, found)
    claim.unsupported = (
        "one-sided" if not claim.grounded else "off the question" if found.relevance < options.min_relevance else doubt
    )
    claim.supported = claim.unsupported is None


def check_grounded(
    claim: Claim,
    holder: Passage | None,
    answer: Answer,
    passages: Sequence[Passage],
    options: GenerationSettings,
    doubt: Doubt | None,
) -> None:
    """A claim against the passage that holds it whole (``holder``; None: no cited passage does):
    the sentence that holds it, its relevance and coverage of the question, a rival value, then
    ``doubt``."""
    claim.grounded = holder is not None
    # the sentences that hold the claim, found once for every check that reads them
    holding = holding_sentences(bare(claim.text), holder.text) if holder is not None else []
    # the one that says most of the question first: "Hall 1" is read where the closing panel is
    if len(holding) > 1:
        holding.sort(key=lambda sentence: -coverage(sentence, answer.key_terms)[0])
    claim.relevance = relevance(answer.searched, claim.text, holder.text, holding) if holder is not None else None
    claim.location = holder.location_at(holding_offset(holder.text, holding)) if holder is not None else None
    read = read_sentence(claim, holder, holding, passages, answer) if holder else None
    if read is not None:
        claim.sentence, claim.coverage, claim.rival = read.sentence, read.coverage, read.rival
        claim.missing_terms = list(read.missing) if read.coverage < 1 else []
    claim.unsupported = (
        "not found"
        if claim.relevance is None or read is None
        else "instruction"
        if any(map(reads_as_instruction, holding))
        else "wrong kind"
        if not fits_the_question(answer.searched, bare(claim.text))
        else "ambiguous"
        if options.rivals and read.rival is not None
        else "off the question"
        if claim.relevance < options.min_relevance or read.coverage < options.min_coverage
        else doubt
    )


def check_pieces(
    claim: Claim,
    pieces: Sequence[str],
    answer: Answer,
    passages: Sequence[Passage],
    fallback: Sequence[int],
    options: GenerationSettings,
    doubt: Doubt | None,
) -> None:
    """A claim that lists pieces no one passage holds whole, each held to the passages it cites
    (``pieces.pieces_check``); then ``doubt`` and the judge, as for any claim."""
    found = pieces_check(pieces, cited_by(claim, fallback), passages, answer.searched, answer.parts)
    claim.grounded = found.not_found is None
    if claim.grounded:
        held_across(claim, found)
    claim.unsupported = (
        "not found"
        if not claim.grounded
        else "instruction"
        if any(map(reads_as_instruction, found.sentences))
        else "off the question"
        if found.relevance < options.min_relevance
        else doubt
    )


def judge_prompt(claim: Claim, passages: Sequence[Passage]) -> str:
    cited = [p for p in passages if p.citation in claim.citations] or list(passages)
    quoted = "\n\n".join(fence(p) for p in cited)
    return f"Passages:\n\n{quoted}\n\nClaim: {bare(claim.text)}\n\nDo the passages support the claim? Answer yes or no."


def check_answer(answer: Answer, passages: Sequence[Passage], judge: Judge | None, options: GenerationSettings) -> None:
    """Fill ``answer.short_answer``, its claims and warnings; turn a decline or a refused answer
    into an abstention. ``answer.answer_probability``, when the generation step could tell it,
    must reach ``options.min_answer_probability``."""
    text = (answer.answer or "").strip()
    if declined(text):
        answer.abstained, answer.abstain_reason = True, "model_declined"
        return
    answer.short_answer = short_answer_of(text)
    unsure = not confident(answer.answer_probability, options.min_answer_probability)
    disputed = answer.agreement is not None and answer.agreement.share < options.min_agreement
    weak = not confident(answer.confidence, options.min_evidence_confidence)
    shown = [p.citation for p in passages]
    text = one_target(text, shown, answer)
    answer.claims = split_claims(text, shown)
    invalid = sorted({n for claim in answer.claims for n in claim.invalid_citations})
    if invalid:
        answer.warnings.append(f"the answer cites passages that were not shown: {', '.join(f'[{n}]' for n in invalid)}")
    if not any(claim.citations for claim in answer.claims):
        answer.warnings.append("the answer cites no passage: check it against the evidence")
    valid = [n for claim in answer.claims for n in cited_by(claim, ())]
    doubt: Doubt | None = "unsure" if unsure else "disputed" if disputed else "weak evidence" if weak else None
    for claim in answer.claims:
        words = bare(claim.text)
        if answer.parts and is_verdict(normalised(words)):
            check_verdict(claim, answer, passages, options, doubt)
            continue
        holder = grounding(claim, passages, valid) or repointed(claim, passages, answer)
        if holder is None and (pieces := pieces_of(words)):
            check_pieces(claim, pieces, answer, passages, valid, options, doubt)
        else:
            check_grounded(claim, holder, answer, passages, options, doubt)
        if judge is not None and claim.unsupported is None:
            claim.score = round(judge.yes_probability(JUDGE_SYSTEM, judge_prompt(claim, passages)), 4)
            claim.unsupported = "doubted" if claim.score < SUPPORTED else None
        claim.supported = claim.unsupported is None
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
