"""Streaming from the loaded model through llama.cpp's own HTTP server, on its loopback port, with
httpx (as the openai backend's SDK) and httpx-sse reading the server-sent events.

The binding's in-process call can stop a request only between generated tokens, so a client that
leaves while the model is still reading a long prompt held it until the whole prompt was read
(about 80 s for 2,900 tokens on one thread). llama.cpp's HTTP server checks its client between the
prompt's batches: shutting the connection frees the model within one batch (``llm.batch`` tokens).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from ...errors import GenerationError
from ...plugins import require

#: how often a streaming request looks whether its caller wants it stopped
HALT_POLL_SECONDS = 0.05
CHAT = "/v1/chat/completions"


def _client(url: str, key: str) -> httpx.Client:
    """A client of the model server, with the key only this process knows; no timeout: a long
    prompt on a slow machine takes minutes, and the caller stops a request by halting it."""
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=None)


def _refused(response: httpx.Response) -> GenerationError:
    return GenerationError(f"the embedded model refused the request: {response.read()[:500].decode(errors='replace')}")


def stream_over_http(
    url: str, key: str, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool], halted: Callable[[], bool]
) -> None:
    """POST ``request`` (streamed) to the server at ``url``; each chunk goes to ``on_chunk``, whose
    True ends the stream. Once ``halted()`` holds, the connection's socket is shut, which llama.cpp
    takes as the client leaving: it stops at the end of the current batch, prompt reading included
    (closing the response would wait for a read that may not come until the prompt is read)."""
    httpx_sse = require("httpx_sse", "local-llm", "the embedded model's answer stream", GenerationError)
    finished = threading.Event()

    def watch(connection: socket.socket) -> None:
        while not finished.wait(HALT_POLL_SECONDS):
            if halted():
                with contextlib.suppress(OSError):  # already closed
                    connection.shutdown(socket.SHUT_RDWR)
                return

    try:
        with (
            _client(url, key) as client,
            httpx_sse.connect_sse(client, "POST", CHAT, json={**request, "stream": True}) as events,
        ):
            connection = events.response.extensions["network_stream"].get_extra_info("socket")
            threading.Thread(target=watch, args=(connection,), name="qrag-llm-watch", daemon=True).start()
            if events.response.status_code != 200:
                raise _refused(events.response)
            for event in events.iter_sse():
                if event.data == "[DONE]" or on_chunk(json.loads(event.data)):
                    return
    except (httpx.HTTPError, httpx_sse.SSEError) as exc:
        if not halted():
            raise GenerationError(f"the embedded model's stream broke off: {exc}") from None
    finally:
        finished.set()


def count_over_http(url: str, key: str, messages: Sequence[dict[str, str]]) -> int:
    """The tokens the model reads for ``messages``: its chat template applied, then its tokenizer,
    both by the server (a few milliseconds on loopback)."""
    try:
        with _client(url, key) as client:
            templated = client.post("/apply-template", json={"messages": list(messages)})
            templated.raise_for_status()
            tokens = client.post(
                "/tokenize", json={"content": templated.json()["prompt"], "add_special": True, "parse_special": True}
            )
            tokens.raise_for_status()
            return len(tokens.json()["tokens"])
    except (httpx.HTTPError, KeyError, ValueError) as exc:
        raise GenerationError(f"the embedded model could not count the prompt's tokens: {exc}") from None


def complete_over_http(url: str, key: str, request: dict[str, Any]) -> dict[str, Any]:
    """POST ``request`` (not streamed) to the server at ``url``: its reply, or GenerationError."""
    try:
        with _client(url, key) as client:
            response = client.post(CHAT, json={**request, "stream": False})
    except httpx.HTTPError as exc:
        raise GenerationError(f"the embedded model did not answer: {exc}") from None
    if response.status_code != 200:
        raise _refused(response)
    reply: dict[str, Any] = response.json()
    return reply
