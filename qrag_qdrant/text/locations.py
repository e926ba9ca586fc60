"""Where a span of a document's extracted text came from: PDF pages, or a heading path.

A loader's blocks leave marks, (offset, page, heading) where the location changes; a chunk
stores the marks that cover it, so any span the coordinator later cuts from chunks (merged,
windowed) can still say "p. 12–13" or "Onboarding › Accounts".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

HEADING_SEPARATOR = " › "


class Mark(NamedTuple):
    offset: int
    page: int | None
    heading: str | None


def marks_covering(marks: Sequence[Mark], start: int, end: int) -> list[Mark]:
    """The mark in force at ``start`` and every later one before ``end``."""
    before = [m for m in marks if m.offset <= start]
    return ([before[-1]] if before else []) + [m for m in marks if start < m.offset < end]


def headings_within(marks: Iterable[Mark | Sequence[object]], start: int, end: int) -> list[tuple[int, str]]:
    """The headings in force over the span ``[start, end)``, each with its offset in the span."""
    covering = marks_covering(sorted(Mark(*m) for m in marks), start, end)
    return [(max(m.offset, start) - start, m.heading) for m in covering if m.heading is not None]


def locate(marks: Iterable[Mark | Sequence[object]], start: int, end: int) -> tuple[list[int] | None, str | None]:
    """The [first, last] page of the span ``[start, end)``, and the heading over most of its text."""
    covering = marks_covering(sorted(Mark(*m) for m in marks), start, end)
    pages = [m.page for m in covering if m.page is not None]
    bounds = [max(m.offset, start) for m in covering] + [end]
    lengths: dict[str, int] = {}
    for mark, left, right in zip(covering, bounds, bounds[1:]):
        if mark.heading is not None:
            lengths[mark.heading] = lengths.get(mark.heading, 0) + right - left
    return ([min(pages), max(pages)] if pages else None), (max(lengths, key=lengths.__getitem__) if lengths else None)
