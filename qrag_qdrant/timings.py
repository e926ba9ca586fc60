"""Stage timings in milliseconds, as ``timings_ms`` reports them (retrieval's stages, generation)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Sets ``timings[stage]`` to the block's wall time (ms, 3 decimals), even when it raises."""
    started = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = round((time.perf_counter() - started) * 1000, 3)
