"""Where a text's sentences start and end: one reading for every stage, so the context's windows,
the follow-up readings and the answer checks agree on what a sentence is.

A sentence ends at ``.``, ``!`` or ``?`` (and the quotes or brackets that close it) before white
space, and at a line break, unless the line was wrapped: a line that goes on in lower case, or a
long one that ends without punctuation, is joined to the next (``unwrapped``). A period after an
initial or an abbreviation ("Lyndon B. Johnson", "St. George's Church", "ca. 2 million"), or one
a word in lower case follows, ends none (``NOT_AN_END``). A list item's number ("8.", "b)") is no
sentence: it starts the one after it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

#: the white space between two sentences: after an end mark (and up to two closing quotes or
#: brackets), or around a line break
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]’”])|(?<=[.!?][\"')\]’”]{2}))\s+(?=\S)|\s*\n\s*")
#: the end of a piece that ends a sentence: an end mark, and up to two closing quotes or brackets
ENDS_SENTENCE = re.compile(r"[.!?][\"')\]’”]{0,2}$")
#: a line that starts a block of its own (a heading, a table row, a quote, a list item), never the last one's
BLOCK_START = re.compile(r"\s*(?:#|\||>|[-*+•]\s|\(?(?:\d{1,3}|[a-z])[.)]\s)", re.IGNORECASE)
#: a line at least this long that ends without a sentence's end was wrapped, not ended
WRAPPED_LINE = 60
#: a period that ends no sentence: after an initial ("Michael E. Mann"; "I" is as often a numeral
#: ending one, "World War I."), a title or an abbreviation ("St.", "Dr.", "ca.", "e.g."); and before
#: a word in lower case ("the U.S. government")
ABBREVIATION = re.compile(
    r"(?:(?<![\w.'’-])[A-HJ-Z]|\b(?:St|Mr|Mrs|Ms|Dr|Jr|Sr|Prof|Gen|Gov|Sen|Rep|Lt|Col|Capt|Mt|Ft|Messrs|ca|c|"
    r"vs|approx|est|No|Nos|Vol|pp|fig|e\.g|i\.e|cf))\.$"
)


#: a list item's number or letter ("8.", "b)"): not a sentence, the start of the next one
ENUMERATOR = re.compile(r"\(?(?:\d{1,3}|[a-z])[.)]", re.IGNORECASE)


def ends_no_sentence(before: str, after: str) -> bool:
    """Whether the period ``before`` ends with is not a sentence's end, ``after`` (a few characters)
    following it on the same line: an initial's, an abbreviation's, or one before a word in lower case."""
    lower_case = after[:1].islower() and not ENUMERATOR.match(after)  # "b) ..." starts a list's next item
    return bool(ABBREVIATION.search(before)) or (before.endswith(".") and lower_case)


def unwrapped(text: str) -> str:
    """``text`` with the line breaks inside a wrapped sentence made spaces ("every Monday at" /
    "10:00, at the end ..."), so a sentence is found whole; the same length, so offsets hold."""
    lines = text.split("\n")
    joined = [lines[0]]
    for above, line in itertools.pairwise(lines):
        before, now = above.strip(), line.strip()
        wrapped = (
            before
            and now
            and before[0] not in "#|"
            and before[-1] not in ".!?:;"
            and not BLOCK_START.match(line)
            and (now[0].islower() or now[0].isdigit() or len(before) >= WRAPPED_LINE)
        )
        joined.append((" " if wrapped else "\n") + line)
    return "".join(joined)


def _sentence_pieces(joined: str) -> Iterator[list[tuple[int, int]]]:
    """Each sentence of an unwrapped text as the ``(start, end)`` of its pieces, white space left
    out: the numbers of a list item first, then the sentence they start (a number the text ends
    with stands alone)."""
    numbers: list[tuple[int, int]] = []
    position = 0
    ends = [
        found
        for found in SENTENCE_END.finditer(joined)
        if "\n" in found[0]
        or not ends_no_sentence(
            joined[max(found.start() - 8, 0) : found.start()], joined[found.end() : found.end() + 3]
        )
    ]
    for found in [*ends, None]:
        end = found.start() if found is not None else len(joined)
        piece = joined[position:end]
        start = position + len(piece) - len(piece.lstrip())
        end = position + len(piece.rstrip())
        position = found.end() if found is not None else len(joined)
        if start >= end:
            continue
        if ENUMERATOR.fullmatch(joined[start:end]):
            numbers.append((start, end))
        else:
            yield [*numbers, (start, end)]
            numbers = []
    if numbers:
        yield numbers


def sentences(text: str) -> list[str]:
    """The text's sentences and lines (a wrapped line is not an end, so its break reads as a space);
    a list item's number ("8. If no cluster ...") stays with the sentence it starts."""
    joined = unwrapped(text)
    return [" ".join(joined[start:end] for start, end in pieces) for pieces in _sentence_pieces(joined)]


def sentence_starts(text: str) -> list[int]:
    """Where a window of the text may begin, in order: each sentence (as ``sentences`` finds them)
    that follows one ending at ``.``, ``!`` or ``?``. A line of its own that ends with none, a
    heading ("FTX's collapse") or a label ("listed below:"), stays with the sentence under it: a
    window starts at the heading, not after it. The text's first sentence is not counted (its
    start is the text's)."""
    joined = unwrapped(text)
    starts: list[int] = []
    ended = False
    for pieces in _sentence_pieces(joined):
        if ended:
            starts.append(pieces[0][0])
        last_start, last_end = pieces[-1]
        ended = ENDS_SENTENCE.search(joined[last_start:last_end]) is not None
    return starts
