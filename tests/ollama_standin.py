"""An HTTP stand-in that speaks Ollama's streaming ``/api/chat`` (NDJSON over chunked HTTP).

No Ollama server runs here, so the generation tests talk to this instead; one test in
test_generation.py runs against a real Ollama when QRAG_TEST_OLLAMA_HOST is set. It holds requests
to Ollama's API reference (docs/api.md, "Generate a chat completion"): a body field the reference
does not name, an option it does not list, or a message without a role and content is a 400
``{"error": ...}``, as a request Ollama cannot read is; an unknown model is its 404.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from qrag_qdrant.retrieval.conversation import REWRITE_SYSTEM

#: /api/chat's request fields, and the model options, as Ollama's API reference lists them
CHAT_FIELDS = {
    "model",
    "messages",
    "tools",
    "format",
    "options",
    "stream",
    "keep_alive",
    "think",
    "logprobs",
    "top_logprobs",
}
OPTIONS = {
    "num_keep",
    "seed",
    "num_predict",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "repeat_last_n",
    "temperature",
    "repeat_penalty",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "numa",
    "num_ctx",
    "num_batch",
    "num_gpu",
    "main_gpu",
    "use_mmap",
    "num_thread",
}


def malformed(body: dict[str, Any]) -> str | None:
    """What Ollama's reference would not accept in a chat request, or None."""
    if unknown := set(body) - CHAT_FIELDS:
        return f"unknown fields {sorted(unknown)}"
    if unknown := set(body.get("options") or {}) - OPTIONS:
        return f"unknown options {sorted(unknown)}"
    if not all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in body.get("messages", [None])):
        return "each message needs a role and content"
    return None


@dataclass
class OllamaStandIn:
    host: str
    model: str
    tokens: list[str]
    cut_after: int | None = None  # close the stream, unfinished, after this many tokens
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: set once the first token of an answer has been sent: a request is in flight
    first_token_sent: threading.Event = field(default_factory=threading.Event)
    #: when given, the rest of the answer waits until it is set
    hold: threading.Event | None = None
    #: the first token's alternatives (token, log-probability), sent when a request asks for
    #: log-probabilities, as Ollama >= 0.12.11 does; None: an older server that sends none
    first_alternatives: list[tuple[str, float]] | None = None
    #: each token's own log-probability; None: the first token's is its first alternative's, the rest 0 (certain)
    logprobs: list[float] | None = None
    #: when given, each request's own first-token alternatives, from its body (overrides ``first_alternatives``)
    alternatives_for: Callable[[dict[str, Any]], list[tuple[str, float]]] | None = None
    #: when given, only the requests it holds true for wait on ``hold``
    hold_when: Callable[[dict[str, Any]], bool] | None = None
    #: a follow-up's rewrite (retrieval.conversation.mode): the question -> the reply; a question it
    #: does not hold is kept as it is, as a model that finds it stand-alone does
    rewrites: dict[str, str] = field(default_factory=dict)
    #: the answers of sampled readings (generation.samples): the request with seed n gets the n-th
    samples: list[list[str]] = field(default_factory=list)

    def tokens_for(self, body: dict[str, Any]) -> list[str]:
        """The reply's tokens: the rewrite for a rewrite request, a sample's for a sampled reading,
        else the answer's."""
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        options = body.get("options") or {}
        if system != REWRITE_SYSTEM and options.get("temperature") and self.samples:
            return self.samples[(options["seed"] - 1) % len(self.samples)]
        if system != REWRITE_SYSTEM:
            return self.tokens
        prompt = body["messages"][-1]["content"]
        question = prompt.rsplit("Last question:", 1)[1].split("\nRewritten question:")[0].strip()
        return [self.rewrites.get(question, question)]


#: /api/embed's request fields, as Ollama's API reference lists them
EMBED_FIELDS = {"model", "input", "truncate", "options", "keep_alive", "dimensions"}
#: the stand-in's embeddings' size
EMBED_DIM = 64


