"""What runs the model over a document's windows: OpenVINO where it is installed, else onnxruntime.

Anchored, tiled and late pooling run the model over every window of every document, so ingest
is the model's time (0.96 of it, docs/benchmarks.md). On the CPUs measured, OpenVINO runs the
packaged int8 model 2.2 times as fast as onnxruntime, with pooled vectors within 0.999 cosine of
onnxruntime's; ``embedding.runtime`` chooses. Questions, one short text each, stay on
onnxruntime (``session``): they gain little, and importing OpenVINO would cost a CLI query more.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import EmbeddingError
from ..plugins import install_hint

#: a model's inputs (``input_ids``, ``attention_mask``, ``token_type_ids``) to its token vectors
TokenRunner = Callable[[dict[str, np.ndarray]], np.ndarray]


class OpenVinoTokens:
    """A model file compiled by OpenVINO for the CPU, run one batch of windows at a time: an infer
    request is not safe to share between threads, and the service ingests several namespaces at
    once with one embedder (onnxruntime's session is; on a machine's cores one batch at a time is
    as fast)."""

    def __init__(self, model: Path, threads: int | None):
        import openvino

        config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY"}
        if threads:
            config["INFERENCE_NUM_THREADS"] = threads
        try:
            compiled = openvino.Core().compile_model(str(model), "CPU", config)
        except Exception as exc:  # OpenVINO raises its own RuntimeError for every cause
            raise EmbeddingError(f"OpenVINO cannot load {model.name}: {exc}") from None
        self._request = compiled.create_infer_request()
        self._output = compiled.outputs[0]
        self._lock = threading.Lock()

    def __call__(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        with self._lock:  # the request reuses its output buffer on the next batch: copied inside
            vectors: np.ndarray = np.array(self._request.infer(inputs)[self._output], copy=True)
        return vectors


def openvino_model(runtime: str, model_dir: Path | None) -> Path | None:
    """The model file OpenVINO runs the windows of, or None for onnxruntime, as ``embedding.runtime``
    (``auto``, ``openvino`` or ``onnxruntime``) says: ``auto`` where OpenVINO is installed and the
    model is a local folder (the packaged one, or ``embedding.path``); ``openvino`` where it can,
    else it says what is missing."""
    if runtime == "onnxruntime":
        return None
    installed = importlib.util.find_spec("openvino") is not None
    if runtime == "openvino":
        if not installed:
            raise EmbeddingError(f"embedding.runtime = openvino needs OpenVINO: {install_hint('openvino')}")
        if model_dir is None:
            raise EmbeddingError("embedding.runtime = openvino needs a local model folder (embedding.path)")
    return model_dir / "model.onnx" if installed and model_dir is not None else None
