"""Dense and sparse (Qdrant's BM25) embedders, each with ``embed`` for documents and
``query_embed`` for questions, as fastembed separates them.

- ``base``: the ``Embedder`` interface and its registry (``embedding.embedder``);
- ``dense``: ``DenseEmbedder``, fastembed in process, and the one place that reads fastembed's internals;
- ``served``: embedders that ask a server (OpenAI-compatible, Ollama);
- ``named``: the models of ``[embeddings]``, each a dense vector of its own beside ``[embedding]``'s;
- ``pooling``: late and anchored pooling's windows and token vectors;
- ``files``: which model files are loaded (the packaged offline model, or a user's folder);
- ``session``: the packaged question model on onnxruntime directly;
- ``bm25``: BM25 vectors and the registry of sources that compute them.
"""

from .base import EMBEDDERS, Embedder, embedding_dim, open_embedder
from .bm25 import BM25_SOURCES, Bm25Document, Bm25Embedder, Bm25Settings, ServerBm25, SparseEmbedder, SparseVec
from .dense import DenseEmbedder
from .files import OFFLINE_MODEL, OFFLINE_MODEL_DIM
from .named import NamedEmbedders
from .pooling import WINDOW_TOKENS
from .session import MeanPooledOnnx

__all__ = [
    "BM25_SOURCES",
    "EMBEDDERS",
    "OFFLINE_MODEL",
    "OFFLINE_MODEL_DIM",
    "WINDOW_TOKENS",
    "Bm25Document",
    "Bm25Embedder",
    "Bm25Settings",
    "DenseEmbedder",
    "Embedder",
    "MeanPooledOnnx",
    "NamedEmbedders",
    "ServerBm25",
    "SparseEmbedder",
    "SparseVec",
    "embedding_dim",
    "open_embedder",
]
