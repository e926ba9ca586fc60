"""A/B: dense searches reuse BM25's hits (new embed_and_search) vs not (old), paired, one process."""
import json, random, statistics, sys, time
from pathlib import Path
from concurrent.futures import wait
from qrag_qdrant import QuorumRAG
from qrag_qdrant.coordinator.fusion import QUESTION
from qrag_qdrant.coordinator.pipeline import QueryVectors
from qrag_qdrant.threads import one_blas_thread
one_blas_thread()
store, ns, qfile, n, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rows=[json.loads(l) for l in open(qfile) if l.strip()]
qs=[r["question"] for r in random.Random(seed).sample(rows, n+20)]
with QuorumRAG.from_config(None, store=Path(store), namespace=ns) as rag:
    rag.warm(); c=rag.coordinator
    def old(question):
        sparse=c._sparse(question)
        lexical=c._lexical.submit(c._search, [(QUESTION, QueryVectors(question, [], sparse), c._lexical_names)], None)
        vectors=QueryVectors(question, c._embedder_factory().query_embed(question).tolist(), sparse)
        lists=c._search([(QUESTION, vectors, c._dense_names)], None) + lexical.result()
        return sorted(lists, key=lambda r: c._list_order[r.collection, r.retriever])
    def new(question):
        return c.embed_and_search(question, None)[1]
    t={"old":[], "new":[]}; same=0
    for i,q in enumerate(qs):
        out={}
        for name in (("old","new") if i%2==0 else ("new","old")):
            s=time.perf_counter(); out[name]=(old if name=="old" else new)(q); e=(time.perf_counter()-s)*1000
            if i>=20: t[name].append(e)
        if i>=20:
            a=[(l.retriever,l.collection,[(h.id,h.score,h.dense.tobytes(),h.payload) for h in l.hits]) for l in out["old"]]
            b=[(l.retriever,l.collection,[(h.id,h.score,h.dense.tobytes(),h.payload) for h in l.hits]) for l in out["new"]]
            same += a==b
    print(json.dumps({"n":len(t["old"]),"old_p50":round(statistics.median(t["old"]),3),"new_p50":round(statistics.median(t["new"]),3),
      "paired_median_diff_ms":round(statistics.median(b-a for a,b in zip(t["old"],t["new"])),3),"identical_lists":same}))
