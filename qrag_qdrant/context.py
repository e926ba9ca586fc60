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


def candidate_span(candidate: Candidate) -> Span:
    start, end = candidate.span
    return Span(candidate.source, start, end, str(candidate.hit.payload["text"]))


def build_context(ranked: Sequence[ScoredCluster]) -> list[EvidenceCluster]:
    """Evidence clusters, best first, their passages numbered [1], [2], ... across clusters."""
    clusters: list[EvidenceCluster] = []
    citation = 0
    for rank, scored in enumerate(ranked, start=1):
        passages = []
        for span in merge_spans(candidate_span(member) for member in scored.cluster.members):
            citation += 1
            passages.append(Passage(citation=citation, source=span.source, start=span.start, end=span.end,
                                    text=span.text))
        clusters.append(EvidenceCluster(rank=rank, score=round(scored.score, 6), support=scored.cluster.support,
                                        retrievers=scored.cluster.retrievers, passages=passages))
    return clusters
