"""A plug-in embedder for the tests: a second model that is not the packaged one."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from pydantic import BaseModel, Field


class HashedWords:
    """A plug-in embedder with settings of its own: each word hashed to one of ``dim`` places."""

    class Options(BaseModel):
        dim: int = Field(64, ge=8)
        salt: str = ""

    mean_pools = False

    def __init__(self, settings, options: HashedWords.Options):
        # embedding.dim when it is set, as a served model's is; else its own setting
        self.model_name, self.dim, self.salt = settings.model, settings.dim or options.dim, options.salt

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z]+", text.lower()):
                vectors[row, int(hashlib.sha256((self.salt + word).encode()).hexdigest(), 16) % self.dim] += 1.0
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)

    def query_embed(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_spans(self, text, spans, stride=192, windows=None):
        raise NotImplementedError("chunks are embedded whole")
