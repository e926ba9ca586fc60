"""`qrag-qdrant eval --rows-out` with two more gate features in the rows: whether the rarest
question term the corpus holds is in the best cluster, and the highest IDF among the question's
terms the best cluster lacks, over the question's highest. The gate's own confidence reads its
features by name, so only the rows change. Arguments are eval's:

    python docs/perf/gate/richer-models/rows_with_rarest_term_features.py ../shared/data/scifact \
        --store $SCI --sample 300 --seed 0 --foreign ../shared/data/squad-dev --systems quorum --rows-out rows-sci-a.jsonl
"""
import sys
from qrag_qdrant.coordinator import gate
from qrag_qdrant.cli import main
base = gate._rarity_features
def extended(query_terms, names, top_terms, context_terms, stats):
    out = base(query_terms, names, top_terms, context_terms, stats)
    if stats is None or not query_terms:
        return out | {"rarest_in_top": 1.0, "missing_idf_ratio": 0.0}
    wanted = list(query_terms)
    counts = dict(zip(wanted, stats.frequencies(wanted).tolist()))
    idf = {t: stats.idf_of(counts[t]) for t in query_terms}
    seen = [t for t in query_terms if counts[t] > 0] or list(query_terms)
    rarest = max(seen, key=lambda t: idf[t])
    top = max(idf.values())
    missing = [idf[t] for t in query_terms if t not in top_terms and counts[t] > 0]
    return out | {"rarest_in_top": float(rarest in top_terms),
                  "missing_idf_ratio": (max(missing) / top) if missing and top else 0.0}
gate._rarity_features = extended
sys.argv.insert(1, "eval")
main()
