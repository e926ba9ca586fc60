"""A git repository, through the ``git`` program: cloned once into the source's own folder,
fetched and checked out at each sync. git rewrites only the files a commit changed, so a sync
reads again only those (``corpus.FileDigests``); each document's last commit and its author
become its metadata.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ...config.sources import SourceSpec
from ...errors import SourceError
from ..metadata import DocumentMetadata, published_time
from .base import Snapshot, options_of

#: the longest a git command may take (a clone of a large repository over a slow link)
GIT_SECONDS = 600
#: the variables git runs with: never a prompt for a password on the terminal, no system config
GIT_ENVIRONMENT = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
#: between a commit's fields in ``git log``'s output, which no name or date holds
FIELD = "\x1f"


class GitOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    branch: str | None = Field(None, description="the branch to follow; None: the repository's default")
    under: str = Field("", description="the folder of the repository to read; empty: all of it")


class GitSource:
    def __init__(self, spec: SourceSpec):
        self.options: GitOptions = options_of(spec, GitOptions)
        if spec.location.startswith("-") or "::" in spec.location:
            raise SourceError(f"source {spec.name!r}: {spec.location!r} is not a repository's path or URL")
        self.location = spec.location
        under = Path(self.options.under)
        if under.is_absolute() or ".." in under.parts:
            raise SourceError(f"source {spec.name!r}: under must be a folder inside the repository")
        if self.options.branch is not None and self.options.branch.startswith("-"):
            raise SourceError(f"source {spec.name!r}: {self.options.branch!r} is not a branch")

    def snapshot(self, workdir: Path) -> Snapshot:
        if shutil.which("git") is None:
            raise SourceError("a git source needs the git program on the PATH")
        workdir = workdir.resolve()
        clone = workdir / "checkout"
        if not (clone / ".git").is_dir():
            shutil.rmtree(clone, ignore_errors=True)  # a clone a crash cut short
            workdir.mkdir(parents=True, exist_ok=True)
            chosen = ["--branch", self.options.branch] if self.options.branch else []
            git(workdir, "clone", "--quiet", "--no-tags", "--single-branch", *chosen, "--", self.location, str(clone))
        else:
            git(
                clone,
                "fetch",
                "--quiet",
                "--no-tags",
                "origin",
                *([self.options.branch] if self.options.branch else []),
            )
            git(clone, "reset", "--quiet", "--hard", "FETCH_HEAD")
            git(clone, "clean", "--quiet", "-d", "--force", "-x")
        revision = git(clone, "rev-parse", "HEAD").strip()
        root = (clone / self.options.under).resolve()
        if not root.is_relative_to(clone.resolve()) or not root.is_dir():
            raise SourceError(f"the repository has no folder {self.options.under!r} at {revision[:12]}")
        return Snapshot(root, revision, last_commits(clone, root))


def git(folder: Path, *arguments: str) -> str:
    """git's output, or a ``SourceError`` with its last line of complaint."""
    try:
        done = subprocess.run(
            ["git", *arguments],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=GIT_SECONDS,
            env={**os.environ, **GIT_ENVIRONMENT},
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {arguments[0]} took over {GIT_SECONDS} s") from None
    if done.returncode != 0:
        complaint = [line for line in done.stderr.splitlines() if line.strip()]
        raise SourceError(f"git {arguments[0]}: {complaint[-1] if complaint else f'exit status {done.returncode}'}")
    return done.stdout


def last_commits(clone: Path, root: Path) -> dict[str, DocumentMetadata]:
    """Path under ``root`` -> its last commit, that commit's author and time, from one walk of the history."""
    under = root.relative_to(clone.resolve()).as_posix()
    log = git(
        clone, "log", "--no-renames", f"--format={FIELD}%H{FIELD}%an{FIELD}%aI", "--name-only", "--", under or "."
    )
    found: dict[str, DocumentMetadata] = {}
    commit, author, when = "", "", ""
    prefix = "" if under in ("", ".") else under + "/"
    for line in log.splitlines():
        if line.startswith(FIELD):
            _, commit, author, when = line.split(FIELD)
        elif line and line.startswith(prefix) and (path := line[len(prefix) :]) not in found:
            found[path] = DocumentMetadata(
                author=author or None, published=published_time(when) if when else None, revision=commit
            )
    return found
