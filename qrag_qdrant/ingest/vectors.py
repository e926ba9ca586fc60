"""A namespace's vectors brought to the models its config names, without reading a document
again: a model of ``[embeddings]`` is added to the collections whose retrievers name it, or taken
out of those that no longer do (``revector``), and ``[embedding]``'s own model, the one clustering
reads, is changed (``reembed``), each collection in a new version behind its alias, every chunk
embedded from the text its point holds. Queries read the old version until the aliases move, all
at once, as after ``ingest --rebuild``."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import NamedTuple, Protocol

import numpy as np
from pydantic import BaseModel

from ..config.settings import DENSE_VECTOR, Settings, named_vector
from ..embedding import Embedder, NamedEmbedders
from ..errors import ConfigError
from ..store import ChunkPoint, CollectionManifest, Store, expected_manifest
from ..store.base import CALIBRATED_GATE, TERM_STATS
from ..text.term_stats import TermStats

#: points read, embedded and written at a time
BATCH = 256

#: a batch of chunk texts -> the new vector of each, by vector name (none: the vector is taken out)
Embedding = Callable[[list[str]], Mapping[str, np.ndarray]]
#: moves aliases to the new versions (alias -> collection), all at once
AliasSwitch = Callable[[dict[str, str]], None]


class EmbeddingProgress(Protocol):
    """What a re-embedding reports as it goes (an ingest's progress reports the same)."""

    def chunks_queued(self, count: int) -> None: ...
    def chunks_embedded(self, count: int) -> None: ...


class Rewrite(NamedTuple):
    """A collection to copy into a new version with ``wanted``'s vectors: behind ``alias``, now
    served by ``replaced``, built as ``stored`` says."""

    alias: str
    replaced: str
    stored: CollectionManifest
    wanted: CollectionManifest


class VectorChange(BaseModel):
    """One collection's models changed: the version that now serves its alias, what it replaced."""

    alias: str
    collection: str
    replaced: str
    added: list[str]
    removed: list[str]
    points: int
    seconds: float


class VectorsReport(BaseModel):
    model: str
    changed: list[VectorChange]
    seconds: float

    @property
    def chunks_per_second(self) -> float:
        embedded = sum(change.points for change in self.changed if change.added)
        return embedded / self.seconds if self.seconds else 0.0


class RetrieverState(BaseModel):
    """A configured retriever, where its vectors live and whether the namespace holds them."""

    name: str
    kind: str
    collection: str
    #: what its vectors come from: a dense model's name, or ``bm25``
    model: str
    #: ``ready``; ``not ingested`` (no collection yet: an ingest builds it); ``missing`` (its model's
    #: vectors are not in the collection: ``retrievers add``); ``other model`` (built with another)
    state: str


def retriever_states(store: Store, settings: Settings) -> list[RetrieverState]:
    """Every configured retriever, with its collection's state."""
    states = []
    for spec in settings.collections:
        stored, wanted = store.manifest(spec.name), expected_manifest(settings, spec)
        for retriever in spec.retrievers:
            if retriever.kind == "bm25":
                model, held, asked = "bm25", True, True
            elif retriever.embedding is None:
                model = settings.embedding.fingerprint
                held = asked = stored is None or (stored.model, stored.dim) == (wanted.model, wanted.dim)
            else:
                model = wanted.vectors[retriever.vector].model
                found = stored.vectors.get(retriever.vector) if stored is not None else None
                held, asked = found is not None, found == wanted.vectors[retriever.vector]
            state = "not ingested" if stored is None else "ready" if asked else "other model" if held else "missing"
            states.append(
                RetrieverState(name=retriever.name, kind=retriever.kind, collection=spec.name, model=model, state=state)
            )
    return states


def revector(store: Store, settings: Settings, model: str, adding: bool, progress: EmbeddingProgress) -> VectorsReport:
    """Add ``model`` (a name in ``[embeddings]``) to the collections whose configured retrievers
    name it (``adding``), or take it out of those whose retrievers no longer do. A collection
    already as asked is left alone; one built with other chunking or BM25 settings is refused:
    that takes ``ingest --rebuild``."""
    started = time.perf_counter()
    vector = named_vector(model)
    named = [spec for spec in settings.collections if model in spec.embeddings]
    if adding and not named:
        raise ConfigError(
            f"retrievers add {model}: no retriever in the config names embedding {model!r}; add one, "
            f'{{ kind = "dense", embedding = "{model}", size = 100, overlap = 50 }}, and [embeddings.{model}]'
        )
    if not adding and named:
        raise ConfigError(
            f"retrievers remove {model}: the config's retrievers still name it ({', '.join(s.name for s in named)}); "
            "take them out of the config first"
        )

    def with_model(stored: CollectionManifest, expected: CollectionManifest) -> CollectionManifest | None:
        if stored.vectors.get(vector) == expected.vectors.get(vector):
            return None
        others = {name: v for name, v in stored.vectors.items() if name != vector}
        if vector in expected.vectors:
            others[vector] = expected.vectors[vector]
        return expected.model_copy(update={"pooling": stored.pooling, "vectors": others})

    plans = _rewrites(store, settings, ("vectors",), with_model)
    embedders = NamedEmbedders(settings)  # the model is opened once for every collection
    embedding = (lambda texts: embedders.embed([model], texts)) if adding else None
    return _applied(store, plans, model, vector, embedding, progress, started)


def reembed(
    store: Store,
    settings: Settings,
    embedder: Embedder,
    progress: EmbeddingProgress,
    switch: AliasSwitch | None = None,
) -> VectorsReport:
    """Re-embed the ``dense`` vector (``[embedding]``'s, which clustering and the gate read) of every
    collection built with another model, with the config's (``embedder``), each chunk whole (chunk pooling: the
    documents are not read, so no window spans two chunks). The namespace's calibrated gate is
    not kept: its threshold was fitted to the other model's cosines (``gate calibrate``). ``switch``
    moves the aliases (the store's own switch without it): a service swaps its pipeline in the same step."""
    started = time.perf_counter()

    def with_model(stored: CollectionManifest, expected: CollectionManifest) -> CollectionManifest | None:
        if (stored.model, stored.dim) == (expected.model, expected.dim):
            return None
        return expected.model_copy(update={"pooling": "chunk", "vectors": stored.vectors})

    plans = _rewrites(store, settings, ("model", "dim", "vectors"), with_model)
    model = settings.embedding.fingerprint

    def embedding(texts: list[str]) -> Mapping[str, np.ndarray]:
        return {DENSE_VECTOR: embedder.embed(texts)}

    return _applied(store, plans, model, DENSE_VECTOR, embedding, progress, started, switch)


def _rewrites(
    store: Store,
    settings: Settings,
    changing: tuple[str, ...],
    wanted: Callable[[CollectionManifest, CollectionManifest], CollectionManifest | None],
) -> list[Rewrite]:
    """A rewrite of every built collection for which ``wanted(stored, expected)`` (its manifest
    and the config's) gives the manifest of a new version (None: it is as asked). Only the
    ``changing`` fields may differ: a collection built with other chunking or BM25 settings is
    refused, as that takes ``ingest --rebuild``."""
    served = store.list_collections(settings.namespace)
    plans: list[Rewrite] = []
    for spec in settings.collections:
        stored = store.manifest(spec.name)
        if stored is None:
            continue  # nothing ingested in it yet: an ingest builds it as the config says
        expected = expected_manifest(settings, spec).model_copy(update={"bm25_source": stored.bm25_source})
        kept = {field: getattr(stored, field) for field in changing}
        if (problem := stored.mismatch(expected.model_copy(update=kept))) is not None:
            raise ConfigError(f"collection {spec.name} was built with {problem}: that takes ingest PATH --rebuild")
        if (manifest := wanted(stored, expected)) is not None:
            plans.append(Rewrite(spec.name, served.get(spec.name, spec.name), stored, manifest))
    return plans


def _applied(
    store: Store,
    plans: list[Rewrite],
    model: str,
    vector: str,
    embedding: Embedding | None,
    progress: EmbeddingProgress,
    started: float,
    switch: AliasSwitch | None = None,
) -> VectorsReport:
    """Every planned collection rewritten, then the aliases moved to the new versions at once."""
    if embedding is not None:  # every collection's chunks at once: the time left is of the whole change
        progress.chunks_queued(sum(store.count(plan.alias) for plan in plans))
    changed = [_rewritten(store, plan, vector, embedding, progress) for plan in plans]
    if changed:
        (switch or store.switch_aliases)({change.alias: change.collection for change in changed})
        for change in changed:
            store.drop_collection(change.replaced)
    return VectorsReport(model=model, changed=changed, seconds=round(time.perf_counter() - started, 3))


def _rewritten(
    store: Store, plan: Rewrite, vector: str, embedding: Embedding | None, progress: EmbeddingProgress
) -> VectorChange:
    """The points of ``plan.alias`` copied into a new version built like ``plan.wanted``: ``vector``
    embedded from each point's text, or left out (no ``embedding``); the rest as stored."""
    started = time.perf_counter()
    alias, stored, wanted = plan.alias, plan.stored, plan.wanted
    target, stamp = store.next_version(alias), time.time_ns()  # a new stamp: result caches start over
    store.create_collection(target, wanted.model_copy(update={"indexed": stamp}))
    try:
        # the same chunks: their term counts hold (under the new stamp), and the calibrated gate
        # unless the vectors it reads are another model's
        counts = TermStats.current(store.attachment(alias, TERM_STATS), stored.indexed)
        if counts is not None:
            store.attach(target, TERM_STATS, counts.updated(Counter(), Counter(), counts.chunks, stamp).to_bytes())
        if vector != DENSE_VECTOR:
            store.attach(target, CALIBRATED_GATE, store.attachment(alias, CALIBRATED_GATE))
        points = 0
        for batch in _batches(store.scroll_points(alias)):
            fresh = embedding([point.payload.text for point in batch]) if embedding is not None else {}
            store.upsert(target, [_with(point, vector, fresh, row) for row, point in enumerate(batch)])
            points += len(batch)
            if embedding is not None:
                progress.chunks_embedded(len(batch))
        store.finish_bulk(target)
    except BaseException:
        store.drop_collection(target)  # the alias still serves the old version
        raise
    return VectorChange(
        alias=alias,
        collection=target,
        replaced=plan.replaced,
        added=[vector] if embedding is not None else [],
        removed=[vector] if vector in stored.vectors or vector == DENSE_VECTOR else [],
        points=points,
        seconds=round(time.perf_counter() - started, 3),
    )


def _with(point: ChunkPoint, vector: str, fresh: Mapping[str, np.ndarray], row: int) -> ChunkPoint:
    """``point`` with ``vector`` replaced by its row of ``fresh``, or without it."""
    if vector == DENSE_VECTOR:
        return replace(point, dense=fresh[vector][row])
    named = {name: values for name, values in point.named.items() if name != vector}
    if vector in fresh:
        named[vector] = fresh[vector][row]
    return replace(point, named=named)


def _batches(points: Iterable[ChunkPoint]) -> Iterator[list[ChunkPoint]]:
    """``points``, ``BATCH`` at a time."""
    iterator = iter(points)
    while batch := list(itertools.islice(iterator, BATCH)):
        yield batch
