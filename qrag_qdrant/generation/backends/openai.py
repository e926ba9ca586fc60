"""The ``openai`` backend: answers streamed from any OpenAI-compatible server (vLLM, the llama.cpp
server, LM Studio, a LiteLLM proxy, TGI) through the official ``openai`` SDK.

The SDK retries a refused request (429, 5xx, a dropped connection) with exponential backoff and
honours the server's ``Retry-After``; ``openai.max_retries`` bounds it. Log-probabilities are
asked for: where the server returns them the answer's confidence feeds the "sure" check as the
embedded model's does, and where it does not, that check is skipped, never invented.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from ...config.sections import OpenAISettings
from ...config.settings import Settings
from ...errors import GenerationError, redacted
from ...plugins import require
from ...results import Passage
from ..base import GenerationResult, Usage, text_until
from ..prompt import TOP_LOGPROBS, AnswerFormat, build_messages, chat_messages, decline_probability, yes_share

log = logging.getLogger(__name__)

#: what a server's 400 says when the prompt does not fit (vLLM, llama.cpp, OpenAI, LiteLLM wordings)
CONTEXT_TOO_LONG = ("context length", "context_length", "maximum context", "context size", "too many tokens")


class OpenAIGenerator:
    @classmethod
    def from_settings(cls, settings: Settings) -> OpenAIGenerator:
        """The registered factory (entry point ``openai``)."""
        return cls(settings.openai, settings.generation.answer_format, settings.llm.max_tokens)

    def __init__(self, settings: OpenAISettings, answer_format: AnswerFormat = "short", max_tokens: int = 256):
        openai = require("openai", "openai", "the openai generation backend", GenerationError)
        if not settings.base_url or not settings.model:
            raise GenerationError(
                "the openai backend needs openai.base_url and openai.model "
                "(QRAG_OPENAI_BASE_URL, QRAG_OPENAI_MODEL), e.g. http://gpu-box:8000/v1 and the served model's id"
            )
        self.settings, self.answer_format, self.max_tokens = settings, answer_format, max_tokens
        self.server: str | None = redacted(settings.base_url)
        self.model_name: str | None = settings.model
        self._client = openai.OpenAI(
            base_url=settings.base_url,
            # a server without keys still needs the SDK to send one; the key itself is never logged
            api_key=os.environ.get(settings.api_key_env) or "no-key",
            timeout=settings.timeout,
            max_retries=settings.max_retries,
            default_headers={name: value.get_secret_value() for name, value in settings.headers.items()},
        )
        self._model_checked = False
        #: the server's model decides its own window; passages are not trimmed here
        self.context_tokens: int | None = None

    def stream(
        self, question: str, passages: Sequence[Passage], result: GenerationResult
    ) -> Generator[str, None, None]:
        """The answer's text as it arrives, ``result`` filled from the server's log-probabilities
        and usage; every failure is one GenerationError naming the fix."""
        messages = build_messages(question, passages, self.answer_format)
        return self._chat(messages, self.max_tokens, result, logprobs=True)

    def sample(
        self, question: str, passages: Sequence[Passage], temperature: float, seed: int, result: GenerationResult
    ) -> str:
        """The answer read again at ``temperature`` (``generation.samples``); a server with a
        prompt cache (vLLM, llama.cpp) reads the same prompt once."""
        messages = build_messages(question, passages, self.answer_format)
        return "".join(self._chat(messages, self.max_tokens, result, logprobs=True, sampling=(temperature, seed)))

    def complete(self, system: str, prompt: str, max_tokens: int, cancelled: threading.Event) -> str:
        """One short completion (a query expansion); stops reading once ``cancelled`` is set."""
        return text_until(self._chat(chat_messages(system, prompt), max_tokens, GenerationResult()), cancelled)

    def yes_probability(self, system: str, prompt: str) -> float:
        """P("yes") against P("no") for the first answer token (the judge), from the server's
        log-probabilities; a server that returns none cannot judge."""
        reply = self._call(
            lambda: self._client.chat.completions.create(
                model=self.model_name,
                messages=chat_messages(system, prompt),
                max_tokens=1,
                temperature=0,
                logprobs=True,
                top_logprobs=TOP_LOGPROBS,
            )
        )
        content = reply.choices[0].logprobs.content if reply.choices and reply.choices[0].logprobs else None
        if not content:
            raise GenerationError(
                f"the server at {self.server} returns no log-probabilities: generation.judge needs them"
            )
        top = [(entry.token, entry.logprob) for entry in content[0].top_logprobs]
        return yes_share(top)

    def _chat(
        self,
        messages: list[dict[str, str]],
        max_tokens: int,
        result: GenerationResult,
        logprobs: bool = False,
        sampling: tuple[float, int] | None = None,
    ) -> Generator[str, None, None]:
        """Greedy, or with ``sampling`` = (temperature, seed)."""
        started = time.perf_counter()
        temperature, seed = sampling or (0, None)
        request: dict[str, Any] = {
            "model": self.model_name,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
            **({"seed": seed} if seed is not None else {}),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if logprobs:
            request |= {"logprobs": True, "top_logprobs": TOP_LOGPROBS}
        chunks = self._call(lambda: self._client.chat.completions.create(**request))
        first = True
        try:
            for chunk in self._read(chunks):
                if chunk.usage is not None:
                    details = getattr(chunk.usage, "prompt_tokens_details", None)
                    result.usage = Usage(
                        prompt_tokens=chunk.usage.prompt_tokens,
                        cached_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
                        completion_tokens=chunk.usage.completion_tokens,
                        completion_seconds=round(time.perf_counter() - started, 3),
                    )
                for choice in chunk.choices:
                    text = choice.delta.content if choice.delta else None
                    if not text:
                        continue
                    content = choice.logprobs.content if logprobs and choice.logprobs else None
                    if content:
                        if first:
                            top = [(entry.token, entry.logprob) for entry in content[0].top_logprobs]
                            result.decline_probability = decline_probability(top)
                            result.answer_logprobs = []
                        if result.answer_logprobs is not None:
                            result.answer_logprobs.extend((entry.token, entry.logprob) for entry in content)
                    first = False
                    yield text
        finally:
            chunks.close()  # a closed generator (a client that left) ends the request: the server stops

    def _read(self, chunks: Any) -> Iterator[Any]:
        """The stream's chunks; a connection that breaks off mid-answer is one GenerationError."""
        import openai

        try:
            yield from chunks
        except openai.APIError as exc:
            raise GenerationError(
                f"the answer stream from {self.server} (model {self.model_name!r}) broke off: {exc}"
            ) from None

    def _call(self, request: Any) -> Any:
        """``request()`` after checking the model, with the SDK's errors as one line naming the fix."""
        import openai

        try:
            self._check_model()
            return request()
        except openai.APIConnectionError as exc:  # includes timeouts, after the SDK's retries
            raise GenerationError(
                f"cannot reach the OpenAI-compatible server at {self.server} (model {self.model_name!r}): "
                f"is it running, and is openai.base_url right? ({exc.__class__.__name__}, "
                f"{self.settings.max_retries} retries)"
            ) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
            raise GenerationError(
                f"the server at {self.server} refused the key ({exc.status_code}): set ${self.settings.api_key_env} "
                "to a key it accepts (openai.api_key_env names the variable)"
            ) from None
        except openai.NotFoundError:
            raise GenerationError(self._unknown_model()) from None
        except openai.BadRequestError as exc:
            if any(phrase in str(exc).lower() for phrase in CONTEXT_TOO_LONG):
                raise GenerationError(
                    f"the prompt does not fit model {self.model_name!r}'s context window at {self.server}: "
                    "lower retrieval.context.adaptive_words or retrieval.context.words, or serve the model with a "
                    "larger window"
                ) from None
            raise GenerationError(f"the server at {self.server} refused the request: {_message(exc)}") from None
        except (openai.RateLimitError, openai.InternalServerError) as exc:
            raise GenerationError(
                f"the server at {self.server} still answers {exc.status_code} after {self.settings.max_retries} "
                f"retries (model {self.model_name!r}): {_message(exc)}"
            ) from None
        except openai.APIStatusError as exc:
            raise GenerationError(f"the server at {self.server} failed ({exc.status_code}): {_message(exc)}") from None

    def _check_model(self) -> None:
        """Once: the model is one the server lists. A server without ``/v1/models`` is trusted."""
        if self._model_checked:
            return
        served = self._served_models()
        if served is not None and self.model_name not in served:
            raise GenerationError(self._unknown_model(served))
        self._model_checked = True
        log.info("openai backend: model %r at %s", self.model_name, self.server)

    def _served_models(self) -> list[str] | None:
        import openai

        try:
            return [model.id for model in self._client.models.list()]
        except (openai.NotFoundError, openai.BadRequestError, openai.UnprocessableEntityError):
            return None

    def _unknown_model(self, served: list[str] | None = None) -> str:
        served = served if served is not None else self._served_models()
        listed = f": it serves {', '.join(repr(m) for m in served)}" if served else ""
        return f"the server at {self.server} has no model {self.model_name!r} (openai.model){listed}"


def _message(exc: Any) -> str:
    """The server's own error message, on one line."""
    body = getattr(exc, "body", None)
    message = body.get("message") if isinstance(body, dict) else None
    return " ".join(str(message or exc).split())
