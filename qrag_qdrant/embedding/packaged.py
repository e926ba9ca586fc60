"""Model files: data files of installed packages, found without importing them (the offline
embedding model's weights and tokenizer, the parts of the packaged GGUF models), and the cache
folder they are laid out in once."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path


def cache_dir() -> Path:
    """Where models are laid out once: QRAG_CACHE_DIR, else the user's cache folder as the platform
    names it (``platformdirs``: ``~/.cache`` or ``$XDG_CACHE_HOME`` on Linux, ``~/Library/Caches`` on
    macOS, ``%LOCALAPPDATA%`` on Windows)."""
    import platformdirs

    return Path(os.environ.get("QRAG_CACHE_DIR") or platformdirs.user_cache_dir("qrag-qdrant", appauthor=False))


def package_file(package: str, relative: Path) -> Path | None:
    """``relative`` inside the installed ``package``, or None when either is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


def sha256_of(path: Path) -> str:
    with path.open("rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()
