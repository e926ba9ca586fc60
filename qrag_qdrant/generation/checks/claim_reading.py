"""One reading of a claim against the passages it cites, made once and shared by every check.

A claim is read one of three ways: held whole by one passage (``read_whole``: the sentences that
hold it, the one that says most of the question, its heading, its relevance and coverage, a
rival), as a list whose pieces different passages hold (``read_pieces``), or as a bare yes or no
to a question of several parts (``read_verdict``). Each fills the claim's fields the user sees
(its sentence, location, relevance) and returns a ``ClaimRead``: what the checks of ``findings``
decide on, without reading a passage again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...results import Answer, Claim, Passage
from ...text.sentences import unwrapped
from ...text.terms import asked_with, terms
from .pieces import pieces_check
from .reading import bare, holding_sentences
from .sentence import (
    SentenceCheck,
    coverage,
    heading_above,
    read_together,
    relevance_of,
    sentence_check,
    sentence_referred_to,
)
from .specifics import as_written, lacking
from .verdict import verdict_check


@dataclass(frozen=True)
class ClaimRead:
    """What the checks read of one claim: the claim's own words, the question searched, whether a
    cited passage holds it, the sentences that do, their share of the question's words, and for a
    claim held whole, what its sentence says of the question (``SentenceCheck``)."""

    words: str
    question: str
    grounded: bool
    sentences: Sequence[str] = ()
    relevance: float = 0.0
    sentence: SentenceCheck | None = None
    #: the name of the document that holds it (``Passage.document_name``), for a claim held whole
    document: str = ""


def read_whole(claim: Claim, holder: Passage | None, answer: Answer, passages: Sequence[Passage]) -> ClaimRead:
    """A claim against the passage that holds it whole (``holder``; None: no cited passage does)."""
    words = bare(claim.text)
    claim.grounded = holder is not None
    if holder is None:
        return ClaimRead(words, answer.searched, grounded=False)
    # the sentences that hold the claim, found once for every check that reads them; the one that
    # says most of the question first: "Hall 1" is read where the closing panel is
    holding = holding_sentences(words, holder.text)
    if len(holding) > 1:
        holding.sort(key=lambda sentence: -coverage(sentence, answer.key_terms)[0])
    # a sentence that points back ("He came back to Lahore") is read with the one it points to
    referred = [sentence_referred_to(holder.text, sentence) for sentence in holding]
    resolved = [f"{before} {sentence}".strip() for before, sentence in zip(referred, holding)]
    claim.relevance = relevance(answer.searched, claim.text, holder.text, resolved)
    claim.location = holder.location_at(holding_offset(holder.text, holding))
    read = read_sentence(claim, holder, holding, referred[0] if referred else "", passages, answer)
    claim.sentence, claim.coverage, claim.rival = read.sentence, read.coverage, read.rival
    claim.missing_terms = list(read.missing) if read.coverage < 1 else []
    return ClaimRead(words, answer.searched, True, holding, claim.relevance, read, holder.document_name)


def read_pieces(
    claim: Claim, pieces: Sequence[str], cited: Sequence[int], answer: Answer, passages: Sequence[Passage]
) -> ClaimRead:
    """A claim that lists pieces no one passage holds whole, each held to the passages numbered in
    ``cited`` (``pieces.pieces_check``)."""
    found = pieces_check(pieces, cited, passages, answer.searched, answer.parts)
    claim.grounded = found.not_found is None
    if claim.grounded:
        held_across(claim, found.relevance, found.sentences, found.locations)
    return ClaimRead(bare(claim.text), answer.searched, claim.grounded, found.sentences, found.relevance)


def read_verdict(claim: Claim, cited: Sequence[int], answer: Answer, passages: Sequence[Passage]) -> ClaimRead:
    """A yes or no to a question of several parts, against the passages it cites of each part
    (``verdict.verdict_check``)."""
    found = verdict_check(cited, answer.parts, passages)
    claim.grounded = found.uncited_part is None
    if claim.grounded:
        held_across(claim, found.relevance, found.sentences, found.locations)
    return ClaimRead(bare(claim.text), answer.searched, claim.grounded, found.sentences, found.relevance)


def held_across(claim: Claim, least: float, sentences: Sequence[str], locations: Sequence[str]) -> None:
    """A claim held by a sentence in each of several passages: the least relevance of them, their
    places and their sentences, in order."""
    claim.relevance, claim.location = least, "; ".join(locations)
    claim.sentence = " … ".join(sentences)


def relevance(question: str, claim: str, passage: str, holding: Sequence[str]) -> float:
    """The share of the question's words found in the sentence of ``passage`` that holds the
    claim's words (``holding``; the whole passage when they cross a sentence boundary). 0.0 when
    the claim adds no word to the question's (an echo, not an answer) and does not answer with them
    (``answers_with_its_words``); 1.0 for a question of stopwords."""
    read = holding or [passage]
    said = set() if answers_with_its_words(question, bare(claim)) else terms(bare(claim))
    return relevance_of(said, terms(as_written(question, " ".join(read))), read)


#: a question that offers the answers to choose from: "the winner between the Broncos and the
#: Steelers", "Was it Paris or Lyon?"
OFFERS_A_CHOICE = re.compile(r"\bbetween\b.+\band\b|\bor\b", re.IGNORECASE)
#: words of degree an answer adds to the question's own ("How similar was it?" "very similar")
DEGREE_WORDS = frozenset(
    ["very", "not", "quite", "highly", "extremely", "largely", "mostly", "partly", "slightly", "somewhat", "fairly"]
)
#: a word of a claim or question, read the same way in both ("very," is "very")
WORD = re.compile(r"[\w'-]+")
#: a name of capitalised words, "of", "and" or "the" between them: "Kearney Park", "Bank of England"
WHOLE_NAME = re.compile(r"(?:the\s+)?[A-Z][\w'-]*(?:\s+(?:(?:of|and|the)\s+)*[A-Z][\w'-]*)*")


def answers_with_its_words(question: str, claim: str) -> bool:
    """Whether a claim made of the question's words still answers it: the question offers a
    choice ("the Broncos" of "the winner between the Broncos and the Steelers", "older" of "older or
    younger than the fault"), the claim adds a word of degree ("very similar" for "How similar
    ...?"), or it is a name the question does not write ("Kearney Park" for "Which park is home to
    the Kearney Mansion?"; "the Kearney Mansion" is an echo, and so is "a force is required to
    maintain motion" for "What was the belief that maintaining motion required force?")."""
    words, asked = (set(WORD.findall(text.lower())) for text in (claim, question))
    if OFFERS_A_CHOICE.search(question) or DEGREE_WORDS & words - asked:
        return True
    written = " ".join(question.split()).lower()
    return bool(WHOLE_NAME.fullmatch(claim)) and " ".join(claim.split()).lower().removeprefix("the ") not in written


def read_sentence(
    claim: Claim,
    holder: Passage,
    holding: Sequence[str],
    referred: str,
    passages: Sequence[Passage],
    answer: Answer,
) -> SentenceCheck:
    """The sentence of ``holder`` that holds the claim (the first of ``holding``), with the heading
    over it, its document's name and the sentence it points back to (``referred``): what it says
    of the question, and a rival sentence in the passages the claim cites."""
    sentence = holding[0] if holding else holder.text
    text = unwrapped(holder.text)
    offset = max(text.find(sentence.strip()), 0)
    heading = next((h for at, h in reversed(holder.heading_marks) if at <= offset), holder.heading)
    heading = heading or heading_above(text, offset)
    cited = [p for p in passages if p.citation in claim.citations] or [holder]
    above = read_together(holder.document_name, heading)  # what the sentence is about without saying it
    left_out = lacking(answer.searched, read_together(above, referred, sentence, holder.publisher), bare(claim.text))
    weights, unseen = answer.key_terms, answer.unseen_terms
    asked = asked_with(answer.searched)
    return sentence_check(bare(claim.text), sentence, above, cited, weights, unseen, left_out, referred, asked)


def holding_offset(passage: str, holding: Sequence[str]) -> int:
    """Where in ``passage`` the first of the ``holding`` sentences starts (0: none, the claim's words
    cross a sentence boundary)."""
    return max(unwrapped(passage).find(holding[0].strip()), 0) if holding else 0
