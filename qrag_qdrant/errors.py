"""Errors a user can act on. The CLI prints their message on one line, never a traceback."""

from __future__ import annotations

import re

#: the user:password part of a URL (``http://user:secret@host``)
URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")


def redacted(text: str) -> str:
    """``text`` with every URL's credentials replaced: messages are printed, logged and sent to clients."""
    return URL_CREDENTIALS.sub(r"\1***@", text)


class QragError(Exception):
    """Base of every expected failure; ``exit_code`` is what the CLI exits with."""

    exit_code = 1


class ConfigError(QragError):
    """The configuration is invalid."""


class CorpusError(QragError):
    """The path to ingest holds nothing usable."""


class EmbeddingError(QragError):
    """The embedding model cannot be loaded."""


class StoreError(QragError):
    """The vector store cannot be opened or used."""


class StoreInUseError(StoreError):
    """Another process holds the embedded store."""


class ModelMismatchError(StoreError):
    """A collection was built by another embedding model or BM25 setup."""


class NothingIngestedError(StoreError):
    """A query found no collections in the namespace."""


class QuestionError(QragError):
    """The question cannot be asked as given."""


class SourceError(QragError):
    """A source of documents cannot be added or read: gone, unreachable or not allowed."""


class DocumentNotFound(QragError):
    """No collection of the namespace holds the document named."""


class RequestError(QragError):
    """A request's options are out of range (a page's offset or limit)."""


class GenerationError(QragError):
    """Ollama could not produce the answer; the evidence is still valid."""

    exit_code = 2
