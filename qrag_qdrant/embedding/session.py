"""The packaged question model run by onnxruntime directly, from a graph optimised once."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from .packaged import cache_dir
from .pooling import WINDOW_TOKENS


class MeanPooledOnnx:
    """The packaged model run by onnxruntime itself: what fastembed does for all-MiniLM-L6-v2
    (truncate to 256 tokens, mean of the token vectors, unit length), without fastembed's import.

    The session starts from the graph onnxruntime optimised the first time, saved beside the
    model: optimising took half of the session's 0.3 s start.
    """

    def __init__(self, model_dir: Path, threads: int):
        from tokenizers import Tokenizer

        try:
            self._session = optimized_session(model_dir / "model.onnx", threads)
            self._tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except Exception as exc:  # onnxruntime and tokenizers raise their own bare errors
            raise EmbeddingError(f"cannot load embedding model from {model_dir}: {exc}") from None
        self._tokenizer.enable_truncation(WINDOW_TOKENS + 2)
        self._tokenizer.no_padding()

    def encode(self, text: str) -> np.ndarray:
        ids = np.asarray([self._tokenizer.encode(text).ids], dtype=np.int64)
        hidden: np.ndarray = self._session.run(
            None, {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        )[0]
        vector = hidden[0].astype(np.float64).mean(axis=0)
        unit: np.ndarray = (vector / max(float(np.linalg.norm(vector)), 1e-12)).astype(np.float32)
        return unit


def optimized_session(model: Path, threads: int) -> Any:
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
        except Exception:
            pass
    # extended, not all: the layout optimisations of "all" are tied to the CPU that made the file
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    saved.parent.mkdir(parents=True, exist_ok=True)
    staging = saved.with_name(f".{saved.name}.{os.getpid()}")
    options.optimized_model_filepath = str(staging)
    session = onnxruntime.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    staging.replace(saved)
    return session
