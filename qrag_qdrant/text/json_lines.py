"""JSON Lines files (one JSON object a line: metadata sidecars, data sets, caches, logs), read as
they stream, so a file of any size holds one line in memory, and a bad line is named by its number.

The ``jsonlines`` package reads the same files but does not say which line a good object came from,
which a data set's default ids and a sidecar's errors need; reading them takes the few lines below.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import QragError


class BadLine(QragError):
    """A line that is not a JSON object; the message names the file and the line."""


def json_lines(path: Path, *, skip_invalid: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each object of ``path`` with its line number (from 1), blank lines passed over.

    ``skip_invalid``: a line that is no JSON object is passed over too (a log's or a cache's last
    line, cut short by a crash); else it raises ``BadLine``."""
    with path.open("rb") as file:  # bytes, decoded line by line, so a line that is not UTF-8 is named
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line.decode("utf-8"))
            except UnicodeDecodeError:
                row, why = None, "not UTF-8 text"
            except json.JSONDecodeError as exc:
                row, why = None, f"not JSON ({exc.msg})"
            else:
                why = "not a JSON object"
            if isinstance(row, dict):
                yield number, row
            elif not skip_invalid:
                raise BadLine(f"{path.name}, line {number}: {why}")
