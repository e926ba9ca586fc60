"""Where collections live: the embedded Qdrant Edge default, a Qdrant server, or a plug-in's store.

A store is a factory ``(Settings) -> Store``, found by name in a ``plugins.Registry``: the
built-ins (``edge``, ``server``) are entry points in the group ``qrag_qdrant.stores``, as a
plug-in's are (see pyproject.toml); in-process code may also call ``register_store``.
``qdrant.store`` picks one; ``auto`` is ``server`` when ``qdrant.url`` is set, else ``edge``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..config.settings import Settings
from ..plugins import Registry
from .base import CollectionManifest, Store
from .points import ChunkPayload, ChunkPoint, Hit, VectorQuery

__all__ = [
    "STORES",
    "ChunkPayload",
    "ChunkPoint",
    "CollectionManifest",
    "Hit",
    "Store",
    "VectorQuery",
    "open_store",
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
