"""Streaming from the loaded model through llama.cpp's own HTTP server, on its loopback port.

The binding's in-process call can stop a request only between generated tokens, so a client that
leaves while the model is still reading a long prompt held it until the whole prompt was read
(about 80 s for 2,900 tokens on one thread). llama.cpp's HTTP server checks its client between the
prompt's batches: closing the connection frees the model within one batch (``llm.batch`` tokens).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ...errors import GenerationError

#: how often a streaming request looks whether its caller wants it stopped
HALT_POLL_SECONDS = 0.05


def stream_over_http(
    url: str, key: str, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool], halted: Callable[[], bool]
) -> None:
    """POST ``request`` (streamed) to the server at ``url``; each chunk goes to ``on_chunk``, whose
    True ends the stream. Once ``halted()`` holds, the connection is shut, which llama.cpp takes as
    the client leaving: it stops at the end of the current batch, prompt reading included."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=None)
    finished = threading.Event()

    def watch() -> None:
        while not finished.wait(HALT_POLL_SECONDS):
            if halted():
                if connection.sock is not None:
                    with contextlib.suppress(OSError):  # already closed
                        connection.sock.shutdown(socket.SHUT_RDWR)
                return

    try:
        post_chat(connection, key, request, stream=True)
        threading.Thread(target=watch, name="qrag-llm-watch", daemon=True).start()
        response = connection.getresponse()
        if response.status != 200:
            raise GenerationError(
                f"the embedded model refused the request: {response.read(500).decode(errors='replace')}"
            )
        for line in response:
            if not line.startswith(b"data: "):
                continue
            payload = line[6:].strip()
            if payload == b"[DONE]" or on_chunk(json.loads(payload)):
                return
    except (OSError, http.client.HTTPException) as exc:
        if not halted():
            raise GenerationError(f"the embedded model's stream broke off: {exc}") from None
    finally:
        finished.set()
        connection.close()


def complete_over_http(url: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
    """POST ``request`` (not streamed) to the server at ``url``: its reply, or GenerationError."""
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=None)
    try:
        post_chat(connection, key, request, stream=False)
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise GenerationError(f"the embedded model did not answer: {exc}") from None
    finally:
        connection.close()
    if response.status != 200:
        raise GenerationError(f"the embedded model refused the request: {body[:500].decode(errors='replace')}")
    reply: dict[str, Any] = json.loads(body)
    return reply


def post_chat(connection: http.client.HTTPConnection, key: str, request: dict[str, Any], stream: bool) -> None:
    """Send ``request`` to llama.cpp's chat completions, with the key only this process knows."""
    connection.request(
        "POST",
        "/v1/chat/completions",
        json.dumps({**request, "stream": stream}),
        {"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
