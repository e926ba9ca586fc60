"""Is there more in the embeddings than the gate's features? On SciFact with half its abstracts
held out, grouped 5-fold fits on the rows themselves (an upper bound, in sample): the gate's
features, the elementwise product of the question's embedding and the best member's vector, and
both. ROWS/: rows_with_vectors.py's two files. Run from the repository root."""
import json, numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold
from sklearn.metrics import roc_auc_score
from sklearn.preprocessing import StandardScaler
from sklearn.pipeline import make_pipeline
rows = [json.loads(l) for l in open('ROWS/rows-sci-ho.jsonl')]
vec = {}
for l in open('ROWS/sci-ho-vec.jsonl'):
    v = json.loads(l); vec[v['question']] = v
qs = {}
for l in open('../shared/data/scifact/queries.jsonl'):
    r = json.loads(l); qs[str(r['id'])] = r['question']
keep = [r for r in rows if r['features'] and vec.get(qs[r['id']], {}).get('c')]
y = np.array([r['category'] == 'answerable' for r in keep]); g = np.array([r['group'] for r in keep])
F = np.array([list(r['features'].values()) for r in keep])
Q = np.array([vec[qs[r['id']]]['q'] for r in keep]); C = np.array([vec[qs[r['id']]]['c'] for r in keep])
for name, X, Cr in [('gate features', F, 1.0), ('q*c', Q * C, 0.1), ('features + q*c', np.hstack([F, Q * C]), 0.1), ('features + |q-c|', np.hstack([F, np.abs(Q - C)]), 0.1)]:
    for c in (0.01, 0.1, 1.0):
        sc = np.zeros(len(y))
        for tr, te in GroupKFold(5).split(X, y, g):
            sc[te] = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=5000)).fit(X[tr], y[tr]).predict_proba(X[te])[:, 1]
        cut = np.sort(sc[y])[int(0.05 * y.sum())]
        print(f'{name:20s} C={c}: CV AUC {roc_auc_score(y, sc):.3f}, ooc abstained at 5%: {(sc[~y] < cut).mean():.3f}')
