import json, random, statistics, sys, time
from pathlib import Path
import numpy as np
import qdrant_edge as e
from qrag_qdrant import QuorumRAG
qs=[json.loads(l)["question"] for l in open("../shared/data/squad-dev/questions.jsonl")]
qs=random.Random(1).sample(qs,200)
with QuorumRAG.from_config(None, store=Path(sys.argv[1]), namespace="eval-squad-dev") as rag:
    rag.warm(); c=rag.coordinator; spec=c.collections[0][0]; sh=rag.store._shard(spec.name)
    emb=rag.embedder(); vecs=[emb.query_embed(q).tolist() for q in qs]
    res={k:[] for k in ["call_vec","call_novec","access_vec","asarray","payload","id"]}
    for v in vecs:
        for wv in (True, False):
            req=e.QueryRequest(limit=15, query=e.Query.Nearest(v, using="dense"), with_vector=["dense"] if wv else False, with_payload=True,
               params=e.SearchParams(hnsw_ef=128, quantization=e.QuantizationSearchParams(rescore=True, oversampling=2.0)))
            s=time.perf_counter(); got=sh.query_batch(e.QueryBatchRequest([req]))[0]; res["call_vec" if wv else "call_novec"].append(time.perf_counter()-s)
            if wv: pts=got
        s=time.perf_counter(); ls=[p.vector["dense"] for p in pts]; res["access_vec"].append((time.perf_counter()-s)/len(pts))
        s=time.perf_counter(); [np.asarray(l,dtype=np.float32) for l in ls]; res["asarray"].append((time.perf_counter()-s)/len(pts))
        s=time.perf_counter(); [p.payload for p in pts]; res["payload"].append((time.perf_counter()-s)/len(pts))
        s=time.perf_counter(); [str(p.id) for p in pts]; res["id"].append((time.perf_counter()-s)/len(pts))
    print({k: round(statistics.median(v)*1e6,1) for k,v in res.items()})
