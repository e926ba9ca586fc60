"""What a source of documents is, as ``sources add`` records it and ``[[service.sources]]``
declares it: the config's side, so the service's settings can name sources before the ingest
stage that syncs them is loaded (``ingest/sources/``)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .names import NAMESPACE_PATTERN

#: a source's name: a folder name in every document's source ("handbook/leave.md")
SOURCE_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9_-]{0,46}[a-z0-9])?$")


class SourceSpec(BaseModel):
    """One source of a namespace."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="the source's name; its documents are named <name>/<path>")
    kind: str = Field(description="what it is: folder, git, or a plug-in's kind")
    location: str = Field(description="where it is: a folder, a repository's path or URL")
    options: dict[str, Any] = Field(default_factory=dict, description="the kind's own settings (git: branch, under)")
    readers: tuple[str, ...] | None = Field(
        None, description="the groups that may read its documents; None: everyone in the namespace"
    )
    every: float | None = Field(None, gt=0, description="seconds between the service's syncs; None: on demand")
    watch: bool = Field(False, description="sync as soon as its folder changes (a folder source)")

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not SOURCE_NAME.match(name):
            raise ValueError(f"source name {name!r}: use 1-48 lower-case letters, digits, '_' and '-'")
        return name

    @property
    def prefix(self) -> str:
        """What the source's documents' names start with."""
        return f"{self.name}/"


class DeclaredSource(SourceSpec):
    """A source the service's config declares for a namespace (``[[service.sources]]``)."""

    namespace: str = Field(description="the namespace it feeds")

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, namespace: str) -> str:
        if not NAMESPACE_PATTERN.match(namespace):
            raise ValueError(f"namespace {namespace!r}: not a namespace's name")
        return namespace

    def spec(self) -> SourceSpec:
        return SourceSpec(**self.model_dump(exclude={"namespace"}))
