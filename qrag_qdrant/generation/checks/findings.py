"""The checks a claim passes, in order, each over the one reading of it (``claim_reading``).

Each check returns its finding, or None when the claim passes it; the first finding is why the
claim is not supported (``Claim.unsupported``, worded in ``results.marks``). A claim held whole is
checked by ``WHOLE``, one that lists pieces by ``PIECES``, a yes or no to a question of several
parts by ``VERDICT``. The model's confidence, the readings' agreement and the gate's
(``Doubt``) apply to the answer as a whole, after these; the judge, when set, last.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Literal

from ...config.sections import GenerationSettings
from ...text.terms import terms, word_terms
from .claim_reading import ClaimRead
from .instructions import reads_as_instruction
from .sentence import fits_the_question

#: what a check of the claim's own reading can find
Finding = Literal["not found", "one-sided", "instruction", "wrong kind", "unclear", "ambiguous", "off the question"]
#: the checks any claim can fail beside its own: the model's confidence, agreement, the gate's
Doubt = Literal["unsure", "disputed", "weak evidence"]
Check = Callable[[ClaimRead, GenerationSettings], Finding | None]


def not_found(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """No passage the claim cites holds its words (or each of its pieces)."""
    return None if read.grounded else "not found"


def one_sided(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """A verdict that cites no passage of some part with evidence: it cannot have compared them."""
    return None if read.grounded else "one-sided"


def instruction(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """A sentence that holds the claim gives orders to an assistant: an attack's payload, no fact."""
    return "instruction" if any(map(reads_as_instruction, read.sentences)) else None


def wrong_kind(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """The claim is not of the kind the question asks for ("Where ...?" "12:30")."""
    return None if fits_the_question(read.question, read.words) else "wrong kind"


#: a question that points at something it does not name: "this edict", "these reports" (a verb
#: after the word, or a time the calendar names, "this year", points at nothing unnamed)
POINTING = re.compile(
    r"\b(?i:this|these|those)\s+(?!(?:is|was|are|were|has|had|have|does|did|do|can|could|will|would|may|might|"
    r"must|should|year|month|week|day|quarter|season|time|morning|afternoon|evening|weekend|summer|winter|"
    r"spring|autumn|fall|semester|term)s?\b)(?P<thing>[a-z][\w-]*)"  # "those Tesla received" names what it means
)


def unclear(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """The question points at something it does not name ("When was this edict declared?"), and
    no conversation said which: a passage about one edict answers a question about another. A
    document named for it is the one meant: "this handbook" of a passage of `handbook-2024.md`."""
    pointing = POINTING.search(read.question)
    if pointing is None or word_terms(pointing["thing"]) <= terms(read.document):
        return None
    return "unclear"


def ambiguous(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """Another sentence of the cited passages answers the question as well with another value
    (``generation.rivals``)."""
    return "ambiguous" if options.rivals and read.sentence is not None and read.sentence.rival else None


def off_the_question(read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """The holding sentence shares too little of the question's words (``generation.min_relevance``)
    or of its key words' weight (``generation.min_coverage``, claims held whole)."""
    uncovered = read.sentence is not None and read.sentence.coverage < options.min_coverage
    return "off the question" if read.relevance < options.min_relevance or uncovered else None


WHOLE: tuple[Check, ...] = (not_found, instruction, wrong_kind, unclear, ambiguous, off_the_question)
PIECES: tuple[Check, ...] = (not_found, instruction, unclear, off_the_question)
VERDICT: tuple[Check, ...] = (one_sided, off_the_question)


def first_finding(checks: Sequence[Check], read: ClaimRead, options: GenerationSettings) -> Finding | None:
    """The finding of the first of ``checks`` the claim fails; None when it passes them all."""
    return next((found for check in checks if (found := check(read, options)) is not None), None)
