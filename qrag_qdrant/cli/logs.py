"""Logging: each stage logs to its own named logger (``qrag_qdrant.ingest.ingestor``,
``qrag_qdrant.retrieval.pipeline``, ...); the CLI's ``-v``/``-vv`` shows them on stderr.

A library user configures them as any other: ``logging.getLogger("qrag_qdrant").setLevel(...)``.
"""

from __future__ import annotations

import logging

#: -v: what each stage did; -vv: in detail
LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)


def configure_logging(verbosity: int) -> None:
    """Send qrag-qdrant's loggers to this command's stderr at the level ``verbosity`` (0, 1, 2+)
    asks for; 0 leaves logging as Python sets it up (warnings and errors only)."""
    logger = logging.getLogger("qrag_qdrant")
    for old in [h for h in logger.handlers if getattr(h, "qrag_cli", False)]:
        logger.removeHandler(old)
    logger.setLevel(LEVELS[min(verbosity, len(LEVELS) - 1)] if verbosity else logging.NOTSET)
    if verbosity:
        handler = logging.StreamHandler()  # the stderr of this command, as it is now
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s: %(message)s", "%H:%M:%S"))
        handler.qrag_cli = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
