"""Who may read which document: a document's readers, and the groups a caller reads as.

A document carries the groups that may read it (``readers``, on every chunk's payload); none
means everyone in the namespace. A caller reads as a set of groups: it sees the documents with
no readers and those naming one of its groups. ``Access.ALL`` (the store's operator: the CLI,
a Python caller that names no groups, a key granted ``*``) reads every document.

The check is a payload filter inside every search, scroll and count (``Where.readers``), so
nothing a caller may not read is fused, clustered, counted or shown.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import RequestError

#: a group's name: letters, digits and ``_ . : @ -``, 1 to 64 of them
GROUP = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
#: granted to a key, it reads every document of its namespace
EVERY_GROUP = "*"
#: the most groups a document or a caller names
MAX_GROUPS = 64


def checked_groups(groups: Iterable[str], what: str = "readers") -> tuple[str, ...]:
    """``groups`` sorted and without repeats; a bad name, a blank one too (``[""]`` is not "no
    group": it would open a document to everyone), is a one-line RequestError."""
    names = sorted({group.strip() for group in groups})
    bad = [name for name in names if not GROUP.fullmatch(name)]
    if bad:
        raise RequestError(
            f"{what}: {bad[0][:70]!r} is not a group name (1-64 letters, digits, '_', '.', ':', '@' or '-')"
        )
    if len(names) > MAX_GROUPS:
        raise RequestError(f"{what}: at most {MAX_GROUPS} groups, not {len(names)}")
    return tuple(names)


def groups_of(text: str | None, what: str = "readers") -> tuple[str, ...]:
    """A comma-separated list of groups (``--readers hr,legal``), checked; an empty text is none."""
    return checked_groups(split_groups(text), what)


def split_groups(text: str | None) -> list[str]:
    """The names of a comma-separated list, unchecked; an empty text names none (``hr,`` names a
    blank one, which a check refuses)."""
    text = text or ""
    return text.split(",") if text.strip() else []


@dataclass(frozen=True)
class Access:
    """The documents a caller may read: those with no readers or one of ``groups``'; every one
    when ``groups`` is None."""

    groups: frozenset[str] | None = None

    @classmethod
    def of(cls, groups: Iterable[str] | None) -> Access:
        """``None`` or a list holding ``*``: every document; else those ``groups`` may read."""
        if groups is None:
            return ALL
        named = frozenset(groups)
        return ALL if EVERY_GROUP in named else cls(frozenset(checked_groups(named, "groups")))

    @property
    def reads_all(self) -> bool:
        return self.groups is None

    def may_read(self, readers: Iterable[str]) -> bool:
        readers = tuple(readers)
        return self.groups is None or not readers or not self.groups.isdisjoint(readers)

    @property
    def key(self) -> tuple[str, ...] | None:
        """What a cache keys on: two callers with the same key see the same documents."""
        return None if self.groups is None else tuple(sorted(self.groups))

    def describe(self) -> str:
        return "every document" if self.groups is None else "groups " + (", ".join(sorted(self.groups)) or "(none)")


ALL = Access()
