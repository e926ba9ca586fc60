"""Waiting in tests for an observable event, with a deadline: never a fixed sleep, and never a
loop that hangs the suite when the event does not come."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

Value = TypeVar("Value")

#: how long a test waits for an event before it fails: far longer than any event takes on a busy box
DEADLINE_SECONDS = 120.0


def wait_until(check: Callable[[], Value], what: str, timeout: float = DEADLINE_SECONDS, poll: float = 0.01) -> Value:
    """``check()``'s first true value, asked again every ``poll`` seconds; AssertionError naming
    ``what`` once ``timeout`` seconds pass without one."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(poll)
    return value
