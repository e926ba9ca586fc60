"""Sources a namespace follows: folders and git repositories synced into it (``sync.py``)."""

from ...config.sources import SourceSpec
from ...errors import SourceError
from .base import SOURCES, Snapshot, SourceKind
from .register import RecordedSource, SyncResult
from .sync import Sources

__all__ = ["SOURCES", "RecordedSource", "Snapshot", "SourceError", "SourceKind", "SourceSpec", "Sources", "SyncResult"]
