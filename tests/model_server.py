"""A real OpenAI-compatible model server for the tests: llama.cpp's own HTTP server (xllamacpp) with
the packaged GGUF on a free loopback port, and a small real proxy in front of it that can answer
429 first, as a busy server or a rate-limiting gateway does, or die part way, as a killed server does."""

from __future__ import annotations

import http.client
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation.backends.embedded import PACKAGED_MODELS, packaged_gguf

from .service_helpers import free_port

#: the key the server is started with, and the model id it serves
SERVER_KEY = "sk-test-server-key"
SERVED_MODEL = "qwen-test"


def packaged_model() -> str | None:
    """The smallest packaged model installed (the answers' content matters little here), or None."""
    installed = [name for name, model in PACKAGED_MODELS.items() if model.part_path(1) is not None]
    return min(installed, key=lambda name: PACKAGED_MODELS[name].size, default=None) if installed else None


@dataclass
class ModelServer:
    url: str
    #: the live server object: the model stays loaded and listening while it is referenced
    handle: Any = field(repr=False)


@contextmanager
def model_server(context: int = 4096, embeddings: bool = False) -> Iterator[ModelServer]:
    """``embeddings``: serve ``/v1/embeddings`` (each text's token vectors mean-pooled) instead of chat."""
    import xllamacpp

    name = packaged_model()
    assert name is not None, "no packaged model is installed"
    params = xllamacpp.CommonParams()
    params.model.path = str(packaged_gguf(name))
    params.model_alias = {SERVED_MODEL}  # a set of names: a bare string would be its letters
    params.n_ctx = context
    params.n_parallel = 1
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = load_settings().llm.threads
    params.warmup = False
    params.verbosity = 0
    params.port = free_port()
    params.api_keys = [SERVER_KEY]
    if embeddings:
        params.embedding = True
        params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
        params.n_batch = params.n_ubatch = context  # a text is embedded in one batch
    server = xllamacpp.Server(params)
    yield ModelServer(f"http://127.0.0.1:{params.port}/v1", server)


@dataclass
class RefusingProxy:
    """Forwards to ``upstream``; the first ``refusals`` requests to ``refused_path`` (chat, by
    default) get ``status`` instead. With ``dies_after``, once that many requests to it were
    forwarded the proxy dies as a killed server does: the next request's connection is dropped
    unanswered and the port closed (``dead`` is set)."""

    url: str
    seen: list[int] = field(default_factory=list)
    dead: threading.Event = field(default_factory=threading.Event)


@contextmanager
def refusing_proxy(
    upstream: str,
    refusals: int,
    status: int = 429,
    refused_path: str = "/chat/completions",
    dies_after: int | None = None,
) -> Iterator[RefusingProxy]:
    target = upstream.removeprefix("http://").split("/", 1)[0]
    proxy = RefusingProxy("")
    lock = threading.Lock()
    forwarded = [0]  # requests to ``refused_path`` passed upstream

    def die() -> None:
        server.shutdown()
        server.server_close()

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # the test reads ``seen``, not a log
            pass

        def _forward(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                counted = self.path.endswith(refused_path)
                dying = counted and dies_after is not None and forwarded[0] >= dies_after
                refuse = counted and len([s for s in proxy.seen if s == status]) < refusals
                forwarded[0] += counted and not refuse and not dying
                if not dying:
                    proxy.seen.append(status if refuse else 200)
            if dying:
                self.close_connection = True  # dropped unanswered; then the port closes
                if not proxy.dead.is_set():
                    proxy.dead.set()
                    threading.Thread(target=die).start()
                return
            if refuse:
                message = b'{"error": {"message": "busy, retry", "type": "rate_limit"}}'
                self.send_response(status)
                self.send_header("Retry-After", "0")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)
                return
            connection = http.client.HTTPConnection(target, timeout=600)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
            connection.request(method, self.path, body=body or None, headers=headers)
            reply = connection.getresponse()
            data = reply.read()  # whole: an SSE stream is still parsed chunk by chunk by the client
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in ("transfer-encoding", "content-length", "connection"):
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._forward("GET")

        def do_POST(self) -> None:
            self._forward("POST")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    proxy.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy
    finally:
        server.shutdown()
        server.server_close()
