"""File helpers every stage shares: writing a file whole or not at all, readable by its owner only
(manifests, aliases, the key file, job records), and reading a file ahead into the page cache."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import filelock

from ..errors import StoreInUseError

#: the kernel reads ahead at most this much of one advice (a 32 MiB file advised whole: 8 resident)
READ_AHEAD = 8 << 20
#: files holding teams' keys, questions, jobs and indexes are the owner's alone
PRIVATE_FILE_MODE = 0o600
#: written by ``qrag-qdrant serve`` beside the store it serves: its address and process, so a command
#: refused the store can say where to send its work instead
SERVE_RECORD = ".qrag-serve.json"
#: held locked by the one ``qrag-qdrant serve`` of a store while it runs (``filelock``: flock on POSIX,
#: msvcrt on Windows): the system lets it go when the process ends, however it ends
SERVE_LOCK = ".qrag-serve.lock"


def write_atomically(path: Path, data: str | bytes, mode: int = PRIVATE_FILE_MODE) -> None:
    """Write ``data`` to a staging file beside ``path``, flush it to disk, then rename it over
    ``path``: a reader sees the old content or the new, never a part, and a crash leaves the old."""
    staging = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    descriptor = os.open(staging, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, mode)
    try:
        with os.fdopen(descriptor, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(staging, path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def read_ahead(path: Path) -> None:
    """Asks the kernel to read a file into its page cache, in the background; where the platform
    has no ``posix_fadvise``, nothing happens (the reads then go to the disk)."""
    if not hasattr(os, "posix_fadvise"):
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # removed by an optimisation since it was listed
        return
    try:
        for offset in range(0, os.fstat(fd).st_size, READ_AHEAD):
            os.posix_fadvise(fd, offset, READ_AHEAD, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(fd)


def held_by(root: Path, namespace: str) -> str:
    """Why the namespace cannot be opened, and what to do: a running ``qrag-qdrant serve`` of this
    store is named with its address (ask it, over HTTP, with a key); another process is waited for."""
    served = serve_record(root)
    if served is None or not alive(served[1]):
        return (
            f"store is in use by another process: namespace {namespace!r} of {root} "
            "(wait for it to finish, or use another --store or --namespace)"
        )
    url, pid = served
    return (
        f"store is in use by `qrag-qdrant serve` (process {pid}) at {url}: send the request to it with a team "
        f"key (curl -H 'Authorization: Bearer KEY' {url}/v1/query -d '{{\"question\": \"...\"}}', "
        f"or POST {url}/v1/ingest, GET {url}/v1/documents), or stop it first"
    )


@contextmanager
def serving(root: Path, url: str) -> Iterator[None]:
    """The store claimed for one service at ``url`` while the block runs: a second service of the
    same store is refused at once, naming the first (StoreInUseError). The claim is a lock the
    kernel holds for this process, so the record of a service that died is taken over, never obeyed."""
    root.mkdir(parents=True, exist_ok=True)
    lock = filelock.FileLock(root / SERVE_LOCK, timeout=0, thread_local=False)  # flock on POSIX, msvcrt on Windows
    try:
        lock.acquire()
    except filelock.Timeout:
        raise StoreInUseError(f"{root} is served already: {serving_process(root)}; stop it first") from None
    record = root / SERVE_RECORD  # a command refused the store names this service
    try:
        write_atomically(record, json.dumps({"url": url, "pid": os.getpid()}))
        yield
    finally:
        record.unlink(missing_ok=True)
        lock.release()


def serving_process(root: Path) -> str:
    """The service its record names (process and address), as well as the record can say."""
    served = serve_record(root)
    if served is None:
        return "another `qrag-qdrant serve`"
    url, pid = served
    return f"`qrag-qdrant serve` (process {pid}) at {url}"


def serve_record(root: Path) -> tuple[str, int] | None:
    """The address and process ``qrag-qdrant serve`` recorded beside the store; None without a
    readable record."""
    try:
        record = json.loads((root / SERVE_RECORD).read_text())
        return str(record["url"]), int(record["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (no signal is sent)."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True
