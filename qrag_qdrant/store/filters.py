"""Which documents a question is searched in, as a caller states it: by publisher, author,
publication date and path. Every retriever's Qdrant query carries it (``Where.documents``), so
quorum counts only documents that pass; a filter no document passes is said so
(``NoDocumentPasses``), never answered with an empty evidence."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..errors import RequestError

#: the most values a filter field names
MAX_VALUES = 64


class NoDocumentPasses(RequestError):
    """No document of the namespace the caller may read passes the filter."""


class DocumentFilter(BaseModel):
    """Each field narrows; a field of several values passes a document that has any of them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    publisher: tuple[str, ...] | None = Field(
        None, description="publishers (the metadata's source or publisher), any of them", max_length=MAX_VALUES
    )
    author: tuple[str, ...] | None = Field(None, description="authors, any of them", max_length=MAX_VALUES)
    after: str | None = Field(None, description="published at or after: an ISO 8601 date or time (UTC if no zone)")
    before: str | None = Field(None, description="published before: an ISO 8601 date or time (UTC if no zone)")
    path: str | None = Field(
        None, max_length=1000, description="a path prefix: documents whose source starts with it, e.g. 'reports/2023/'"
    )

    @field_validator("publisher", "author", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        return (value,) if isinstance(value, str) else value

    @field_validator("after", "before")
    @classmethod
    def _moment(cls, value: str | None) -> str | None:
        return None if value is None else utc_time(value)

    @classmethod
    def of(cls, given: DocumentFilter | dict[str, Any] | None) -> DocumentFilter | None:
        """A filter from a dict (``{"publisher": "TechCrunch", "after": "2023-10-01"}``); a bad
        one is a one-line RequestError; an empty one is None."""
        if given is None or isinstance(given, DocumentFilter):
            return given if given is None or not given.empty else None
        try:
            checked = cls.model_validate(given)
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise RequestError(f"filter: {detail}") from None
        return None if checked.empty else checked

    @property
    def empty(self) -> bool:
        return not any((self.publisher, self.author, self.after, self.before, self.path))

    def within(self, outer: DocumentFilter | None) -> DocumentFilter | None:
        """This filter narrowed by ``outer`` (the caller's): both must pass. None when no document
        can pass both (publishers or authors in common: none)."""
        if outer is None:
            return self
        merged: dict[str, Any] = {}
        for name in ("publisher", "author"):
            mine, theirs = getattr(self, name), getattr(outer, name)
            both = tuple(value for value in mine if value in theirs) if mine and theirs else mine or theirs
            if both == ():
                return None
            merged[name] = both
        merged["after"] = max(filter(None, (self.after, outer.after)), default=None)
        merged["before"] = min(filter(None, (self.before, outer.before)), default=None)
        if self.path and outer.path and not (self.path.startswith(outer.path) or outer.path.startswith(self.path)):
            return None
        merged["path"] = max(filter(None, (self.path, outer.path)), key=len, default=None)
        return DocumentFilter(**merged)

    def describe(self) -> str:
        parts = [f"publisher {' or '.join(self.publisher)}"] if self.publisher else []
        parts += [f"author {' or '.join(self.author)}"] if self.author else []
        parts += [f"published from {self.after}"] if self.after else []
        parts += [f"published before {self.before}"] if self.before else []
        parts += [f"path under {self.path!r}"] if self.path else []
        return ", ".join(parts)


def utc_time(text: str) -> str:
    """An ISO 8601 date or time as UTC, as payloads store it (a date is its midnight; a time
    without zone is UTC); ValueError names a text that is neither."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not an ISO 8601 date or time") from None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")
