"""Does weighting the synthetic questions so that their overlap with their own passage matches
real questions' (from the other data sets) locate the real 5% cut better? (docs/benchmarks.md, "The gate
across corpora"; tried 2026-11-25, not kept.) ROWS/: eval --rows-out rows and gate calibrate question
caches, made by the commands there; STORES/: the stores those rows were made on; run from the
repository root."""
import json, random, sys
from pathlib import Path
import numpy as np
from qrag_qdrant import QuorumRAG
from qrag_qdrant.calibration import QuestionCache, question_writer, draw_probes, calibrate, blended
from qrag_qdrant.coordinator.gate import DEFAULT_MODEL, GateModel
from qrag_qdrant.eval.gate_training import SystemRows, abstain_rates, gate_confidences, pick_threshold
from qrag_qdrant.term_stats import terms

D = Path('../shared/data')
def overlap(question, passage):
    q = terms(question)
    return len(q & terms(passage)) / len(q) if q else 0.0

def real_overlaps(dataset, n=1500, seed=0):
    rows = [json.loads(l) for l in open(D/dataset/('queries.jsonl' if dataset == 'scifact' else 'questions.jsonl'))]
    rows = [r for r in rows if not r.get('unanswerable')]
    rows = random.Random(seed).sample(rows, min(n, len(rows)))
    texts = {}
    out = []
    for r in rows:
        if dataset == 'scifact':
            docs = [texts.setdefault(d, (D/dataset/'corpus'/d).read_text()) for d in r['relevant_docs']]
            out.append(max(overlap(r['question'], t) for t in docs))
        else:
            t = texts.setdefault(r['doc'], (D/dataset/'corpus'/r['doc']).read_text())
            out.append(overlap(r['question'], t.split('\n\n')[r['paragraph_index']]))
    return np.array(out)

INDEXES = {'sq48': ('squad-dev', 'STORES/squad', 'eval-squad-dev', ['ROWS/rows-sq48.jsonl']),
           'sq2': ('squad2-dev', 'STORES/sq2', 'eval-squad2-dev', ['ROWS/rows-sq2.jsonl']),
           'sci': ('scifact', 'STORES/sci', 'eval-scifact', ['ROWS/rows-sci-a.jsonl', 'ROWS/rows-sci-b.jsonl'])}
gate = GateModel.load(DEFAULT_MODEL).systems['quorum']
reals = {ds: real_overlaps(ds) for ds, *_ in INDEXES.values()}
for ds, o in reals.items(): print(ds, 'real overlap mean %.3f median %.3f' % (o.mean(), np.median(o)))

def weighted_quantile(values, weights, q):
    order = np.argsort(values); v, w = values[order], weights[order]
    c = np.cumsum(w) / w.sum()
    return float(v[np.searchsorted(c, q)])

for index in sys.argv[1:]:
    ds, store, ns, rowfiles = INDEXES[index]
    with QuorumRAG.from_config(store=store, namespace=ns) as rag:
        name, write = question_writer(rag.settings, rag.generator, 'model', 0, QuestionCache(Path(f'ROWS/{index}-questions.jsonl')))
        texts = {}
        def writing(text):
            q = write(text); texts[q] = text; return q
        result = calibrate(rag.settings, rag.store, rag.pipeline, writing, name, 200, seed=0)
    syn = [r for r in result.rows]
    data = SystemRows.of(syn); conf = gate_confidences(gate, data)
    ov = np.array([overlap(r['id'], texts[r['id']]) for r in syn])
    inside = data.categories == 'answerable'
    real = SystemRows.of([json.loads(l) for f in rowfiles for l in open(f) if json.loads(l)['system'] == 'quorum'])
    rscores = gate_confidences(gate, real)
    true_cut = pick_threshold(rscores, real, 0.05)
    print(f'\n{index}: synthetic overlap mean {ov[inside].mean():.3f}, own real {reals[ds].mean():.3f}; true 5% cut {true_cut:.3f}')
    ref = np.concatenate([o for d, o in reals.items() if d != ds])
    edges = np.quantile(ref, [0.2, 0.4, 0.6, 0.8])
    def weights_for(x):
        rb = np.bincount(np.digitize(ref, edges), minlength=5) / len(ref)
        sb = np.bincount(np.digitize(x, edges), minlength=5) / len(x)
        return (rb / np.maximum(sb, 1e-9))[np.digitize(x, edges)]
    for label, w in [('unweighted', np.ones(inside.sum())), ('weighted to others', weights_for(ov[inside])),
                     ('weighted to own (oracle)', None)]:
        if w is None:
            edges_own = np.quantile(reals[ds], [0.2, 0.4, 0.6, 0.8])
            rb = np.bincount(np.digitize(reals[ds], edges_own), minlength=5) / len(reals[ds])
            sb = np.bincount(np.digitize(ov[inside], edges_own), minlength=5) / inside.sum()
            w = (rb / np.maximum(sb, 1e-9))[np.digitize(ov[inside], edges_own)]
        # abstain on 5% of synthetic in-corpus (weighted); rows not gated count as abstained at any cut
        g = data.gated[inside]; c = np.where(g, conf[inside], -1.0)
        cut = weighted_quantile(c, w, 0.05)
        kept = blended(gate.threshold, cut, 0.73)
        r1 = abstain_rates(rscores, real, cut); r2 = abstain_rates(rscores, real, kept)
        print(f'  {label:26s} cut {cut:.3f}: real {r1["answerable"]:.3f}/{r1["out_of_corpus"]:.3f}; blended {kept:.3f}: {r2["answerable"]:.3f}/{r2["out_of_corpus"]:.3f}')
