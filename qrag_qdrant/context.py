"""From ranked clusters to numbered passages: overlapping chunks of a source are merged,
so the model never reads the same text twice within a cluster."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .coordinator.fusion import Candidate
from .coordinator.ranking import ScoredCluster
from .evidence import EvidenceCluster, Passage


@dataclass(frozen=True)
class Span:
    source: str
    start: int
    end: int
    text: str


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
        current: Span | None = None
        for span in sorted(source_spans, key=lambda s: (s.start, -s.end)):
            if current is not None and span.start < current.end:
                if span.end > current.end:
                    current = Span(current.source, current.start, span.end,
                                   current.text + span.text[current.end - span.start:])
                continue
            if current is not None:
                merged.append(current)
            current = span
        if current is not None:
            merged.append(current)
    return merged


def unsent_parts(span: Span, sent: list[tuple[int, int]]) -> list[Span]:
    """The parts of ``span`` outside the ``sent`` intervals of its source, whitespace trimmed."""
    parts, cursor = [], span.start
    for start, end in [*sorted(sent), (span.end, span.end)]:
        if end <= cursor:
            continue
        if start > cursor:
            text = span.text[cursor - span.start:min(start, span.end) - span.start]
            if text.strip():
                lead = len(text) - len(text.lstrip())
                parts.append(Span(span.source, cursor + lead, cursor + lead + len(text.strip()), text.strip()))
        cursor = max(cursor, end)
        if cursor >= span.end:
            break
    return parts


def candidate_span(candidate: Candidate) -> Span:
    start, end = candidate.span
    return Span(candidate.source, start, end, str(candidate.hit.payload["text"]))


def build_context(ranked: Sequence[ScoredCluster], limit: int) -> list[EvidenceCluster]:
    """The best ``limit`` clusters that still add text, passages numbered [1], [2], ... across them.

    Text an earlier cluster already sent is cut from later ones, so no text is sent twice; a
    cluster with nothing new (leader clustering can leave a window beside its cluster) is skipped.
    """
    clusters: list[EvidenceCluster] = []
    sent: dict[str, list[tuple[int, int]]] = {}
    citation = 0
    for scored in ranked:
        if len(clusters) == limit:
            break
        spans = [part for span in merge_spans(candidate_span(member) for member in scored.cluster.members)
                 for part in unsent_parts(span, sent.get(span.source, []))]
        if not spans:
            continue
        passages = []
        for span in spans:
            citation += 1
            sent.setdefault(span.source, []).append((span.start, span.end))
            passages.append(Passage(citation=citation, source=span.source, start=span.start, end=span.end,
                                    text=span.text))
        clusters.append(EvidenceCluster(rank=len(clusters) + 1, score=round(scored.score, 6),
                                        support=scored.cluster.support, retrievers=scored.cluster.retrievers,
                                        passages=passages))
    return clusters
