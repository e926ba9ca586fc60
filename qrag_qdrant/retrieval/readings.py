"""A second reading of a rewritten follow-up: its rewrite without a word the conversation carried
over that the user's own words replace.

A rewrite keeps the earlier question's words, and with them, sometimes, a modifier the follow-up
meant to replace: after "What is the per diem for international travel?", "And within Norway?" was
searched as "... for international travel within Norway?", and the answer came from the
international sentence. The follow-up is read again without that word when either holds:

- the user's last question typed a word the rewrite lacks, while the rewrite carries a word only
  older questions had ("And for the secondary one?", then "Is it paid?" rewritten with "primary"):
  of those, the one most like the user's word (by the embedding model: "primary" is more like
  "secondary" than "carer" is) is replaced by the user's;
- the evidence found for the rewrite has a sentence with the words the user typed now but not the
  carried word, and another with the carried word but not the user's ("Domestic travel within
  Norway: NOK 550" beside "International travel: NOK 800"): the two are alternatives, and the
  user named one.

The pipeline searches the second reading too (one more retrieval, no model call): when both
readings find the same evidence, the second, which keeps the user's words, is answered; when they
find different evidence, the user is asked which one they mean.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..embedding import Embedder
from ..results import Clarification, Evidence
from ..text.sentences import sentences
from ..text.terms import general_rarity, terms, word_terms
from .conversation import CLARIFYING, Asked, conversation_step

log = logging.getLogger(__name__)
WORD = re.compile(r"[\w'-]+")
#: a carried word this common in general English is not a modifier worth a second reading
MIN_RARITY = 0.15


@dataclass(frozen=True)
class Reading:
    """The follow-up read the other way: what is searched, the carried word dropped, the user's
    word put in its place (None: only dropped)."""

    searched_for: str
    dropped: str
    instead: str | None

    @property
    def note(self) -> str:
        replaced = f"which {self.instead!r} replaces" if self.instead else "which the follow-up replaces"
        return f"searched without {self.dropped!r}, {replaced}"


def content_words(text: str) -> list[str]:
    return [word for word in dict.fromkeys(WORD.findall(text.lower())) if word_terms(word)]


def has(text_terms: set[int], word: str) -> bool:
    return word_terms(word) <= text_terms


def other_reading(
    typed: str,
    rewrite: str,
    earlier_questions: Sequence[str],
    evidence_texts: Sequence[str],
    similarity: Callable[[str, str], float],
) -> Reading | None:
    """The second reading of ``rewrite`` (the stand-alone form of ``typed``), or None when nothing
    carried over looks replaced. ``earlier_questions``: the user's earlier turns, oldest first;
    ``evidence_texts``: the passages found for the rewrite."""
    typed_terms, rewrite_terms = terms(typed), terms(rewrite)
    carried = [
        word for word in content_words(rewrite) if not has(typed_terms, word) and general_rarity(word) >= MIN_RARITY
    ]
    if not carried:
        return None
    if earlier_questions:
        replaced = replaced_by_last_question(carried, earlier_questions, typed_terms, rewrite_terms, similarity)
        if replaced is not None:
            dropped, instead = replaced
            return Reading(swapped(rewrite, dropped, instead), dropped, instead)
    own = [word for word in content_words(typed) if general_rarity(word) >= MIN_RARITY]
    if own:
        # a heading names its section, not an alternative to the user's words
        said = [terms(s) for text in evidence_texts for s in sentences(text) if not s.startswith("#")]
        for word in sorted(carried, key=general_rarity, reverse=True):
            with_own = any(all(has(s, w) for w in own) and not has(s, word) for s in said)
            with_carried = any(has(s, word) and not any(has(s, w) for w in own) for s in said)
            # a word said beside the user's ("Books may be borrowed") is what they ask about, not its rival
            together = any(has(s, word) and all(has(s, w) for w in own) for s in said)
            if with_own and with_carried and not together:
                return Reading(swapped(rewrite, word, None), word, None)
    return None


def word_similarity(embedder: Embedder, first: str, second: str) -> float:
    """The cosine of two words' (or short phrases') question vectors."""
    a, b = embedder.query_embed(first), embedder.query_embed(second)
    return float(np.dot(a, b) / ((np.linalg.norm(a) * np.linalg.norm(b)) or 1.0))


def replaced_by_last_question(
    carried: Sequence[str],
    earlier: Sequence[str],
    typed_terms: set[int],
    rewrite_terms: set[int],
    similarity: Callable[[str, str], float],
) -> tuple[str, str] | None:
    """A carried word only older questions had, while the user's last question typed a word the
    rewrite lacks: that word replaced the carried word most like it (the last question's words,
    one or two, as typed)."""
    last = terms(earlier[-1])
    lost = [
        word
        for word in content_words(earlier[-1])
        if not has(rewrite_terms, word) and not has(typed_terms, word) and general_rarity(word) >= MIN_RARITY
    ]
    older = set().union(*(terms(question) for question in earlier[:-1])) if len(earlier) > 1 else set()
    stale = [word for word in carried if not has(last, word) and has(older, word)]
    if not lost or not stale or len(lost) > 2:
        return None
    instead = " ".join(as_typed(word, earlier[-1]) for word in lost)
    return max(stale, key=lambda word: similarity(word, instead)), instead


def as_typed(word: str, text: str) -> str:
    """``word`` (lower case) as ``text`` writes it: "C310", not "c310"."""
    found = re.search(rf"(?<![\w'-]){re.escape(word)}(?![\w'-])", text, flags=re.IGNORECASE)
    return found.group() if found else word


def swapped(text: str, word: str, instead: str | None) -> str:
    """``text`` with ``word`` (whole, any case) replaced by ``instead``, or removed."""
    changed = re.sub(rf"\b{re.escape(word)}\b", instead or "", text, count=1, flags=re.IGNORECASE)
    return " ".join(changed.split()).replace(" ?", "?")


def second_reading(
    evidence: Evidence, asked: Asked, similarity: Callable[[str, str], float], enabled: bool
) -> Reading | None:
    """The rewrite's other reading, worth searching too (``enabled``: ``retrieval.conversation.readings``): only
    a follow-up the model rewrote has one."""
    if asked.how != "rewritten" or not enabled:
        return None
    found = [passage.text for passage in evidence.passages]
    return other_reading(asked.question, asked.searched_for, asked.earlier, found, similarity)


def as_asked(
    evidence: Evidence, asked: Asked, reading: Reading | None, second: Evidence | None, timings: dict[str, float]
) -> Evidence:
    """A follow-up's evidence as the user asked it: its own question and conversation step and,
    with the ``second`` reading's evidence, the two weighed: the same evidence answers the reading
    that keeps the user's words, different evidence asks the user which one they mean."""
    step = conversation_step(asked)
    if reading is not None and second is not None:
        same = same_evidence(evidence, second)
        log.debug("conversation: %s; the evidence is %s", reading.note, "the same" if same else "different")
        if evidence.abstained or same:
            evidence = second.model_copy(update={"timings_ms": timings})
            step = step.model_copy(update={"note": reading.note})
        elif not second.abstained:
            evidence.abstained, evidence.abstain_reason = True, "needs_clarification"
            evidence.clarification = Clarification(
                question=CLARIFYING.format(asked.searched_for, reading.searched_for),
                readings=[asked.searched_for, reading.searched_for],
            )
    evidence.question, evidence.conversation = asked.question, step
    return evidence


def same_evidence(first: Evidence, second: Evidence) -> bool:
    """Whether two readings found the same evidence: the best cluster of each starts in one place
    of one source (a second reading that only reorders the rest reads the same text first)."""
    if not first.clusters or not second.clusters:
        return not first.clusters and not second.clusters
    a, b = first.clusters[0].passages[0], second.clusters[0].passages[0]
    return a.source == b.source and a.start < b.end and b.start < a.end
