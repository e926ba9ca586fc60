"""Folders watched for changes, through watchfiles (inotify and its kin, or polling where no event
comes, as on a network share): each burst of changes, debounced, names the sources whose folders
changed, for their syncs. A change inside a hidden folder (the store's own ``.qrag``, ``.git``) is
not a document's, so a store kept inside a watched folder does not set off its own syncs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from ...plugins import require

#: how long changes are gathered into one burst, and how often the watch looks for the stop
DEBOUNCE_MS = 300
STEP_MS = 50
#: a watch yields nothing this long after it began watching, to say it is ready
READY_MS = 200


def visible_change(folder: Path, path: str) -> bool:
    try:
        parts = Path(path).relative_to(folder).parts
    except ValueError:
        return False
    return not any(part.startswith(".") for part in parts)


def changed_sources(folders: dict[str, tuple[Path, bool]], stop: threading.Event) -> Iterator[set[str]]:
    """The names of the sources whose folders changed, a set per burst of changes, until ``stop``
    is set; the first set is empty and comes once the folders are watched, so a change from then
    on is seen (what changed before is the caller's to sync). ``folders``: source -> (its folder,
    whether to poll it); one that does not exist is not watched."""
    watchfiles = require("watchfiles", "sources", "watching a folder")
    resolved = {name: (folder.resolve(), poll) for name, (folder, poll) in folders.items() if folder.is_dir()}
    if not resolved:
        yield set()
        stop.wait()
        return
    poll = any(poll for _, poll in resolved.values())
    watching = False
    for changes in watchfiles.watch(
        *(folder for folder, _ in resolved.values()),
        stop_event=stop,
        debounce=DEBOUNCE_MS,
        step=STEP_MS,
        force_polling=poll,
        raise_interrupt=False,
        rust_timeout=READY_MS,
        yield_on_timeout=True,  # the first yield, empty or not, comes once the folders are watched
    ):
        if not watching:
            watching = True
            yield set()
        names = {name for name, (folder, _) in resolved.items() for _, path in changes if visible_change(folder, path)}
        if names:
            yield names
