"""Embedders that ask a server: any OpenAI-compatible ``/v1/embeddings`` (Text Embeddings
Inference, vLLM, llama.cpp's server, a gateway) over httpx, and Ollama through its own client.

A team's embedding server is where ingest's work belongs on a small machine: documents go in
batches of ``embedding.server.batch_size``, ``concurrency`` requests at once; a failed request
(a connection refused, a timeout, a 429 or a 5xx) is tried again with exponential backoff and
jitter through tenacity, so clients that failed together do not retry together. The key is read
from the environment variable ``embedding.server.api_key_env`` names, never from the config.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import numpy as np
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from ..config.sections import EmbeddingSettings
from ..errors import EmbeddingError, redacted
from ..plugins import require
from .base import embedding_dim

#: statuses worth a retry: the server is busy or briefly down
RETRIED_STATUSES = {408, 429, 500, 502, 503, 504}


def unit(rows: Any, dim: int, model: str) -> np.ndarray:
    """The vectors as unit-length float32 rows, their size checked against ``embedding.dim``."""
    vectors = np.asarray(rows, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[1] != dim:
        got = vectors.shape[1] if vectors.ndim == 2 else "no"
        raise EmbeddingError(f"the server's {model!r} gave vectors of size {got}, not embedding.dim {dim}")
    normed: np.ndarray = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return normed


def retried(error: BaseException) -> bool:
    if isinstance(error, httpx.HTTPStatusError):
        return error.response.status_code in RETRIED_STATUSES
    return isinstance(error, httpx.TransportError) or type(error).__name__ in ("ResponseError", "ConnectError")


class ServedEmbedder:
    """What both served embedders share: batches, concurrency, retries; a subclass asks."""

    mean_pools = False  # a server gives no token vectors: chunks are embedded whole

    def __init__(self, settings: EmbeddingSettings):
        self.settings, self.server = settings, settings.server
        if not self.server.url:
            raise EmbeddingError(f"embedding.embedder {settings.embedder!r} needs embedding.server.url")
        self.model_name = settings.model
        self.dim = embedding_dim(settings)
        self.where = redacted(self.server.url)

    def key(self) -> str | None:
        name = self.server.api_key_env
        if name is None:
            return None
        if not (key := os.environ.get(name)):
            raise EmbeddingError(f"embedding.server.api_key_env names {name}, which is not set")
        return key

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        size = self.server.batch_size
        batches = [texts[start : start + size] for start in range(0, len(texts), size)]
        if len(batches) == 1 or self.server.concurrency == 1:
            return np.concatenate([self._asked(batch) for batch in batches])
        with ThreadPoolExecutor(self.server.concurrency, thread_name_prefix="qrag-embed") as pool:
            return np.concatenate(list(pool.map(self._asked, batches)))

    def query_embed(self, text: str) -> np.ndarray:
        vector: np.ndarray = self._asked([text])[0]
        return vector

    def embed_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        stride: int = 192,
        windows: Sequence[tuple[int, int]] | None = None,
    ) -> np.ndarray:
        raise EmbeddingError(f"{self.settings.embedder} serves whole texts only: use embedding.pooling = chunk")

    def _asked(self, texts: list[str]) -> np.ndarray:
        try:
            for attempt in Retrying(
                stop=stop_after_attempt(self.server.retries + 1),
                wait=wait_exponential_jitter(multiplier=self.server.backoff, jitter=self.server.backoff, max=30.0),
                retry=retry_if_exception(retried),
                reraise=True,
            ):
                with attempt:
                    return unit(self.ask(texts), self.dim, self.model_name)
        except EmbeddingError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"the embedding server at {self.where} failed: {redacted(str(exc))[:300]}") from None
        raise AssertionError("unreachable: tenacity re-raises the last failure")

    def ask(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError


class OpenAIEmbedder(ServedEmbedder):
    """An OpenAI-compatible ``POST {url}/embeddings``."""

    def __init__(self, settings: EmbeddingSettings):
        super().__init__(settings)
        key = self.key()
        self.client = httpx.Client(
            base_url=self.server.url.rstrip("/") + "/",
            timeout=self.server.timeout,
            headers={"Authorization": f"Bearer {key}"} if key else {},
        )

    def ask(self, texts: list[str]) -> list[list[float]]:
        response = self.client.post("embeddings", json={"model": self.model_name, "input": texts})
        response.raise_for_status()
        data = sorted(response.json()["data"], key=lambda item: item["index"])
        return [item["embedding"] for item in data]


class OllamaEmbedder(ServedEmbedder):
    """Ollama's ``/api/embed``, through the ``ollama`` package (the ``ollama`` extra)."""

    def __init__(self, settings: EmbeddingSettings):
        super().__init__(settings)
        ollama = require("ollama", "ollama", "embedding.embedder = 'ollama'", error=EmbeddingError)
        key = self.key()
        headers = {"Authorization": f"Bearer {key}"} if key else None
        self.client = ollama.Client(host=self.server.url, timeout=self.server.timeout, headers=headers)

    def ask(self, texts: list[str]) -> list[list[float]]:
        return [list(vector) for vector in self.client.embed(model=self.model_name, input=texts).embeddings]
