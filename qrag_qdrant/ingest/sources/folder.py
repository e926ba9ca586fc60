"""A local folder, read where it is."""

from __future__ import annotations

from pathlib import Path

from ...config.sources import SourceSpec
from ...errors import SourceError
from .base import NoOptions, Snapshot, options_of


class FolderSource:
    """Its files are the folder's: a sync reads again only the ones whose size or time changed."""

    def __init__(self, spec: SourceSpec):
        options_of(spec, NoOptions)
        self.root = Path(spec.location).expanduser()

    def snapshot(self, workdir: Path) -> Snapshot:
        if not self.root.is_dir():
            raise SourceError(f"folder {self.root} is not there")
        return Snapshot(self.root.resolve())
