"""SciFact with half its abstracts held out: claims whose abstracts are all out of the index are
out of corpus, in the corpus's own domain. The shipped v2, its SciFact calibration, the oracle cut,
a leave-one-data-set-out fit, each feature alone (against squad-dev's 24-article held-out split),
and fits on these rows themselves (grouped 5-fold), the most these features can give.

ROWS/: rows-sci-ho.jsonl (eval ../shared/data/scifact --systems quorum --hold-out 0.5 --split-seed 0
--sample 300 --seed 0 --rows-out ...), and the rows of unseen_and_standardised.py. Run from the
repository root."""
import json, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, 'benchmarks')
from gate_cross_corpus import article_of, of_features, read_index
from qrag_qdrant.coordinator.gate import QUORUM_FEATURES, GateModel, DEFAULT_MODEL
from qrag_qdrant.eval.gate_training import abstain_rates, pick_threshold, _fit, _scores, gate_confidences
from sklearn.metrics import roc_auc_score
W = Path('ROWS'); names = list(QUORUM_FEATURES)
articles = article_of(Path('../shared/data'))
specs = {'sq48': f'squad-dev:sq48={W}/rows-sq48.jsonl', 'sq24': f'squad-dev:sq24={W}/rows-sq24.jsonl',
         'sq2': f'squad2-dev:sq2={W}/rows-sq2.jsonl', 'sciho': f'scifact:sciho={W}/rows-sci-ho.jsonl'}
idx = {i: read_index(s, articles)[::2] for i, s in specs.items()}
rows = idx['sciho'][1]; t = of_features(rows, names)
v2 = GateModel.load(DEFAULT_MODEL).systems['quorum']
cal = json.load(open('docs/perf/gate/overlap-weighting/calibration-sci-model.json'))
print('sci calibration kept', cal.get('kept'))
train = of_features([r for i, (d, rs) in idx.items() if d != 'scifact' for r in rs if r['category'] != 'unanswerable'], names)
loo = _scores(_fit(train, 'logistic', 0), t)
for label, sc, cuts in [('shipped v2', gate_confidences(v2, t), {'shipped': v2.threshold, 'calibrated (sci, kept)': cal['kept']['threshold']}),
                        ('leave one out', loo, {})]:
    cuts['oracle 5%'] = pick_threshold(sc, t, 0.05)
    g = t.gated
    print(label, 'AUC(label)', round(roc_auc_score(t.y[g], sc[g]), 3),
          'AUC(ooc vs ans)', round(roc_auc_score((t.categories[g] == 'answerable'), sc[g]), 3))
    for k, c in cuts.items():
        r = abstain_rates(sc, t, c); print(f'   {k:24s} {c:.3f}: answerable {r["answerable"]:.3f} ooc {r["out_of_corpus"]:.3f}')
print('single-feature AUC, answerable vs out of corpus (sci-ho), and the same on sq24')
t24 = of_features(idx['sq24'][1], names)
for j, n in enumerate(names):
    def auc(tt):
        g = tt.gated & (tt.categories != 'unanswerable')
        return roc_auc_score(tt.categories[g] == 'answerable', tt.x[g, j])
    print(f'  {n:20s} sci-ho {auc(t):.3f}  sq24 {auc(t24):.3f}')
from sklearn.model_selection import GroupKFold
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
# in-sample upper bound: answerable vs out of corpus on the SciFact held-out rows themselves, grouped 5-fold
g = t.gated; X = t.x[g]; yy = (t.categories[g] == 'answerable'); grp = t.groups[g]
for label, make in [('logistic', lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))),
                    ('boosting', lambda: HistGradientBoostingClassifier(max_iter=100, learning_rate=0.05))]:
    sc = np.zeros(len(yy))
    for tr, te in GroupKFold(5).split(X, yy, grp):
        sc[te] = make().fit(X[tr], yy[tr]).predict_proba(X[te])[:, 1]
    full = np.zeros(len(t.y)); full[g] = sc
    cut = pick_threshold(full, t, 0.05); r = abstain_rates(full, t, cut)
    print(f'fitted on SciFact held-out rows themselves ({label}, CV): AUC {roc_auc_score(yy, sc):.3f}, oracle 5%: ooc {r["out_of_corpus"]:.3f}')
