"""A local folder, read where it is."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...config.sources import SourceSpec
from ...errors import SourceError
from .base import Snapshot, options_of


class FolderOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    poll: bool = Field(
        False, description="watch by looking at the files again and again (a network share, where no event comes)"
    )


class FolderSource:
    """Its files are the folder's: a sync reads again only the ones whose size or time changed."""

    def __init__(self, spec: SourceSpec):
        self.options: FolderOptions = options_of(spec, FolderOptions)
        self.root = Path(spec.location).expanduser()

    def watched(self) -> tuple[Path, bool]:
        """The folder to watch for changes, and whether to poll it."""
        return self.root, self.options.poll

    def snapshot(self, workdir: Path) -> Snapshot:
        if not self.root.is_dir():
            raise SourceError(f"folder {self.root} is not there")
        return Snapshot(self.root.resolve())
