"""A Qdrant server's calls retried where the server failed, not the caller: exponential backoff
with jitter (tenacity), so clients that failed together do not retry together, then one StoreError
that names the cause and the server, never the key."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import wraps
from typing import Any, Protocol, TypeVar

import tenacity
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from ..errors import StoreError

#: Server-side failures worth another try: in a cluster, a write that too few replicas
#: acknowledged, or a replica moving; the writes are idempotent (same ids, same filters).
RETRIED_STATUS = {500, 502, 503, 504}
#: What a collection-scoped token may not do (Qdrant wants global access for it).
ADMIN_ONLY = {"create_collection", "drop_collection", "switch_aliases"}
#: the longest wait between two tries, in seconds, however many retries are configured
MAX_BACKOFF = 30.0
#: how a retry waits (a test watches the waits through it)
pause = time.sleep
T = TypeVar("T")


class Retried(Protocol):
    """What a store whose calls are retried tells the retries: where it is and how to back off."""

    location: str
    retries: int
    backoff: float


class _Outage(Exception):
    """A call that did not reach the server, or that it failed on its side: worth another try."""

    def __init__(self, cause: str, reached: bool):
        self.cause, self.reached = cause, reached


def _answer_error(store: Retried, name: str, exc: UnexpectedResponse) -> Exception:
    """What an HTTP error from the server means: an outage to retry (5xx), else a StoreError that
    names the cause and the server, never the key."""
    detail = exc.content.decode(errors="replace")[:300]
    if exc.status_code == 401:
        return StoreError(
            f"Qdrant at {store.location} refused the API key or token (HTTP 401): check QRAG_QDRANT_API_KEY"
        )
    if exc.status_code == 403:
        hint = "; a namespace's first ingest and --rebuild need the server's API key" if name in ADMIN_ONLY else ""
        return StoreError(
            f"Qdrant at {store.location} refused this {name.replace('_', ' ')}"
            f" (HTTP 403): the key or token does not allow it ({detail}){hint}"
        )
    if exc.status_code not in RETRIED_STATUS:
        return StoreError(f"Qdrant at {store.location} answered HTTP {exc.status_code}: {detail}")
    return _Outage(f"HTTP {exc.status_code}: {detail}", reached=True)


def server_errors(method: Callable[..., T]) -> Callable[..., T]:
    """Retry calls that did not reach the server, or that it failed on its side (5xx), backing
    off exponentially with jitter (tenacity), so clients that failed together do not retry
    together; then raise one StoreError that names the cause and the server, never the key.
    Other HTTP errors (a wrong key, a bad request) are answers, not outages, and are not retried."""
    name = method.__name__

    @wraps(method)
    def wrapper(self: Retried, *args: Any, **kwargs: Any) -> T:
        def attempt() -> T:
            try:
                return method(self, *args, **kwargs)
            except UnexpectedResponse as exc:
                raise _answer_error(self, name, exc) from None
            except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
                raise _Outage(str(exc), reached=False) from None

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.retries + 1),
            wait=tenacity.wait_exponential_jitter(multiplier=self.backoff, jitter=self.backoff, max=MAX_BACKOFF),
            retry=tenacity.retry_if_exception_type(_Outage),
            sleep=lambda seconds: pause(seconds),
            reraise=True,
        )
        try:
            return retrying(attempt)
        except _Outage as outage:
            attempts = f"after {self.retries + 1} attempts: {outage.cause}"
            if not outage.reached:
                raise StoreError(f"cannot reach Qdrant at {self.location} {attempts}") from None
            raise StoreError(f"Qdrant at {self.location} failed the {name.replace('_', ' ')} {attempts}") from None

    return wrapper
