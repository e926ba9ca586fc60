"""Leave one data set out, two ways (docs/benchmarks.md, "In-domain out-of-corpus questions"):

1. "none": the gate's logistic regression fitted on the other data sets' real rows, its threshold
   chosen there (gate train's rule, 2%), then calibrated on the index's own synthetic questions
   (the 5% cut, blended 0.65 of the way): issue #29's "a corpus the shipped gate never saw";
2. "centre" / "scale": each index's features first centred (and scaled) by its own synthetic
   in-corpus questions, a per-namespace standardisation that calibration could store.

ROWS/: rows-sq48/sq24/sq2/sci-a/sci-b.jsonl (eval --rows-out, the commands of "The gate across
corpora") and syn-sq48/sq2/sci-s<SEED>.jsonl (synthetic_rows.py). Run from the repository root;
arguments: the seeds of the synthetic draws to pool (0 unless given).
"""
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, 'benchmarks')
from gate_cross_corpus import article_of, of_features, read_index
from qrag_qdrant.coordinator.gate import QUORUM_FEATURES, logit, sigmoid
from qrag_qdrant.eval.gate_training import SystemRows, abstain_rates, pick_threshold, _cross_validated, _fit, _scores
from sklearn.metrics import roc_auc_score

W = A = Path('ROWS')
names = list(QUORUM_FEATURES)
articles = article_of(Path('../shared/data'))
specs = {'sq48': f'squad-dev:sq48={W}/rows-sq48.jsonl', 'sq24': f'squad-dev:sq24={W}/rows-sq24.jsonl',
         'sq2': f'squad2-dev:sq2={W}/rows-sq2.jsonl', 'sci': f'scifact:sci={W}/rows-sci-a.jsonl,{W}/rows-sci-b.jsonl'}
indexes = {i: read_index(s, articles)[::2] for i, s in specs.items()}  # (dataset, rows)
syn_of = {'sq48': 'sq48', 'sq24': 'sq48', 'sq2': 'sq2', 'sci': 'sci'}
syn = {}
SEEDS = [int(x) for x in sys.argv[1:]] or [0]  # the draws of synthetic questions, pooled
for i in ('sq48', 'sq2', 'sci'):
    rows = [json.loads(l) for s in SEEDS for l in open(A / f'syn-{i}-s{s}.jsonl')]
    for r in rows:
        if r['features']: r['features'] = {n: r['features'][n] for n in names}
    syn[i] = of_features(rows, names)

def stats(kind, i):
    s = syn[syn_of[i]]
    m = s.gated & (s.categories == 'answerable')
    x = s.x[m]
    if kind == 'none': return np.zeros(len(names)), np.ones(len(names))
    mu = x.mean(0); sd = x.std(0); sd[sd < 1e-6] = 1.0
    return (mu, np.ones(len(names))) if kind == 'centre' else (mu, sd)

def adapted(data, kind, i):
    mu, sd = stats(kind, i)
    return SystemRows(data.features, (data.x - mu) / sd, data.y, data.groups, data.categories, data.gated)

def rates(scores, rows, cut):
    r = abstain_rates(scores, rows, cut); return r['answerable'], r['out_of_corpus']

print('| index | standardised by | AUC | oracle 5% cut: ans / ooc | cut from the others (2%) | synthetic 5% cut: ans / ooc | blended 0.65: ans / ooc |')
print('| --- | --- | ---: | --- | ---: | --- | --- |')
for test in ('sq48', 'sq2', 'sci'):
    dataset, rows = indexes[test]
    for kind in ('none', 'centre', 'scale'):
        train_parts = [adapted(of_features([r for r in rs if r['category'] != 'unanswerable'], names), kind, i)
                       for i, (d, rs) in indexes.items() if d != dataset]
        train = SystemRows(names, np.vstack([p.x for p in train_parts]), np.concatenate([p.y for p in train_parts]),
                           np.concatenate([p.groups for p in train_parts]), np.concatenate([p.categories for p in train_parts]),
                           np.concatenate([p.gated for p in train_parts]))
        shipped_cut = pick_threshold(_cross_validated(train, 'logistic', 0), train, 0.02)
        model = _fit(train, 'logistic', 0)
        t = adapted(of_features(rows, names), kind, test)
        sc = _scores(model, t)
        s = adapted(syn[test], kind, test); ssc = _scores(model, s)
        syn_cut = pick_threshold(ssc, s, 0.05)
        kept = sigmoid(0.35 * logit(shipped_cut) + 0.65 * logit(syn_cut))
        fitted = t.categories != 'unanswerable'
        o = rates(sc, t, pick_threshold(sc, t, 0.05)); a = rates(sc, t, syn_cut); b = rates(sc, t, kept)
        print(f'| {test} | {kind} | {roc_auc_score(t.y[fitted & t.gated], sc[fitted & t.gated]):.3f} | {o[0]:.3f} / {o[1]:.3f} | {shipped_cut:.3f} | '
              f'{a[0]:.3f} / {a[1]:.3f} ({syn_cut:.3f}) | {b[0]:.3f} / {b[1]:.3f} ({kept:.3f}) |', flush=True)
