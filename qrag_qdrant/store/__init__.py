"""Where collections live: the embedded Qdrant Edge default, or a Qdrant server."""

from __future__ import annotations

from ..config import Settings
from .base import ChunkPoint, CollectionManifest, Hit, Store, VectorQuery

__all__ = ["ChunkPoint", "CollectionManifest", "Hit", "Store", "VectorQuery", "open_store"]


def open_store(settings: Settings) -> Store:
    """A server store when ``qdrant.url`` is set (QRAG_QDRANT_URL), else Edge under ``store``."""
    if settings.qdrant.url:
        from .server import ServerStore

        return ServerStore.connect(settings.qdrant)
    from .edge import EdgeStore

    return EdgeStore(settings.store, settings.namespace)
