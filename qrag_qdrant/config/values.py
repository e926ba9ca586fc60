"""The small syntaxes some config values are written in: rates (``60/minute``) and query
expansions (``multi_query:3``), parsed for the config model and for the stages that use them."""

from __future__ import annotations

import re

from ..errors import ConfigError

#: A query expansion as configured: ``hyde``, ``multi_query:3`` (a registered name, and how many texts).
EXPANSION_ITEM = re.compile(r"^(?P<name>[a-z][a-z0-9_]*)(?::(?P<count>[1-9][0-9]?))?$")

#: ``60/minute``: a token bucket of 60, refilled at 60 a minute
RATE = re.compile(r"^(?P<count>\d+)\s*/\s*(?P<unit>second|minute|hour)$")
RATE_PERIOD_SECONDS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}


def parse_rate(text: str) -> tuple[int, float]:
    """``"60/minute"`` -> (60 at once, 1.0 a second)."""
    match = RATE.match(text.strip().lower())
    if not match or int(match["count"]) == 0:
        raise ValueError(f'rate {text!r}: use COUNT/second, COUNT/minute or COUNT/hour, e.g. "60/minute"')
    return int(match["count"]), int(match["count"]) / RATE_PERIOD_SECONDS[match["unit"]]


def check_expansions(items: tuple[str, ...]) -> None:
    """``NAME`` or ``NAME:COUNT``, each name once; whether the name is registered is checked where
    expansions are made (the module ``qrag_qdrant.retrieval.expansion``), which config does not
    import."""
    names = []
    for item in items:
        match = EXPANSION_ITEM.match(item)
        if not match:
            raise ValueError(f'expansion {item!r}: use NAME or NAME:COUNT, e.g. "multi_query:3" or "hyde"')
        names.append(match["name"])
    if len(set(names)) < len(names):
        raise ValueError(f"expansions {list(items)}: each expansion at most once")


def parse_expansion(item: str) -> tuple[str, int | None]:
    """``"multi_query:3"`` -> ``("multi_query", 3)``; ``"hyde"`` -> ``("hyde", None)``."""
    match = EXPANSION_ITEM.match(item)
    if match is None:
        raise ConfigError(f"expansion {item!r}: use NAME or NAME:COUNT")
    return match["name"], int(match["count"]) if match["count"] else None
