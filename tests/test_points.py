"""A hit as the engines hand it over: its stored vector as the same float32s, whatever the engine's type."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

import numpy as np

from qrag_qdrant.store import Hit

PAYLOAD = {
    "source": "a.txt",
    "doc_hash": "h",
    "chunk_index": 0,
    "word_start": 0,
    "word_end": 3,
    "start": 0,
    "end": 14,
    "text": "three words here",
}


def scored_point(vector):
    return SimpleNamespace(id=uuid.UUID(int=7), score=0.5, vector=vector, payload=PAYLOAD)


def test_a_hit_holds_its_stored_vector_as_the_same_float32s_in_order():
    stored = [0.1, -1 / 3, 2.0**-30, 0.7071067811865476, -0.0]
    hit = Hit.of(scored_point({"dense": stored}))
    assert hit.dense.dtype == np.float32
    assert hit.dense.tobytes() == np.asarray(stored, dtype=np.float32).tobytes()
    assert hit.id == str(uuid.UUID(int=7)) and hit.payload.text == "three words here"


def test_a_hit_searched_without_vectors_has_an_empty_one():
    assert Hit.of(scored_point(None)).dense.shape == (0,)
    assert Hit.of(scored_point({})).dense.shape == (0,)


def test_a_point_found_by_several_searches_is_one_hit_with_each_searchs_score():
    first, again = scored_point({"dense": [1.0, 0.0]}), scored_point({"dense": [1.0, 0.0]})
    again.score = 0.25
    [[a], [b]] = Hit.all_of([[first], [again]])
    assert (a.score, b.score) == (0.5, 0.25) and a.dense is b.dense
