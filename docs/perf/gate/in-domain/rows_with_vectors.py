"""`qrag-qdrant eval --rows-out` that also writes, per question, its embedding and the best
cluster's closest member vector (a JSON Lines file named first), for embedding_interaction.py:

    python docs/perf/gate/in-domain/rows_with_vectors.py ROWS/sci-ho-vec.jsonl ../shared/data/scifact \
        --systems quorum --store $SCI_COPY --namespace eval-scifact --hold-out 0.5 --split-seed 0 \
        --sample 300 --seed 0 --rows-out ROWS/rows-sci-ho.jsonl
"""
import sys, json
import numpy as np
from qrag_qdrant.coordinator import gate
from qrag_qdrant.cli import main
import qrag_qdrant.coordinator.pipeline  # patched below
base = gate.quorum_features
OUT = open(sys.argv.pop(1), 'w')
def extended(given):
    out = base(given)
    q = np.asarray(given.dense, dtype=np.float32)
    best = None
    if given.ranked:
        ms = [m for m in given.ranked[0].cluster.members if len(m.vector)]
        if ms: best = max(ms, key=lambda m: float(q @ m.vector)).vector
    OUT.write(json.dumps({'question': given.question, 'q': q.round(4).tolist(),
                          'c': None if best is None else np.asarray(best).round(4).tolist()}) + '\n'); OUT.flush()
    return out
gate.quorum_features = extended
qrag_qdrant.coordinator.pipeline.quorum_features = extended
sys.argv.insert(1, "eval")
main()
