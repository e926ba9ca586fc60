"""The installed distribution's version: one place, read from the package metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("qrag-qdrant")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
