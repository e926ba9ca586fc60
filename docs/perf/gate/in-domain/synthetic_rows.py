"""gate calibrate's synthetic questions as rows (features, label, category), for the
experiments beside this file: the same calibrate() the command runs, its questions read from
the cache the model wrote (ROWS/INDEX-questions.jsonl), passages and held-out documents drawn
with SEED (0 unless given). Run from the repository root:

    python docs/perf/gate/in-domain/synthetic_rows.py sq48 STORES/squad eval-squad-dev [SEED]   # sq2, sci alike
"""
import json, sys
from pathlib import Path
from qrag_qdrant import QuorumRAG
from qrag_qdrant.calibration import QuestionCache, question_writer, calibrate
index, store, ns = sys.argv[1:4]
seed = int(sys.argv[4]) if len(sys.argv) > 4 else 0
with QuorumRAG.from_config(store=store, namespace=ns) as rag:
    name, write = question_writer(rag.settings, rag.generator, 'model', seed, QuestionCache(Path(f'ROWS/{index}-questions.jsonl')))
    result = calibrate(rag.settings, rag.store, rag.pipeline, write, name, 200, seed=seed)
with open(f'ROWS/syn-{index}-s{seed}.jsonl', 'w') as f:
    for r in result.rows: f.write(json.dumps(r) + '\n')
print(index, name, len(result.rows), result.gate.systems['quorum'].threshold)
