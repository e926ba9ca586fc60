"""Parts searched by their own words alone, in every document (the form's and the model's parts):
their search (``search_alone``), and a chain question's ranking by the names its parts agree on
(``bridged``).

Such a part has no gate or context of its own: the whole question's gate decides whether to
answer, and the parts share the context (``multipart``). It takes ``retrieval.parts.top_k`` hits
from each retriever, as a named part does: on MultiHop-RAG's held-out questions with no source
named, 15 (a whole question's ``top_k``) lost all evidence 0.600 to 0.578 for 94 to 78 ms (p50).

A chain question's clauses all describe one thing the question does not name ("Which company,
accused of A, is also said to B?"): ``chains``. A clause's own words find passages on its topic
from many documents ("was fined by regulators": every fined company); those that name the thing
the other clauses' passages agree on are about it. So each part ranks first its clusters that hold
one of the names the best passages of two parts or more agree on (``bridge``), with no further
search and no model call. On MultiHop-RAG's tuning half with no source named, the inference
questions' gold articles among the first 10 documents went from 0.801 to 0.841, and every gold
article reached the context for 0.503 of them, against 0.429. Searching such a part again with
those names added found no more.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..config.retrieval import RetrievalSettings
from ..results import Evidence
from .multipart import PartFound
from .parts import QuestionPart
from .ranking import ScoredCluster, fused_and_ranked
from .search import Scope, Searcher

#: a name as written: capitalised words, joined by "of" or "&" ("Bank of England", "AT&T")
NAME = re.compile(r"\b[A-Z][\w&'.-]*[\w&](?:\s+(?:of\s+|&\s+)?[A-Z][\w&'.-]*[\w&])*")
#: the other parts' best clusters read for names
READ_CLUSTERS = 2
#: the agreed names a part's clusters are ranked by
BRIDGE_NAMES = 2


def best_texts(one: PartFound, clusters: int = READ_CLUSTERS) -> str:
    return " ".join(m.hit.payload.text for scored in one.ranked[:clusters] for m in scored.cluster.members)


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


def bridge(names: Sequence[list[str] | None], part: int, own: str) -> tuple[str, ...]:
    """The names held by the best passages of two parts or more (of every part, when there are
    two), one of them another part than ``part``, that ``part``'s words (``own``) do not hold; most
    parts first, then most often: what a chain question's clauses share without naming it.
    ``names``: each part's best passages' names (``names_in``), None for a part with none. With two
    parts, a name only the other part's passages hold is not taken: where that part's best passage
    is about another thing (a fine of another company), it would lead this part astray."""
    holding: Counter[str] = Counter()
    others_holding: Counter[str] = Counter()
    mentions: Counter[str] = Counter()
    for n, held in enumerate(names):
        if held is None:
            continue
        mentions.update(held)
        holding.update(set(held))
        if n != part:
            others_holding.update(set(held))
    agreed = min(2, sum(held is not None for held in names))
    own = own.lower()
    ranked = sorted(
        (name for name, held in holding.items() if held >= agreed and others_holding[name] and name.lower() not in own),
        key=lambda name: (-holding[name], -mentions[name], name),
    )
    return tuple(ranked[:BRIDGE_NAMES])


def names_held(scored: ScoredCluster, names: Sequence[str]) -> bool:
    """Whether one of ``names`` is in a chunk of the cluster."""
    return any(name in member.hit.payload.text for member in scored.cluster.members for name in names)


def bridged(found: Sequence[PartFound]) -> list[PartFound]:
    """A chain question's parts, each with its clusters that hold a name the best passages of two
    parts or more agree on (``bridge``, read from every part's first ranking) first, in their
    order, and the rest after."""
    names = [names_in(best_texts(one)) if one.ranked else None for one in found]
    kept = []
    for n, one in enumerate(found):
        agreed = bridge(names, n, one.searched_for or "")
        if agreed and one.scope is not None:
            holding: list[ScoredCluster] = []
            rest: list[ScoredCluster] = []
            for scored in one.ranked:
                (holding if names_held(scored, agreed) else rest).append(scored)
            one = replace(one, ranked=[*holding, *rest], names_first=agreed if holding else ())
        kept.append(one)
    return kept


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
    ranked, _ = fused_and_ranked(lists, options, retrievers, timings, vectors.question)
    searched = Evidence(
        question=vectors.question, abstained=False, retrievers=retrievers, clusters=[], timings_ms=timings
    )
    return PartFound(part, vectors.question, described, searched, ranked, scope=within)
