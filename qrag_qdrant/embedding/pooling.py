"""Late, anchored and tiled pooling's arithmetic: the model's windows over a document's tokens, and
each token's vector from the window where it sits furthest from an edge."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

#: tokens of text in one window of the model (its 256 less [CLS] and [SEP])
WINDOW_TOKENS = 254
#: late pooling works through a long document in pieces of about this many characters (~50k
#: tokens, ~75 MB of token vectors)
LATE_SEGMENT_CHARS = 200_000


def token_ranges(offsets: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For character spans, the first token ending inside each and the one past the last token
    starting inside it."""
    return (
        np.searchsorted(offsets[:, 1], bounds[:, 0], side="right"),
        np.searchsorted(offsets[:, 0], bounds[:, 1], side="left"),
    )


def stride_windows(count: int, stride: int) -> list[tuple[int, int]]:
    """Windows of ``WINDOW_TOKENS`` tokens starting every ``stride``, the last one ending at ``count``."""
    width, stride = WINDOW_TOKENS, min(stride, WINDOW_TOKENS)
    if count == 0:
        return []
    starts = list(range(0, max(count - width, 0) + 1, stride))
    if starts[-1] + width < count:
        starts.append(count - width)
    return [(start, min(start + width, count)) for start in starts]


def tiling(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Of sorted spans, those that do not overlap, each the first to start at or after the end of
    the one kept before it: half-overlapping chunks give every other one, which tile the text, so
    the model reads each token once (tiled pooling); ``cover`` fills what they leave."""
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if not kept or start >= kept[-1][1]:
            kept.append((start, end))
    return kept


def cover(windows: list[tuple[int, int]], count: int, stride: int) -> list[tuple[int, int]]:
    """Chunk windows made fit for ``token_vectors``: sorted, none inside another, none longer
    than the model's window (such a chunk is covered by stride windows instead), and the tokens
    no chunk holds covered by stride windows of their own."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(set(windows)):
        if end - start > WINDOW_TOKENS:
            kept.extend((start + a, start + b) for a, b in stride_windows(end - start, stride))
        elif end > start and (not kept or end > kept[-1][1]):
            kept.append((start, end))
    covered: list[tuple[int, int]] = []
    position = 0
    for start, end in [*kept, (count, count)]:
        if start > position:  # a gap: tokens outside every chunk
            covered.extend((position + a, position + b) for a, b in stride_windows(start - position, stride))
        if end > start:
            covered.append((start, end))
        position = max(position, end)
    return sorted(set(covered))


def token_vectors(
    run: Callable[[dict[str, np.ndarray]], np.ndarray],
    tokenizer: Any,
    ids: np.ndarray,
    windows: list[tuple[int, int]],
    dim: int,
    batch_size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """One vector per token of ``ids`` from the windows (token ranges, sorted, covering every
    token), and each window's own embedding: the mean over it with [CLS] and [SEP], as fastembed
    pools. ``run`` is the model: its inputs to its token vectors."""
    count = len(ids)
    vectors = np.zeros((count, dim), dtype=np.float32)
    means = np.zeros((len(windows), dim), dtype=np.float32)
    # token i is taken from window k for i in [cut[k], cut[k + 1]): the middle of each overlap
    cuts = [0] + [(nxt + end) // 2 for (_, end), (nxt, _) in itertools.pairwise(windows)] + [count]
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    # windows of about one length share a batch: a batch is padded to its longest window, and
    # chunks of one size in words vary in tokens (in document order nearly a quarter of the run was padding)
    by_length = sorted(range(len(windows)), key=lambda k: windows[k][1] - windows[k][0])
    for batch in range(0, len(windows), batch_size):
        rows = by_length[batch : batch + batch_size]
        input_ids = np.zeros((len(rows), max(windows[k][1] - windows[k][0] for k in rows) + 2), dtype=np.int64)
        mask = np.zeros_like(input_ids)
        for row, k in enumerate(rows):
            start, end = windows[k]
            input_ids[row, : end - start + 2] = [cls, *ids[start:end], sep]
            mask[row, : end - start + 2] = 1
        hidden = run({"input_ids": input_ids, "attention_mask": mask, "token_type_ids": np.zeros_like(input_ids)})
        for row, k in enumerate(rows):
            start, end = windows[k]
            vectors[cuts[k] : cuts[k + 1]] = hidden[row, 1 + cuts[k] - start : 1 + cuts[k + 1] - start]
            means[k] = hidden[row, : end - start + 2].astype(np.float64).mean(axis=0)
    return vectors, means