def bag_of_words(text: str) -> list[float]:
    vector = [0.0] * EMBED_DIM
    for word in re.findall(r"[a-z]+", text.lower()):
        vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % EMBED_DIM] += 1.0
    return vector


def embed_reply(body: dict[str, Any], model: str) -> tuple[int, dict[str, Any]]:
    """/api/embed as Ollama's API reference gives it: ``input`` a text or a list of texts, one
    vector each in ``embeddings``; here each a hashed bag of its words, so texts that share words
    are near."""
    if unknown := set(body) - EMBED_FIELDS:
        return 400, {"error": f"unknown fields: {sorted(unknown)}"}
    if body.get("model") != model:
        return 404, {"error": f"model '{body.get('model')}' not found"}
    texts = [body["input"]] if isinstance(body.get("input"), str) else body.get("input")
    if not isinstance(texts, list) or not all(isinstance(text, str) for text in texts):
        return 400, {"error": "input: a string or a list of strings"}
    return 200, {"model": model, "embeddings": [bag_of_words(text) for text in texts]}


@contextmanager
def ollama_standin(
    model: str = "mistral",
    tokens: list[str] | None = None,
    cut_after: int | None = None,
    hold: threading.Event | None = None,
    first_alternatives: list[tuple[str, float]] | None = None,
    logprobs: list[float] | None = None,
    alternatives_for: Callable[[dict[str, Any]], list[tuple[str, float]]] | None = None,
    hold_when: Callable[[dict[str, Any]], bool] | None = None,
    rewrites: dict[str, str] | None = None,
    samples: list[list[str]] | None = None,
) -> Iterator[OllamaStandIn]:
    state = OllamaStandIn(
        "",
        model,
        tokens or ["Foragers ", "perform ", "the waggle dance ", "[1]."],
        cut_after,
        hold=hold,
        first_alternatives=first_alternatives,
        logprobs=logprobs,
        alternatives_for=alternatives_for,
        hold_when=hold_when,
        rewrites=rewrites or {},
        samples=samples or [],
    )

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append({"path": self.path, **body})
            if self.path != "/api/chat":  # /api/embed, or nothing the stand-in serves
                embed = self.path == "/api/embed"
                return self._json(*(embed_reply(body, state.model) if embed else (404, {"error": "not found"})))
            if problem := malformed(body):
                return self._json(400, {"error": problem})
            if body["model"] != state.model:
                return self._json(404, {"error": f"model '{body['model']}' not found"})
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            tokens = state.tokens_for(body)
            for count, token in enumerate(tokens):
                if state.cut_after is not None and count == state.cut_after:
                    self.wfile.flush()
                    self.connection.shutdown(2)  # mid-stream: no final chunk, no done message
                    return
                chunk = {"model": state.model, "message": {"role": "assistant", "content": token}, "done": False}
                first = state.alternatives_for(body) if state.alternatives_for else state.first_alternatives
                if body.get("logprobs") and first is not None:
                    top = first if count == 0 else []
                    own = state.logprobs[count] if state.logprobs else top[0][1] if top else 0.0
                    chunk["logprobs"] = [
                        {
                            "token": token,
                            "logprob": own,
                            "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top[: body["top_logprobs"]]],
                        }
                    ]
                self._chunk(chunk)
                if count == 0:
                    state.first_token_sent.set()
                    if state.hold is not None and (state.hold_when is None or state.hold_when(body)):
                        state.hold.wait()
            self._chunk(
                {
                    "model": state.model,
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": len(json.dumps(body["messages"])) // 4,
                    "eval_count": len(tokens),
                    "eval_duration": 2_000_000 * len(tokens),
                }
            )
            self.wfile.write(b"0\r\n\r\n")

        def _chunk(self, message: dict[str, Any]) -> None:
            data = (json.dumps(message) + "\n").encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _json(self, status: int, message: dict[str, Any]) -> None:
            data = json.dumps(message).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.host = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        if state.hold is not None:
            state.hold.set()  # a held answer must not keep the server from shutting down
        server.shutdown()
        server.server_close()
