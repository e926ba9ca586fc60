"""From ranked clusters to numbered passages: overlapping chunks of a source are merged,
so the model never reads the same text twice, and each cluster can be held to a word
budget centred where its members agree most, widened to whole sentences.

``adaptive_plan`` decides how much of that evidence the model needs: the best cluster alone
when it clearly leads, more only when the evidence is spread over several."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..results import EvidenceCluster, Passage
from ..text.locations import Mark, headings_within, locate
from ..text.sentences import sentence_starts
from ..text.words import word_bounds
from .clustering import Cluster
from .fusion import Candidate
from .ranking import ScoredCluster

#: how far a window may grow to reach a sentence boundary, as a share of its words
SENTENCE_SLACK = 0.2


def to_sentences(text: str, start: int, end: int, words: int, bounds: np.ndarray | None = None) -> tuple[int, int]:
    """``text[start:end]`` widened to begin and end on sentence boundaries, each side by at
    most ``SENTENCE_SLACK`` of ``words`` (at least 5 words); a side with no boundary that
    near keeps its word boundary. ``bounds``: ``word_bounds(text)``, if the caller has them."""
    slack = max(5, round(words * SENTENCE_SLACK))
    bounds = word_bounds(text) if bounds is None else bounds
    word_starts, word_ends = bounds[:, 0], bounds[:, 1]
    boundaries = np.array([0, *sentence_starts(text), len(text)])
    # the words text[a:b] holds, whole or in part: those ending after a and starting before b
    before = boundaries[
        (boundaries <= start)
        & (np.searchsorted(word_starts, start) - np.searchsorted(word_ends, boundaries, side="right") <= slack)
    ]
    after = boundaries[
        (boundaries >= end)
        & (np.searchsorted(word_starts, boundaries) - np.searchsorted(word_ends, end, side="right") <= slack)
    ]
    new_start = int(before.max()) if len(before) else start
    new_end = len(text[: int(after.min())].rstrip()) if len(after) else end
    return new_start, max(new_end, end)


NO_MARKS: frozenset[Mark] = frozenset()


@dataclass(frozen=True)
class Span:
    source: str
    start: int
    end: int
    text: str
    #: where the source's pages or headings change, as far as the chunks behind the span know
    marks: frozenset[Mark] = NO_MARKS


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """Union of overlapping spans per source, text stitched exactly (``text == source[start:end]``).

    Spans that only touch (one ends where the next starts) stay apart. Sources keep their
    first-seen order; within a source, spans are in reading order.
    """
    by_source: dict[str, list[Span]] = {}
    for span in spans:
        by_source.setdefault(span.source, []).append(span)
    merged: list[Span] = []
    for source_spans in by_source.values():
        ordered = sorted(source_spans, key=lambda s: (s.start, -s.end))
        group = [ordered[0]]  # the spans that overlap, each reaching further than those before it
        marks = ordered[0].marks
        for span in ordered[1:]:
            if span.start < group[-1].end:
                marks |= span.marks
                if span.end > group[-1].end:
                    group.append(span)
                continue
            merged.append(_stitched(group, marks))
            group, marks = [span], span.marks
        merged.append(_stitched(group, marks))
    return merged


def _stitched(group: list[Span], marks: frozenset[Mark]) -> Span:
    """One span over ``group`` (sorted, overlapping, each ending later), its text stitched once."""
    first = group[0]
    if len(group) == 1 and marks == first.marks:
        return first
    pieces = [first.text, *(span.text[previous.end - span.start :] for previous, span in itertools.pairwise(group))]
    return Span(first.source, first.start, group[-1].end, "".join(pieces), marks)


def unsent_parts(span: Span, sent: list[tuple[int, int]]) -> list[Span]:
    """The parts of ``span`` outside the ``sent`` intervals of its source, whitespace trimmed."""
    parts, cursor = [], span.start
    for start, end in [*sorted(sent), (span.end, span.end)]:
        if end <= cursor:
            continue
        if start > cursor:
            text = span.text[cursor - span.start : min(start, span.end) - span.start]
            if text.strip():
                lead = len(text) - len(text.lstrip())
                parts.append(
                    Span(span.source, cursor + lead, cursor + lead + len(text.strip()), text.strip(), span.marks)
                )
        cursor = max(cursor, end)
        if cursor >= span.end:
            break
    return parts


def candidate_span(candidate: Candidate) -> Span:
    payload = candidate.hit.payload
    marks = frozenset(Mark(*mark) for mark in payload.marks) if payload.marks else NO_MARKS
    return Span(payload.source, payload.start, payload.end, payload.text, marks)


def agreement_window(spans: Sequence[Span], members: Sequence[Candidate], words: int) -> Span:
    """The ``words``-word window, over all the spans, that the members cover most strongly,
    widened to whole sentences (``to_sentences``).

    Each word weighs the fused RRF of the member chunks that contain it, so the window
    settles where the best-ranked chunks of several retrievers overlap.
    """
    best: tuple[float, Span] | None = None
    for span in spans:
        words_here = word_bounds(span.text)
        bounds = words_here + span.start
        own = [m for m in members if m.source == span.source]
        starts, ends = np.array([m.span[0] for m in own]), np.array([m.span[1] for m in own])
        covered = (bounds[:, :1] >= starts[None, :]) & (bounds[:, :1] < ends[None, :])
        weight = covered.astype(float) @ np.array([m.rrf for m in own])
        width = min(words, len(bounds))
        sums = np.convolve(weight, np.ones(width), mode="valid")
        first = int(np.argmax(sums))
        if best is None or sums[first] > best[0]:
            start, end = to_sentences(
                span.text, int(words_here[first, 0]), int(words_here[first + width - 1, 1]), width, words_here
            )
            best = (
                float(sums[first]),
                Span(span.source, span.start + start, span.start + end, span.text[start:end], span.marks),
            )
    assert best is not None
    return best[1]


def voted_sources(cluster: Cluster) -> list[str]:
    """The leader's source, then each other source one of whose members holds a retriever's best
    rank in the cluster: near-duplicate text in two documents (a template with another value) can
    join one cluster, and the quorum that chose it counted both documents' chunks."""
    best = cluster.best_ranks
    voted = [m.source for m in cluster.members if any(best[name] == rank for name, rank in m.ranks.items())]
    return list(dict.fromkeys([cluster.leader.source, *voted]))


