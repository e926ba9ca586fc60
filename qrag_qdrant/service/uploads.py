"""Uploaded documents on their way to an ingest job: checked names, one folder per job, and no
byte left behind.

Every upload folder lives under ``<store>/.uploads`` (the service's own folder, never a shared
temp folder), is removed on every error and when its job ends, and the whole area is swept when
the service starts, so a job killed mid-run leaves nothing after a restart. A namespace may hold
at most ``service.max_queued_upload_bytes`` of uploads waiting for or in an ingest.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from starlette.datastructures import UploadFile
from starlette.types import Message, Receive

from .errors import ServiceError

#: the longest name of one folder or file, and of a whole relative path, in bytes (as Linux has it)
NAME_BYTES, PATH_BYTES = 255, 1024
COPY_BLOCK = 1 << 20


def upload_name(filename: str | None) -> PurePosixPath:
    """An uploaded file's name as a relative path inside the job's folder, or a 422."""
    raw = filename or ""
    name = PurePosixPath(raw.replace("\\", "/"))
    problem = (
        "is not a plain relative name"
        if not name.parts
        or name.is_absolute()
        or any(part in ("..", ".") or part.startswith(".") for part in name.parts)
        else "holds a control character"
        if any(ord(c) < 32 or ord(c) == 127 for c in raw)
        else "is not valid text"
        if not _encodes(raw)
        else f"has a part longer than {NAME_BYTES} bytes"
        if any(len(p.encode()) > NAME_BYTES for p in name.parts)
        else f"is longer than {PATH_BYTES} bytes"
        if len(raw.encode()) > PATH_BYTES
        else None
    )
    if problem:
        raise ServiceError(422, "invalid_request", f"file name {raw[:80]!r} {problem}")
    return name


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:  # a lone surrogate
        return False


def check_names(names: list[PurePosixPath]) -> None:
    """No two files with one name, and no file where another needs a folder (``a`` beside ``a/b``)."""
    if len(set(names)) != len(names):
        raise ServiceError(422, "invalid_request", "two uploaded files have the same name")
    folders = {parent for name in names for parent in name.parents}
    clash = next((name for name in names if name in folders), None)
    if clash is not None:
        raise ServiceError(422, "invalid_request", f"{str(clash)!r} is uploaded both as a file and as a folder")


class Receiving:
    """One upload's body as it streams in: every byte is counted against its namespace's quota
    before it is parsed or spooled, so an upload that would pass the quota stops being read.
    ``allowed``: the bytes the caller's daily ingest quota still allows, and its refusal."""

    def __init__(self, area: UploadArea, namespace: str, allowed: tuple[int, ServiceError] | None = None):
        self.area, self.namespace, self.bytes, self.allowed = area, namespace, 0, allowed

    def wrap(self, receive: Receive) -> Receive:
        async def counted() -> Message:
            message = await receive()
            if message["type"] == "http.request" and message.get("body"):
                if self.allowed is not None and self.bytes + len(message["body"]) > self.allowed[0]:
                    raise self.allowed[1]
                self.area.reserve(self, len(message["body"]))
            return message

        return counted


class UploadArea:
    """The service's upload folders, and the bytes each namespace has waiting in them or still
    streaming in."""

    def __init__(self, root: Path, max_queued_bytes: int):
        self.root, self.max_queued_bytes = Path(root), max_queued_bytes
        self._queued: dict[Path, tuple[str, int]] = {}
        self._receiving: set[Receiving] = set()
        self._lock = threading.Lock()

    @contextmanager
    def receiving(self, namespace: str, allowed: tuple[int, ServiceError] | None = None) -> Iterator[Receiving]:
        """An upload's body counted as it streams; its bytes stop counting when the block ends
        (``save`` counts the files it keeps instead)."""
        upload = Receiving(self, namespace, allowed)
        with self._lock:
            self._receiving.add(upload)
        try:
            yield upload
        finally:
            with self._lock:
                self._receiving.discard(upload)

    def _waiting(self, namespace: str, besides: Receiving | None = None) -> int:
        """Bytes of ``namespace`` queued in folders or streaming in, ``besides`` one upload (lock held)."""
        queued = sum(used for owner, used in self._queued.values() if owner == namespace)
        return queued + sum(r.bytes for r in self._receiving if r.namespace == namespace and r is not besides)

    def reserve(self, upload: Receiving, size: int) -> None:
        """Count ``size`` more bytes of ``upload``, or a 413 once its namespace would pass the quota."""
        with self._lock:
            waiting = self._waiting(upload.namespace, besides=upload)
            if waiting + upload.bytes + size > self.max_queued_bytes:
                raise self._over_quota(waiting, upload.bytes + size)
            upload.bytes += size

    def _over_quota(self, waiting: int, size: int) -> ServiceError:
        return ServiceError(
            413,
            "upload_quota",
            f"this namespace has {waiting} bytes of uploads waiting to be ingested or arriving; {size} more would "
            f"pass service.max_queued_upload_bytes ({self.max_queued_bytes}): wait for its jobs to finish",
        )

    def sweep(self) -> int:
        """Remove what earlier runs left (a crash, a kill): nothing in it belongs to a live job."""
        left = list(self.root.iterdir()) if self.root.is_dir() else []
        for path in left:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        return len(left)

    def save(self, namespace: str, files: list[UploadFile], upload: Receiving | None = None) -> tuple[Path, list[str]]:
        """The files written into a fresh folder, which ``release`` removes when the job ends; on any
        error the folder is removed before the error leaves. ``upload``: the body they came in, whose
        streamed bytes they now stand for."""
        names = [upload_name(f.filename) for f in files]
        check_names(names)
        size = sum(f.size or 0 for f in files)
        self.root.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="job-", dir=self.root))
        try:
            with self._lock:
                waiting = self._waiting(namespace, besides=upload)
                if waiting + size > self.max_queued_bytes:
                    raise self._over_quota(waiting, size)
                self._queued[folder] = (namespace, size)
            for name, uploaded in zip(names, files):
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                with (folder / name).open("wb") as out:
                    shutil.copyfileobj(uploaded.file, out, COPY_BLOCK)
        except BaseException:
            self.release(folder)
            raise
        return folder, [str(name) for name in names]

    def release(self, folder: Path) -> None:
        with self._lock:
            self._queued.pop(folder, None)
        shutil.rmtree(folder, ignore_errors=True)
