import json, random, statistics, sys, time, struct
from functools import lru_cache
from pathlib import Path
import numpy as np
from qrag_qdrant import QuorumRAG
from qrag_qdrant.store import base
from qrag_qdrant.store.base import Hit, ChunkPayload, DENSE_VECTOR
from qrag_qdrant.threads import one_blas_thread
one_blas_thread()
store, ns, qfile, n, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
rows=[json.loads(l) for l in open(qfile) if l.strip()]
qs=[r["question"] for r in random.Random(seed).sample(rows, n+20)]
old_of=Hit.of.__func__
@lru_cache(maxsize=None)
def packer(n): return struct.Struct(f"{n}f")
def new_of(cls, point, point_id=None):
    dense = vectors[DENSE_VECTOR] if (vectors := point.vector) else ()
    return cls(str(point.id if point_id is None else point_id), point.score,
               np.frombuffer(packer(len(dense)).pack(*dense), dtype=np.float32),
               ChunkPayload.of(point.payload))
def use(f): Hit.of = classmethod(f)
with QuorumRAG.from_config(None, store=Path(store), namespace=ns) as rag:
    rag.warm()
    t={"old":[], "new":[]}; same=0
    for i,q in enumerate(qs):
        out={}
        for name in (("old","new") if i%2==0 else ("new","old")):
            use(old_of if name=="old" else new_of)
            s=time.perf_counter(); out[name]=rag.retrieve(q); e=(time.perf_counter()-s)*1000
            if i>=20: t[name].append(e)
        if i>=20: same += out["old"].model_dump(exclude={"timings_ms"})==out["new"].model_dump(exclude={"timings_ms"})
    print(json.dumps({"n":len(t["old"]),"old_p50":round(statistics.median(t["old"]),3),"new_p50":round(statistics.median(t["new"]),3),
      "paired_median_diff_ms":round(statistics.median(b-a for a,b in zip(t["old"],t["new"])),3),"identical_evidence":same}))