def agreed_windows(spans: Sequence[Span], cluster: Cluster, words: int) -> list[Span]:
    """One agreement window (``agreement_window``) per voted source (``voted_sources``) that still
    has text to send, ``words`` shared equally between them: the model reads what every retriever
    ranked best in the cluster, not the leader's document alone. When an earlier cluster sent every
    voted source's text, the window is the one the rest of the cluster agrees on."""
    sources = [source for source in voted_sources(cluster) if any(span.source == source for span in spans)]
    if not sources:
        return [agreement_window(spans, cluster.members, words)]
    share = max(1, words // len(sources))
    return [
        agreement_window(
            [span for span in spans if span.source == source],
            [member for member in cluster.members if member.source == source],
            share,
        )
        for source in sources
    ]


def build_context(
    ranked: Sequence[ScoredCluster],
    limit: int,
    word_budget: int = 0,
    sent: dict[str, list[tuple[int, int]]] | None = None,
    first_citation: int = 0,
) -> list[EvidenceCluster]:
    """The best ``limit`` clusters that still add text, passages numbered [1], [2], ... across them.

    Text an earlier cluster already sent is cut from later ones, so no text is sent twice; a
    cluster with nothing new (leader clustering can leave a window beside its cluster) is skipped.

    With a ``word_budget``, each cluster sends one passage, its agreement window, and the
    budget is shared in proportion to 1/rank: the cluster at rank r of ``limit`` gets
    ``remaining * (1/r) / sum(1/j for j in r..limit)`` words, so what one cluster leaves
    unused goes to the ones after it. The best-agreed evidence gets the most room.

    ``sent``: the text other evidence already sends, per source (added to as this context is
    built); ``first_citation``: the number before this context's first passage.
    """
    clusters: list[EvidenceCluster] = []
    sent = {} if sent is None else sent
    citation, remaining = first_citation, word_budget
    for scored in ranked:
        if len(clusters) == limit:
            break
        members = scored.cluster.members
        spans = [
            part
            for span in merge_spans(candidate_span(member) for member in members)
            for part in unsent_parts(span, sent.get(span.source, []))
        ]
        if not spans:
            continue
        if word_budget:
            rank = len(clusters) + 1
            share = round(remaining / rank / sum(1 / j for j in range(rank, limit + 1)))
            if share < 1:
                break
            spans = agreed_windows(spans, scored.cluster, share)
            remaining -= sum(len(span.text.split()) for span in spans)
        about = {member.hit.payload.source: member.hit.payload for member in members}
        passages = []
        for span in spans:
            citation += 1
            document = about[span.source]
            sent.setdefault(span.source, []).append((span.start, span.end))
            pages, heading = locate(span.marks, span.start, span.end)
            passages.append(
                Passage(
                    citation=citation,
                    source=span.source,
                    start=span.start,
                    end=span.end,
                    text=span.text,
                    pages=pages,
                    heading=heading,
                    heading_marks=headings_within(span.marks, span.start, span.end),
                    title=document.title,
                    publisher=document.publisher,
                    published=document.published,
                )
            )
        ranks = scored.cluster.best_ranks  # support and retrievers, computed once
        clusters.append(
            EvidenceCluster(
                rank=len(clusters) + 1,
                score=round(scored.score, 6),
                support=len(ranks),
                retrievers=list(ranks),
                passages=passages,
                expansions=scored.cluster.expansions,
            )
        )
    return clusters


def adaptive_plan(ranked: Sequence[ScoredCluster], margin: float, most: int) -> tuple[int, str]:
    """How many of the best clusters the model needs, and why, from their ranking scores: the
    best alone when it leads the next by at least ``margin``; else every cluster within
    ``margin`` of the best, at most ``most``. Quorum's best evidence comes first, so a clear
    lead means the rest would only distract a small model and lengthen its prompt."""
    if len(ranked) < 2:
        return 1, "adaptive: one cluster reached quorum"
    lead = ranked[0].score - ranked[1].score
    if lead >= margin:
        return 1, f"adaptive: top cluster margin {lead:.2f}"
    close = sum(ranked[0].score - scored.score < margin for scored in ranked[:most])
    return close, f"adaptive: evidence spread, {close} clusters within {margin:g} of the top (margin {lead:.2f})"
