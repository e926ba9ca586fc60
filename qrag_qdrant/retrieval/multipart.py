"""A question of several parts answered from the evidence of each: every part has its own
quorum, ranking and share of the context, so that one part's strong cluster cannot crowd out
another part's evidence, and a part with no evidence makes the whole question abstain, naming it.

The pipeline searches each part (``PartFound``); this module only shares the context out and
joins the parts into one ``Evidence``, numbered [1], [2], ... across them, grouped by part.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..generation.checks.specifics import missing_details, own_specifics
from ..results import Evidence, EvidenceCluster, QuestionPartEvidence, file_name_words
from .clustering import Cluster
from .context import build_context
from .parts import QuestionPart
from .ranking import ScoredCluster
from .search import Scope


@dataclass
class PartFound:
    """What one part's search found: its evidence (None when no document may answer it, with
    ``missing`` saying why) and every cluster that reached quorum, best first."""

    part: QuestionPart
    searched_for: str
    filter: str | None
    evidence: Evidence | None = None
    ranked: Sequence[ScoredCluster] = ()
    missing: str | None = None
    #: the documents a part searched by its own words was searched in (``alone_parts``)
    scope: Scope | None = None
    #: of a chain question: the names two parts' best passages agree on, whose clusters it ranks first
    names_first: tuple[str, ...] = ()


def own_bests(found: Sequence[PartFound]) -> list[str | None]:
    """Each part's own best document, no two parts the same one. Where two parts' rankings open
    with one document (in a few short documents, a part's words match its sibling's too), it is
    the best of the part whose own details it states (``claimed``: "the 2024 handbook" takes
    handbook-2024.md from "the 2023 handbook"), else of the part that prefers it most over its
    next document (the larger margin of score), and the other part's best is its next; without
    such a clash each part's best is its first."""
    claims = claimed(found)
    ranked = [
        documents_ranked(one.ranked, {source for source, n in claims.items() if n == part})
        for part, one in enumerate(found)
    ]
    bests: list[str | None] = [None] * len(found)
    waiting = set(range(len(found)))
    while waiting:
        offers = []  # (margin, earlier part first, part, the document it would take)
        for n in sorted(waiting):
            free = sorted(
                (
                    (score, source)
                    for source, score in ranked[n].items()
                    if source not in bests and claims.get(source, n) == n
                ),
                reverse=True,
            )
            margin = (free[0][0] - free[1][0] if len(free) > 1 else math.inf) if free else -math.inf
            offers.append((margin, -n, n, free[0][1] if free else None))
        *_, taker, source = max(offers)
        bests[taker] = source
        waiting.discard(taker)
    return bests


def claimed(found: Sequence[PartFound]) -> dict[str, int]:
    """The documents the parts rank that state the own details of one part only (the details its
    words state and no other part's do: ``own_specifics``) in what names the document (its file
    name, title, publisher or date: not its text, where a sports article names every club): which
    part each belongs to."""
    texts = [one.searched_for for one in found]
    details = [own_specifics(text, texts[:n] + texts[n + 1 :]) for n, text in enumerate(texts)]
    if sum(map(bool, details)) < 2:
        return {}
    claims: dict[str, int] = {}
    for one in found:
        for member in (member for scored in one.ranked for member in scored.cluster.members):
            if member.source in claims:
                continue
            payload = member.hit.payload
            named = (file_name_words(member.source), payload.title, payload.publisher, payload.published)
            said = " ".join(filter(None, named))
            stating = [n for n, own in enumerate(details) if own and not missing_details(own, said)]
            if len(stating) == 1:
                claims[member.source] = stating[0]
    return claims


def documents_ranked(ranked: Sequence[ScoredCluster], claimed: Collection[str]) -> dict[str, float]:
    """Each document a part's clusters lead, and each of its ``claimed`` documents a cluster holds,
    at the score of the best cluster that does: a cluster of two near-identical passages ("four
    weeks' notice", "six weeks' notice") led by the 2024 handbook ranks the 2023 one for the part
    that names 2023."""
    scores: dict[str, float] = {}
    for scored in ranked:
        for member in scored.cluster.members:
            if member is scored.cluster.leader or member.source in claimed:
                scores.setdefault(member.source, scored.score)
    return scores


def without_documents(ranked: Sequence[ScoredCluster], others: Collection[str | None]) -> list[ScoredCluster]:
    """The clusters, each without its chunks of ``others`` (other parts' own bests); a cluster of
    nothing else left out."""
    kept = []
    for scored in ranked:
        members = [member for member in scored.cluster.members if member.source not in others]
        if len(members) == len(scored.cluster.members):
            kept.append(scored)
        elif members:
            kept.append(ScoredCluster(Cluster(members), scored.score))
    return kept


def interleaved(rankings: Sequence[Sequence[ScoredCluster]]) -> list[ScoredCluster]:
    """The parts' clusters as the question's one ranking, taken in turn: each part's best, then
    each part's second, ..."""
    return [ranking[n] for n in range(max(map(len, rankings), default=0)) for ranking in rankings if n < len(ranking)]


