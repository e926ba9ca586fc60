"""Where collections live: the embedded Qdrant Edge default, a Qdrant server, or a plug-in's store.

A store is a factory ``(Settings) -> Store``, found by name in a ``plugins.Registry``: the
built-ins (``edge``, ``server``) are entry points in the group ``qrag_qdrant.stores``, as a
plug-in's are (see pyproject.toml); in-process code may also call ``register_store``.
``qdrant.store`` picks one; ``auto`` is ``server`` when ``qdrant.url`` is set, else ``edge``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config.settings import CollectionSpec, Settings, named_vector
from ..embedding import Bm25Embedder, embedding_dim
from ..errors import NothingIngestedError
from ..plugins import Registry
from .base import CollectionManifest, Store
from .manifest import NamedVector
from .points import ChunkPayload, ChunkPoint, Hit, VectorQuery, Where
from .qdrant import QdrantStore, qdrant_binding

__all__ = [
    "STORES",
    "ChunkPayload",
    "ChunkPoint",
    "CollectionManifest",
    "Hit",
    "QdrantStore",
    "Store",
    "VectorQuery",
    "Where",
    "expected_manifest",
    "open_collections",
    "open_store",
    "qdrant_binding",
    "register_store",
]

StoreFactory = Callable[[Settings], Store]
STORES: Registry[StoreFactory] = Registry("qrag_qdrant.stores", "store", setting="qdrant.store")
register_store = STORES.register


def open_store(settings: Settings) -> Store:
    name = settings.qdrant.store
    if name == "auto":
        name = "server" if settings.qdrant.url else "edge"
    return STORES.get(name)(settings)


def expected_manifest(settings: Settings, spec: CollectionSpec) -> CollectionManifest:
    """What collection ``spec`` of ``settings``' namespace must have been built with: its models'
    names and dimensions (known without loading them) and its BM25 setup."""
    embedding, models = settings.embedding, {name: settings.embeddings[name] for name in spec.embeddings}
    vectors = {
        named_vector(name): NamedVector(model=model.fingerprint, dim=embedding_dim(model))
        for name, model in models.items()
    }
    return CollectionManifest.expected(
        settings.namespace,
        spec,
        embedding.fingerprint,
        embedding_dim(embedding),
        settings.qdrant.bm25_source,
        vectors,
    )


def open_collections(
    store: Store, settings: Settings
) -> tuple[list[tuple[CollectionSpec, Bm25Embedder]], dict[str, int]]:
    """The namespace's collections, checked: every one exists and was built with the configured
    model and a BM25 setup, each with the BM25 source its manifest recorded, and the points of
    each. The check needs only the model's name and dimension, so a namespace built with another
    model is refused before any model is loaded."""
    namespace = settings.namespace
    collections, missing, points = [], [], {}
    for spec in settings.collections:
        stored = store.open_collection(spec.name, expected_manifest(settings, spec), create=False, reading=True)
        if stored is None:
            missing.append(spec.name)
        else:
            collections.append((spec, stored.bm25_embedder()))
            points[spec.name] = store.count(spec.name)
    run = f"run: qrag-qdrant ingest PATH --namespace {namespace}"
    if missing or not any(points.values()):
        raise NothingIngestedError(
            f"nothing ingested in namespace {namespace!r} for {', '.join(missing)}; {run}"
            if missing
            else f"namespace {namespace!r} holds no documents; {run}"
        )
    return collections, points
