"""A serving namespace moved to a new ``[embedding]`` model without a restart.

On SIGHUP the service reads its config file again. When ``[embedding]`` changed, every namespace
it serves is re-embedded from the text its points hold, each in a job of the namespace's own queue
(its ingests and syncs wait for it), answering from its old collections meanwhile, and switched to
the new model in one step when done (``Namespaces.switch_embedding``); namespaces opened after the
signal get the new model. Any other change to the config takes a restart.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

from ..config.settings import Settings, load_settings
from ..embedding import Embedder, open_embedder
from ..errors import QragError
from .jobs import IngestJob, JobProgress
from .state import ServiceState

log = logging.getLogger(__name__)


def service_embedder(settings: Settings) -> Embedder:
    """The service's model: documents embed on one core fewer than the machine has, so a job
    leaves one to the questions."""
    embedding = settings.embedding.model_copy(update={"threads": settings.service.document_threads()})
    return open_embedder(embedding, settings.embedders)


def switch_model(state: ServiceState, namespaces: Iterable[str]) -> list[IngestJob]:
    """Read the config file again; when its ``[embedding]`` is not the one serving, queue the
    re-embedding of every namespace served (``namespaces``, and those open) and return the jobs."""
    serving, spaces = state.settings, state.namespaces
    if serving.config_file is None or spaces is None:
        log.warning("reload: the service was started without a config file: nothing to read again")
        return []
    try:
        read = load_settings(serving.config_file)
    except QragError as exc:
        log.warning("reload: %s; the service goes on with the config it has", exc)
        return []
    settings = serving.model_copy(update={"embedding": read.embedding})
    embedder = spaces.embedder if read.embedding == serving.embedding else service_embedder(settings)
    served = spaces.reconfigure(settings, embedder, namespaces)
    if not served:
        log.info("reload: every namespace has the config's [embedding] (any other change takes a restart)")
        return []
    state.settings = settings
    model = settings.embedding.fingerprint
    log.info(
        "reload: re-embedding %d namespaces with %s, each answering from its old collections meanwhile",
        len(served),
        model,
    )

    def switched(namespace: str, progress: JobProgress) -> dict[str, Any]:
        report = spaces.switch_embedding(namespace, settings, embedder, progress)
        log.info("reload: namespace %s answers with %s", namespace, model)
        return report

    def job(namespace: str) -> IngestJob:
        queued = state.jobs.submit_work(
            namespace, f"re-embedding with {model}", lambda progress: switched(namespace, progress)
        )
        log.info("reload: namespace %s is re-embedded by job %s", namespace, queued.id)
        return queued

    return [job(namespace) for namespace in served]


def reload_on_hangup(state: ServiceState, namespaces: Callable[[], Iterable[str]]) -> None:
    """``switch_model`` on SIGHUP, in a thread of its own; where the service does not run in the
    main thread (a test's app) or the platform has no SIGHUP, nothing is installed."""

    def hangup(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=switch_model, args=(state, namespaces()), name="qrag-reload", daemon=True).start()

    try:
        signal.signal(signal.SIGHUP, hangup)
    except (ValueError, AttributeError):
        log.debug("reload: no SIGHUP handler here (not the main thread, or no SIGHUP)")
