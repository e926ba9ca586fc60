"""Every name qrag-qdrant gives a namespace's collections, written and read in this one place.

A namespace's alias for one chunking is ``<namespace>-c<size>-o<overlap>``; it points at a
versioned collection ``<alias>-v<N>``, which a rebuild replaces by ``-v<N+1>``. A namespace may
not end like such a suffix, so that one namespace's names never match another's pattern.
"""

from __future__ import annotations

import re

NAMESPACE_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_]*(-[a-z0-9_]+)*$")
NAMESPACE_MAX_LENGTH = 48
ALIAS_SUFFIX = r"-c\d+-o\d+"
VERSION_SUFFIX = r"-v(?P<version>\d+)"
#: A namespace must not look like a collection suffix, or ``team`` could list ``team-c100-o50``'s data.
RESERVED_NAMESPACE_SUFFIX = re.compile(r"-c\d+(-o\d+)?(-v\d+)?$")
VERSIONED = re.compile(rf"^(?P<alias>.+{ALIAS_SUFFIX}){VERSION_SUFFIX}$")
OUR_NAME = re.compile(rf"^(?P<namespace>.+){ALIAS_SUFFIX}({VERSION_SUFFIX})?$")


def collection_name(namespace: str, size: int, overlap: int) -> str:
    """A chunking's alias."""
    return f"{namespace}-c{size}-o{overlap}"


def versioned_name(alias: str, version: int) -> str:
    """The collection a rebuild fills before the alias moves to it."""
    return f"{alias}-v{version}"


def collection_pattern(namespace: str) -> re.Pattern[str]:
    """A namespace's aliases and collections; the namespace rules keep prefixes from colliding."""
    return re.compile(rf"^{re.escape(namespace)}{ALIAS_SUFFIX}({VERSION_SUFFIX})?$")


def namespace_of(name: str) -> str | None:
    """The namespace of an alias or collection name, None for a name qrag-qdrant did not make."""
    match = OUR_NAME.match(name)
    return match["namespace"] if match else None
