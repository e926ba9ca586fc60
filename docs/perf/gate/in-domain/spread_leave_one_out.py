"""Leave one data set out, the gate's logistic regression with and without the spread features;
each index at its oracle cut (5% of its own answerable questions abstained). ROWS/: the rows of
rows_with_spread_features.py (sq48, sq2, sci-a, sci-b, sci-ho). Run from the repository root."""
import json, sys
from pathlib import Path
sys.path.insert(0, 'benchmarks')
from gate_cross_corpus import article_of, of_features
from qrag_qdrant.coordinator.gate import QUORUM_FEATURES
from qrag_qdrant.eval.gate_training import abstain_rates, pick_threshold, _fit, _scores
from sklearn.metrics import roc_auc_score
O = Path('ROWS'); articles = article_of(Path('../shared/data'))
SPREAD = ['dense_lead', 'dense_z', 'bm25_lead', 'source_concentration']
def read(dataset, files):
    rows = {}
    for f in files:
        for l in open(O / f):
            r = json.loads(l)
            if r['system'] != 'quorum': continue
            if r['id'].startswith('foreign:'): r['group'] = articles.get(r['id'][8:], r['group'])
            rows[r['id']] = r
    return dataset, list(rows.values())
idx = {'sq48': read('squad-dev', ['rows-sq48.jsonl']), 'sq2': read('squad2-dev', ['rows-sq2.jsonl']),
       'sci': read('scifact', ['rows-sci-a.jsonl', 'rows-sci-b.jsonl']), 'sci-ho': read('scifact', ['rows-sci-ho.jsonl'])}
base = list(QUORUM_FEATURES)
sets = {'gate features': base, '+ spread': base + SPREAD}
for n in SPREAD: sets['+ ' + n] = base + [n]
print('| index | features | AUC | out of corpus at the oracle 5% cut |'); print('| --- | --- | ---: | ---: |')
for test, (dataset, rows) in idx.items():
    for label, names in sets.items():
        train = of_features([r for d, rs in idx.values() if d != dataset for r in rs if r['category'] != 'unanswerable'], names)
        t = of_features(rows, names)
        sc = _scores(_fit(train, 'logistic', 0), t)
        f = t.gated & (t.categories != 'unanswerable')
        r = abstain_rates(sc, t, pick_threshold(sc, t, 0.05))
        print(f'| {test} | {label} | {roc_auc_score(t.y[f], sc[f]):.3f} | {r["out_of_corpus"]:.3f} |', flush=True)
    if test == 'sci-ho':
        t = of_features(rows, base + SPREAD)
        for j, n in enumerate(SPREAD, len(base)):
            g = t.gated
            print(f'single feature {n}: AUC answerable vs out of corpus {roc_auc_score(t.categories[g] == "answerable", t.x[g, j]):.3f}')
