"""The dense embedder: fastembed's text models behind ``embed`` for documents and ``query_embed``
for questions, as fastembed separates them, and late pooling over a document's windows."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config.sections import EmbeddingSettings
from ..errors import EmbeddingError
from ..plugins import install_hint
from . import pooling
from .base import embedding_dim
from .files import OFFLINE_MODEL, check_model_dir, offline_model_dir
from .pooling import cover, stride_windows, token_ranges, token_vectors
from .runtime import OpenVinoTokens, TokenRunner, openvino_model
from .session import MeanPooledOnnx


class DenseEmbedder:
    """A fastembed text model that never waits on a hub it cannot reach.

    The model comes from ``embedding.path``, else from the ``offline`` extra's packaged
    weights, else from fastembed's cache; a download happens only with
    ``embedding.allow_download``. Anything else fails at once with the fix named.
    """

    def __init__(self, settings: EmbeddingSettings):
        self.model_name = settings.model
        self.dim = embedding_dim(settings)
        self.batch_size = settings.batch_size
        self._settings = settings
        self._tokenizer: Any = None
        self._documents: Any = None
        self._questions: Any = None
        self._windows: TokenRunner | None = None
        model_dir = settings.path or offline_model_dir(settings.model)
        if model_dir is not None:
            check_model_dir(Path(model_dir))
        self._model_dir = model_dir

    @property
    def _model(self) -> Any:
        """fastembed's model for documents, made on first use: a query never imports fastembed
        when the packaged model answers it (its import cost half a second of a CLI query)."""
        if self._documents is None:
            self._documents = self._fastembed(self._settings.threads)
        return self._documents

    def _question_model(self) -> Any:
        """One short question gains nothing from intra-op threads, and their spin-waiting after
        each run starves the store search that follows: on 2 cores, retrieval p50 went from 48 ms
        to 16 ms with a one-thread session for questions."""
        if self._questions is None:
            if self.model_name.lower() == OFFLINE_MODEL.lower() and self._model_dir is not None:
                self._questions = MeanPooledOnnx(Path(self._model_dir), threads=1)
            else:
                self._questions = self._fastembed(1)
        return self._questions

    def _fastembed(self, threads: int | None) -> Any:
        from fastembed import TextEmbedding
        from loguru import logger

        logger.disable("fastembed")  # its hub retries log errors we turn into one message
        # lazy_load: a session starts on its first use, so an unchanged re-ingest never pays for one
        kwargs: dict[str, Any] = {"lazy_load": True}
        if self._model_dir is not None:
            kwargs["specific_model_path"] = str(self._model_dir)
        elif not self._settings.allow_download:
            kwargs["local_files_only"] = True
        try:
            return TextEmbedding(self.model_name, threads=threads, **kwargs)
        except Exception as exc:  # fastembed raises bare ValueError/RuntimeError for every cause
            raise EmbeddingError(
                f"cannot load embedding model {self.model_name}: {exc}. Install the packaged weights "
                f"({install_hint('offline')}), set embedding.path to a local model folder, "
                "or allow a download with QRAG_EMBEDDING_ALLOW_DOWNLOAD=1"
            ) from None

    @property
    def mean_pools(self) -> bool:
        """Its vector of a text is the mean of the text's token vectors (not, e.g., the [CLS]
        token's), so late and anchored pooling give chunks what its questions are compared in."""
        return fastembed_mean_pools(self._model)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text. The texts go to the model shortest first, so
        texts of about one length share a batch, which is padded to its longest."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        order = np.argsort([len(text) for text in texts], kind="stable")
        vectors = np.asarray(list(self._model.embed([texts[i] for i in order], batch_size=self.batch_size)))
        rows = np.empty_like(vectors, dtype=np.float32)
        rows[order] = vectors
        return rows

    def query_embed(self, text: str) -> np.ndarray:
        model = self._question_model()
        if isinstance(model, MeanPooledOnnx):
            return model.encode(text)
        return np.asarray(next(iter(model.query_embed(text))), dtype=np.float32)

    def embed_spans(
        self,
        text: str,
        spans: Sequence[tuple[int, int]],
        stride: int = 192,
        windows: Sequence[tuple[int, int]] | None = None,
    ) -> np.ndarray:
        """Late pooling: the model runs once over windows of ``text``, and each span
        ``(start, end)`` (character offsets) gets the mean of the token vectors inside it, unit length.

        The windows overlap by ``WINDOW_TOKENS - stride`` tokens, or, given ``windows`` (character
        spans: one chunking's chunks), are those chunks, so no token's context crosses one. A
        span that is a window gets the window's own embedding, as ``embed`` would give its text
        (to 0.999 cosine where OpenVINO runs the windows: ``runtime``). Every chunking of a
        document is pooled from the same pass, and a span longer than a window loses none of its
        tokens. Each token's vector comes from the window where it
        sits furthest from an edge, so it has context on both sides. A long document is pooled
        in segments of about ``LATE_SEGMENT_CHARS``, so its token vectors never all sit in
        memory at once.
        """
        if not self.mean_pools:
            raise EmbeddingError(
                f"{self.model_name} does not mean-pool its tokens, so late and anchored "
                "pooling would not match its questions' vectors: use embedding.pooling = chunk"
            )
        bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        anchors = np.asarray(windows if windows is not None else [], dtype=np.int64).reshape(-1, 2)
        pooled = np.zeros((len(bounds), self.dim), dtype=np.float32)
        order = np.argsort(bounds[:, 0], kind="stable")
        group: list[int] = []
        for index in [*order, None]:
            if group and (index is None or bounds[index, 1] - bounds[group[0], 0] > pooling.LATE_SEGMENT_CHARS):
                low, high = int(bounds[group, 0].min()), int(bounds[group, 1].max())
                inside = anchors[(anchors[:, 0] < high) & (anchors[:, 1] > low)]
                offset = min(low, int(inside[:, 0].min(initial=low)))
                segment = text[offset : max(high, int(inside[:, 1].max(initial=high)))]
                pooled[group] = self._pool_segment(
                    segment, bounds[group] - offset, stride, inside - offset if windows is not None else None
                )
                group = []
            if index is not None:
                group.append(int(index))
        return pooled

    def _pool_segment(
        self, text: str, bounds: np.ndarray, stride: int, windows: np.ndarray | None = None
    ) -> np.ndarray:
        encoding = self._window_tokenizer().encode(text, add_special_tokens=False)
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        first, end = token_ranges(offsets, bounds)
        if windows is None:
            token_windows = stride_windows(len(offsets), stride)
        else:
            token_windows = cover(
                list(zip(*(side.tolist() for side in token_ranges(offsets, windows)))), len(offsets), stride
            )
        vectors, window_means = token_vectors(
            self._run_model,
            self._window_tokenizer(),
            np.asarray(encoding.ids, dtype=np.int64),
            token_windows,
            self.dim,
            self.batch_size,
        )
        own = {window: k for k, window in enumerate(token_windows)}
        pooled = np.zeros((len(bounds), self.dim), dtype=np.float32)
        for row, (low, high) in enumerate(zip(first.tolist(), end.tolist())):
            if windows is not None and (low, high) in own:
                pooled[row] = window_means[own[low, high]]
            elif high > low:
                pooled[row] = vectors[low:high].mean(axis=0)
        empty = np.flatnonzero(end <= first)  # no token inside (whitespace): embed the text itself
        if len(empty):
            pooled[empty] = self.embed([text[start:stop] for start, stop in bounds[empty]])
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled

    def _window_tokenizer(self) -> Any:
        """fastembed's tokenizer without its truncation and padding: the windows are cut here."""
        if self._tokenizer is None:
            from tokenizers import Tokenizer

            self._tokenizer = Tokenizer.from_str(fastembed_onnx(self._model).tokenizer.to_str())
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        return self._tokenizer

    def _run_model(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """The model's token vectors for a batch of windows, through ``embedding.runtime``."""
        if self._windows is None:
            model_dir = Path(self._model_dir) if self._model_dir is not None else None
            model = openvino_model(self._settings.runtime, model_dir)
            self._windows = OpenVinoTokens(model, self._settings.threads) if model else self._onnxruntime_tokens
        return self._windows(inputs)

    def _onnxruntime_tokens(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        vectors: np.ndarray = fastembed_onnx(self._model).model.run(None, inputs)[0]
        return vectors


# fastembed has no public API for a model's token vectors or its pooling. What late pooling
# needs of its internals is read here and nowhere else; checked against fastembed 0.9.1:
# TextEmbedding.model is the OnnxTextEmbedding, whose .model is the onnxruntime session (not yet
# set under lazy_load until load_onnx_model()) and whose .tokenizer is a tokenizers.Tokenizer.
def fastembed_onnx(model: Any) -> Any:
    """The ONNX model object behind a fastembed ``TextEmbedding``, its session loaded."""
    onnx = model.model
    if getattr(onnx, "model", None) is None:
        onnx.load_onnx_model()
    return onnx


def fastembed_mean_pools(model: Any) -> bool:
    from fastembed.text.pooled_embedding import PooledEmbedding

    return isinstance(model.model, PooledEmbedding)
