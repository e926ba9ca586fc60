"""WordLlama (https://github.com/dleemiller/WordLlama) as a qrag-qdrant embedder: the token
embeddings of a large language model's first layer, trained to be averaged into a sentence vector.
It reads no word's context, so it ranks differently from a transformer, and it embeds thousands of
chunks a second on one core: a second dense voter that costs almost nothing.

    [embeddings.wl]
    embedder = "wordllama"
    model = "l2_supercat"
    dim = 256

and retrievers that name it: ``{ kind = "dense", embedding = "wl", size = 50, overlap = 25 }``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from qrag_qdrant.errors import EmbeddingError


class WordLlamaEmbedder:
    """Unit-length vectors of ``dim`` values (``embedding.dim``: 64, 128, 256, 512 or 1024, the
    first values of the full vector), from the weights WordLlama's wheel holds."""

    class Options(BaseModel):
        """``[embedders.wordllama]``: nothing to set yet; a section with a key is refused."""

    mean_pools = False

    def __init__(self, settings: Any, options: WordLlamaEmbedder.Options):
        import wordllama

        self.model_name = settings.model
        self.dim = settings.dim or 256
        # the wheel's own folders, read as WordLlama reads its cache: no download is ever tried
        self._model = wordllama.WordLlama.load(
            config=settings.model,
            dim=self.dim,
            cache_dir=Path(wordllama.__file__).parent,
            disable_download=True,
        )

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self._model.embed(texts, norm=True), dtype=np.float32).reshape(len(texts), self.dim)

    def query_embed(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        stride: int = 192,
        windows: Sequence[tuple[int, int]] | None = None,
    ) -> np.ndarray:
        raise EmbeddingError("WordLlama embeds each chunk's text on its own: set pooling = 'chunk'")
