"""Logging: each stage logs to its own named logger (``qrag_qdrant.ingest.ingestor``,
``qrag_qdrant.retrieval.pipeline``, ...); the CLI's ``-v`` shows what each stage did, ``-vv`` each
stage's detail, on stderr, as text or (``--log-format json``) one JSON object a line for log
shippers. ``serve`` writes uvicorn's access lines the same way, with no query string (a client may
put a key in one). Every line written while the service handles a request carries its id, the
``X-Request-ID`` its response and audit line carry.

A library user configures them as any other: ``logging.getLogger("qrag_qdrant").setLevel(...)``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any, Literal

#: -v: what each stage did; -vv: in detail
LEVELS = (logging.WARNING, logging.INFO, logging.DEBUG)
LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(name)s: %(message)s"
#: the LogRecord attributes every record has: what is left over is a line's own fields
STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "request_id"}


class RequestIdFilter(logging.Filter):
    """Adds ``request_id``: the service's request being handled when the line was written, else None."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ..service.audit import REQUEST

        record.request_id = REQUEST.get()
        return True


class TextFormatter(logging.Formatter):
    """``time logger: message``, with ``[request id]`` where there is one, and the traceback."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT, "%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request = getattr(record, "request_id", None)
        return line.replace(": ", f": [{request}] ", 1) if request else line


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time (UTC, ISO 8601), level, logger, message, request_id, the
    line's own fields, and the traceback as ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None),
        }
        line |= {key: value for key, value in record.__dict__.items() if key not in STANDARD}
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


class WithoutQueryString(logging.Filter):
    """uvicorn's access line without the request's query string: a client may send a key in one
    (``?key=...``), and the log must never hold a credential."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and len(record.args) >= 3 and isinstance(record.args[2], str):
            path, _, query = record.args[2].partition("?")
            record.args = (*record.args[:2], path + ("?…" if query else ""), *record.args[3:])
        return True


def formatter(log_format: LogFormat) -> logging.Formatter:
    return JsonFormatter() if log_format == "json" else TextFormatter()


#: loggers of libraries the service runs whose lines go the same way as qrag-qdrant's (the MCP SDK
#: otherwise installs a handler of its own on the root logger)
ALSO_CONFIGURED = ("mcp",)


def configure_logging(verbosity: int, log_format: LogFormat = "text") -> None:
    """Send qrag-qdrant's loggers to this command's stderr at the level ``verbosity`` (0, 1, 2+)
    asks for; 0 in text leaves logging as Python sets it up (warnings and errors only). Once a
    handler is installed, every line is written by it alone (never again by a root handler another
    library added), and the MCP SDK's lines go the same way at warning level."""
    level = LEVELS[min(verbosity, len(LEVELS) - 1)] if verbosity else logging.NOTSET
    for name in ("qrag_qdrant", *ALSO_CONFIGURED):
        logger = logging.getLogger(name)
        for old in [h for h in logger.handlers if getattr(h, "qrag_cli", False)]:
            logger.removeHandler(old)
        logger.setLevel(level if name == "qrag_qdrant" else max(level, logging.WARNING))
        if verbosity or log_format == "json":
            handler = logging.StreamHandler()  # the stderr of this command, as it is now
            handler.setFormatter(formatter(log_format))
            handler.addFilter(RequestIdFilter())
            handler.qrag_cli = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
            logger.propagate = False
        else:
            logger.propagate = True


def start_up_line(log_format: LogFormat, message: str, level: int = logging.INFO) -> str:
    """A line a command says to its operator as it starts (``serve``'s address), in the log's format:
    with ``--log-format json`` a JSON object like every other line, else the message as it is."""
    if log_format != "json":
        return message
    record = logging.makeLogRecord(
        {"name": "qrag_qdrant.cli", "msg": message, "levelno": level, "levelname": logging.getLevelName(level)}
    )
    return JsonFormatter().format(record)


def uvicorn_log_config(log_format: LogFormat) -> dict[str, Any]:
    """uvicorn's own logging, in the same format as qrag-qdrant's lines, its access lines without
    query strings."""
    name = "qrag_qdrant.cli.logs"
    kind = f"{name}.JsonFormatter" if log_format == "json" else f"{name}.TextFormatter"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"no_query": {"()": f"{name}.WithoutQueryString"}, "request_id": {"()": f"{name}.RequestIdFilter"}},
        "formatters": {"line": {"()": kind}},
        "handlers": {
            "default": {"class": "logging.StreamHandler", "formatter": "line", "stream": "ext://sys.stderr"},
            "access": {
                "class": "logging.StreamHandler",
                "formatter": "line",
                "filters": ["no_query", "request_id"],
                "stream": "ext://sys.stdout",
            },
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
    }
