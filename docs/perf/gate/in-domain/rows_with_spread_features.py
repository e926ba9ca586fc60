"""`qrag-qdrant eval --rows-out` with four more gate features in the rows, each about how far the
best hit stands out from the other candidates (an in-domain question whose document is missing
finds neighbours that all look alike). The gate reads its features by name, so only rows change.
Arguments are eval's; the runs: the commands of "The gate across corpora" and scifact_held_out.py's.
"""
import sys
import numpy as np
from qrag_qdrant.coordinator import gate
from qrag_qdrant.cli import main
base = gate.quorum_features
def extended(given):
    out = base(given)
    dense = [[h.score for h in l.hits] for l in given.lists if given.kinds.get(l.retriever) == "dense" and len(l.hits) > 2]
    bm25 = [[h.score for h in l.hits] for l in given.lists if given.kinds.get(l.retriever) == "bm25" and len(l.hits) > 2 and l.hits[0].score > 0]
    lead = max((s[0] - float(np.mean(s[1:10])) for s in dense), default=0.0)
    z = max(((s[0] - float(np.mean(s[:15]))) / (float(np.std(s[:15])) + 1e-6) for s in dense), default=0.0)
    bl = float(np.mean([1 - float(np.mean(s[1:10])) / s[0] for s in bm25])) if bm25 else 0.0
    hits = [h for l in given.lists for h in l.hits[:10]]
    first = given.ranked[0].cluster.members[0].source if given.ranked else None
    conc = sum(h.payload.source == first for h in hits) / len(hits) if hits and first else 0.0
    return out | {"dense_lead": lead, "dense_z": min(z, 10.0), "bm25_lead": bl, "source_concentration": conc}
gate.quorum_features = extended
import qrag_qdrant.coordinator.pipeline  # noqa: F401  (patched below)
for mod in list(sys.modules.values()):
    if getattr(mod, "quorum_features", None) is base and mod is not gate:
        mod.quorum_features = extended
sys.argv.insert(1, "eval")
main()