def one_per_document(ranked: Sequence[ScoredCluster], sent: Collection[str] = ()) -> list[ScoredCluster]:
    """The clusters of documents not yet represented first, best first, then the rest: a part
    answered by several documents sends each of them before a second place in one, and a
    document an earlier part sent (``sent``) comes after the part's own."""
    seen: set[str] = set(sent)
    first: list[ScoredCluster] = []
    again: list[ScoredCluster] = []
    for scored in ranked:
        source = scored.cluster.members[0].source
        (again if source in seen else first).append(scored)
        seen.add(source)
    return first + again


def shares(found: Sequence[PartFound], clusters: int, words: int) -> tuple[int, int]:
    """The clusters (rounded up) and words each part with evidence gets: an equal share."""
    searched = max(1, sum(one.evidence is not None for one in found))
    return math.ceil(clusters / searched), words // searched


def shared_context(found: Sequence[PartFound], clusters: int, words: int) -> list[list[EvidenceCluster]]:
    """Each part's clusters, in the order of ``found`` (none for a part without evidence): its
    share (``shares``), its passages numbered after the earlier parts' and marked with its
    number, text an earlier part sent left out (two parts in one publisher's documents send its
    two best different places). A part sends no cluster of a document that is another part's own
    best (``own_bests``): in a few documents, the first part would otherwise fill its share with the
    next part's answer."""
    share_clusters, share_words = shares(found, clusters, words)
    sent: dict[str, list[tuple[int, int]]] = {}
    bests = own_bests(found)
    citation, rank, joined = 0, 0, []
    for number, one in enumerate(found, start=1):
        others = {best for n, best in enumerate(bests, start=1) if n != number}
        ranked = without_documents(one.ranked, others)
        context = (
            build_context(one_per_document(ranked, sent), share_clusters, share_words, sent, citation)
            if one.evidence is not None
            else []
        )
        citation += sum(len(cluster.passages) for cluster in context)
        kept = []
        for cluster in context:
            rank += 1
            passages = [passage.model_copy(update={"part": number}) for passage in cluster.passages]
            kept.append(cluster.model_copy(update={"rank": rank, "passages": passages}))
        joined.append(kept)
    return joined


def joined_evidence(
    question: str, found: Sequence[PartFound], clusters: int, words: int, whole: Evidence | None = None
) -> Evidence:
    """The question's evidence from its parts': the context shared out (``shared_context``).

    Parts that name their documents (a publisher, a date) decide together: the question abstains
    when a part has none (``part_missing``: a publisher the namespace lacks, or no quorum within
    the part's documents), or when the gate doubts the evidence of every part (a part searched in a
    few documents agrees less than a whole question, so one part's doubt is not enough); its
    confidence is the least of the parts'. Parts searched by their own words alone in every
    document (``whole``: the whole question's evidence) are judged as the whole question is: the
    gate's decision on it, which its features describe, so that a question whose parts each find
    something somewhere still abstains when the namespace does not hold it; a part of them whose
    words found no quorum is named, and the others answer."""
    searched = [one for one in found if one.evidence is not None]
    contexts = shared_context(found, clusters, words)
    parts, timings = [], {}
    for one, context in zip(found, contexts, strict=True):
        missing = one.missing or (None if one.ranked else f"the retrievers agreed on no evidence from {one.part.label}")
        parts.append(
            QuestionPartEvidence(
                label=one.part.label,
                searched_for=one.searched_for,
                filter=one.filter,
                citations=[p.citation for cluster in context for p in cluster.passages],
                missing=missing,
                names_first=list(one.names_first),
            )
        )
        if one.evidence is not None:
            timings.update({f"part {len(parts)} {stage}": ms for stage, ms in one.evidence.timings_ms.items()})
    first = whole or (searched[0].evidence if searched else None)
    share_clusters, share_words = shares(found, clusters, words)
    if whole is not None:
        reason = whole.abstain_reason
        confidence = whole.confidence or 0.0
    else:
        doubted = all(one.evidence is not None and one.evidence.abstain_reason == "low_confidence" for one in searched)
        reason = "part_missing" if any(part.missing for part in parts) else ("low_confidence" if doubted else None)
        confidence = min((one.evidence.confidence or 0.0 for one in searched if one.evidence), default=0.0)
    return Evidence(
        question=question,
        searched_for=question,
        abstained=reason is not None,
        abstain_reason=reason,
        confidence=confidence,
        gate_threshold=first.gate_threshold if first else None,
        retrievers=first.retrievers if first else 0,
        clusters=[cluster for context in contexts for cluster in context],
        context_policy=f"parts: {len(found)}, {share_clusters} clusters and {share_words} words each",
        parts=parts,
        timings_ms=timings,
        gate_features=first.gate_features if first else None,
        key_terms=first.key_terms if first else {},
        unseen_terms=first.unseen_terms if first else [],
    )
