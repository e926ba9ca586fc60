"""What an answer says and cites: its claims (a line or sentence with the ``[n]`` citations in or
right after it), the passages it cites that were shown, and the passage that holds each claim's
own words. A citation of a passage that was not shown is invalid; with one passage shown, every
citation means it (``one_target``), and a claim citing only unshown passages is read as citing
the shown one that holds its words (``repointed``). Also the model's own confidence in its short
answer (``answer_probability``). ``answer_check`` runs the checks over what this finds.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Collection, Sequence

from ...results import Answer, Claim, Passage
from ...text.numbers import NUMBER
from ...text.sentences import sentences
from ...text.terms import terms
from ..prompt import NOT_IN_DOCUMENTS
from .reading import CITATION, bare, holding_sentences, holds, normalised
from .sentence import TIME, kinds_of, value_of, values_of

#: the quote format's answer line, and a line's leading label
ANSWER_LINE = re.compile(r"^\s*answer\s*:\s*(.*)$", re.IGNORECASE | re.MULTILINE)


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
    """A claim whose cited passages do not hold its words, while a shown passage does: read as
    citing that one, in the answer's text too, with a warning; its other checks then read that
    passage. A claim citing only passages that were not shown ("[3]" of two) takes the first shown
    passage that holds its words; one citing a shown passage that does not ("7 days [2]" where
    [1] says it: a small model numbers passages loosely) only the one shown passage that holds
    them, since with two it is not known which was meant, and only where its number or time is
    the one of its kind that passage's sentence states (``one_value_held``). A claim citing nothing
    is left as it is: its answer says it cites nothing."""
    if not claim.citations:
        return None
    words = normalised(bare(claim.text))
    holding = [p for p in passages if holds(p.text, words)] if words.strip() else []
    if claim.citations == claim.invalid_citations:
        holder = holding[0] if holding else None
    else:
        holder = holding[0] if len(holding) == 1 and one_value_held(claim, holding[0], answer.searched) else None
    if holder is None:
        return None
    cited, text = ", ".join(f"[{n}]" for n in claim.citations), cites_only(claim.text, holder.citation)
    answer.answer = (answer.answer or "").replace(claim.text, text, 1)
    claim.text, claim.citations, claim.invalid_citations = text, [holder.citation], []
    answer.warnings.append(
        f"the answer cited {cited} for words passage [{holder.citation}] holds: read as [{holder.citation}]"
    )
    return holder


#: the words before a value in which the question's word must be for the value to be the one asked
AFTER_WORDS = 3


def one_value_held(claim: Claim, passage: Passage, question: str) -> bool:
    """Whether each sentence of ``passage`` that holds the claim states no other number or time
    than the claim's, or, stating several, says the claim's right after a word of ``question``
    and no other so: a mis-cited "20:00" for "When does the gym open?" is the wrong time of "opens
    at 08:00 and closes at 20:00" (the model that mis-cited it may have misread it too), and the
    right one for "When does it close?"."""
    own = kinds_of(bare(claim.text))
    asked = terms(question)
    for sentence in holding_sentences(bare(claim.text), passage.text):
        stated = values_of(sentence)
        for kind in (kind for kind in own if kind != "name" and stated.get(kind, set()) != own[kind]):
            pattern = TIME if kind == "time" else NUMBER
            after_asked = {
                value_of(kind, found[0])
                for found in pattern.finditer(sentence)
                if terms(" ".join(sentence[: found.start()].split()[-AFTER_WORDS:])) & asked
            }
            if after_asked != own[kind]:
                return False
    return True


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
