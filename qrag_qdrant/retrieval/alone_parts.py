"""Parts searched by their own words alone, in every document (the form's and the model's parts):
their search (``search_alone``), and a chain question's second round (``second_round``).

Such a part has no gate or context of its own: the whole question's gate decides whether to
answer, and the parts share the context (``multipart``). It takes ``retrieval.parts.top_k`` hits from each
retriever, as a named part does: on MultiHop-RAG's held-out questions with no source named, 15
(a whole question's ``top_k``) lost all evidence 0.600 to 0.578 for 94 to 78 ms (p50).

The second round: after the first search, what a part lacks, and what the other parts found that
may find it. Only a chain question is searched again (``chains``): its clauses all describe one
thing the question does not name ("Which company, accused of A, is also said to B?"), and a clause
whose words are too general to find its document alone finds it beside the name the other
clauses' documents agree on. A part is searched again when its first search found no document of
its own (no cluster reached quorum, or its best document is one an earlier part found first), or
its best cluster holds none of the names the other parts' best passages agree on; the second
search adds those names (``bridge``), and no model is asked. Its best cluster joins the part's,
first, only when it brings a document no other part found first, and what the first lacked
(``brings_more``). It is off unless ``retrieval.parts.rounds = 2``: on MultiHop-RAG's held-out
questions it moved all evidence from 0.600 to 0.603 at 30% more time.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..config.retrieval import RetrievalSettings
from ..results import Evidence
from .multipart import PartFound, best_document
from .parts import QuestionPart
from .ranking import fused_and_ranked
from .search import Scope, Searcher

#: a name as written: capitalised words, joined by "of" or "&" ("Bank of England", "AT&T")
NAME = re.compile(r"\b[A-Z][\w&'.-]*[\w&](?:\s+(?:of\s+|&\s+)?[A-Z][\w&'.-]*[\w&])*")
#: the other parts' best clusters read for names
READ_CLUSTERS = 2
#: the names a second search adds
BRIDGE_NAMES = 2


def weak_parts(found: Sequence[PartFound]) -> list[int]:
    """The parts whose first search found no document of their own: nothing at quorum, or a best
    document an earlier part's best already is; or whose best cluster holds none of the names the
    other parts agree on."""
    weak: list[int] = []
    firsts: list[str] = []
    for n, one in enumerate(found):
        if one.missing is not None and one.evidence is None:
            continue  # no document may answer it: no search finds one
        first = best_document(one)
        names = bridge(found, n)
        if first is None or first in firsts or (names and not holds_any(one, names)):
            weak.append(n)
        if first is not None:
            firsts.append(first)
    return weak


def best_texts(one: PartFound, clusters: int = READ_CLUSTERS) -> str:
    return " ".join(m.hit.payload.text for scored in one.ranked[:clusters] for m in scored.cluster.members)


def holds_any(one: PartFound, names: Sequence[str]) -> bool:
    """Whether the part's best cluster, the one its share surely sends, holds one of ``names``."""
    text = best_texts(one, 1)
    return any(name in text for name in names)


def names_in(text: str) -> list[str]:
    """The names ``text`` holds, each time it holds one; a sentence's first word left out unless
    it joins another."""
    names: list[str] = []
    for match in NAME.finditer(text):
        starts_sentence = re.search(r"(?:^|[.!?:]\s+|\n)\s*$", text[: match.start()]) is not None
        if starts_sentence and " " not in match[0]:
            continue
        names.append(match[0])
    return names


def bridge(found: Sequence[PartFound], weak: int) -> tuple[str, ...]:
    """The names the other parts' best passages hold that part ``weak``'s words do not, most
    parts first, then most often: what a chain question's clauses share without naming it."""
    own = (found[weak].searched_for or "").lower()
    parts_holding: Counter[str] = Counter()
    mentions: Counter[str] = Counter()
    others = [one for n, one in enumerate(found) if n != weak and one.ranked]
    for one in others:
        names = names_in(best_texts(one))
        mentions.update(names)
        parts_holding.update(set(names))
    agreed = min(2, len(others))
    ranked = sorted(
        (name for name, held in parts_holding.items() if held >= agreed and name.lower() not in own),
        key=lambda name: (-parts_holding[name], -mentions[name], name),
    )
    return tuple(ranked[:BRIDGE_NAMES])


def brings_more(again: PartFound, first: PartFound, others: Sequence[PartFound], names: Sequence[str]) -> bool:
    """Whether the second search's best document is one no other part found first, and it brings
    what the first lacked: a document of its own, or the names the others agree on."""
    taken = {best_document(one) for one in others}
    best = best_document(again)
    if best is None or best in taken:
        return False
    lacked = holds_any(again, names) and not holds_any(first, names)
    return best_document(first) in taken or not first.ranked or lacked


def chains(question: str) -> bool:
    """Whether the question asks for one thing its parts describe ("Which company, accused of A,
    ...?"): a comparison's or a time order's parts describe different things, and share no name."""
    return re.match(r"\s*(?:who|what|which)\b", question, re.IGNORECASE) is not None


def search_alone(
    searcher: Searcher,
    options: RetrievalSettings,
    part: QuestionPart,
    within: Scope,
    retrievers: int,
    described: str | None = None,
) -> PartFound:
    """``part`` searched by its own words in the documents ``within`` lets it read: its clusters
    at quorum, best first."""
    vectors = searcher.embed(part.clause or "")
    timings: dict[str, float] = {}
    lists, _ = searcher.search_embedded(vectors, (), within, options.parts.top_k)
    ranked, _ = fused_and_ranked(lists, options, retrievers, timings)
    searched = Evidence(
        question=vectors.question, abstained=False, retrievers=retrievers, clusters=[], timings_ms=timings
    )
    return PartFound(part, vectors.question, described, searched, ranked, scope=within)


def second_round(
    searcher: Searcher, options: RetrievalSettings, found: Sequence[PartFound], retrievers: int
) -> list[PartFound]:
    """Each part whose first search found no document of its own, searched again, in the same
    documents, with the names the other parts agree on; the second search's best cluster goes
    before the first's when it brings a document of its own (replacing the first search lost as
    many gold articles as it found)."""
    found = list(found)
    for n in weak_parts(found):
        names = bridge(found, n)
        first = found[n]
        if not names or first.scope is None:
            continue
        part = replace(first.part, clause=" ".join((first.part.clause or "", *names)))
        again = search_alone(searcher, options, part, first.scope, retrievers, first.filter)
        if brings_more(again, first, found[:n] + found[n + 1 :], names):
            ranked = [again.ranked[0], *first.ranked]  # the new document first, the first search's after
            found[n] = replace(first, ranked=ranked, searched_for=again.searched_for, round=2)
    return found
