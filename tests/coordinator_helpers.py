"""Hand-made hits and candidates for the coordinator's unit tests."""

import numpy as np

from qrag_qdrant.retrieval.fusion import Candidate
from qrag_qdrant.store import ChunkPayload, Hit


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def hit(
    point_id: str, vector=(1.0, 0.0, 0.0), source: str = "a.txt", start: int = 0, end: int = 10, text: str | None = None
) -> Hit:
    return Hit(
        point_id,
        1.0,
        unit(*vector),
        ChunkPayload(
            source=source,
            doc_hash="h",
            chunk_index=0,
            word_start=0,
            word_end=0,
            start=start,
            end=end,
            text=text if text is not None else "x" * (end - start),
            version=0,
        ),
    )


def candidate(point_id: str, retrievers=("r1",), rrf: float = 0.1, **hit_args) -> Candidate:
    return Candidate("c", hit(point_id, **hit_args), ranks={r: 1 for r in retrievers}, rrf=rrf)
