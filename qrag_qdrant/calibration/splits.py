"""Splitting a corpus's documents by a seeded hash: the same split on any machine, for eval's
``--hold-out`` and ``--articles`` and for ``gate calibrate``'s held-out documents."""

from __future__ import annotations

import hashlib


def held_out_docs(docs: list[str], share: float, seed: int, salt: str = "") -> frozenset[str]:
    """``round(share * len(docs))`` documents, the same ones for the same seed on any machine;
    another ``salt`` draws a split independent of this one."""
    ranked = sorted(docs, key=lambda doc: hashlib.sha256(f"{salt}{seed}:{doc}".encode()).hexdigest())
    return frozenset(ranked[: round(share * len(docs))])
