"""Leave one data set out with and without the two rarest-term features (docs/benchmarks.md,
"The gate across corpora"; tried 2026-11-25, not kept). From the repository root, on rows made by
rows_with_rarest_term_features.py (eval's arguments, as in gate_cross_corpus.py's docstring):

    python docs/perf/gate/richer-models/leave_one_out_rarest_term.py squad-dev:sq48=rows-sq48.jsonl \
        squad-dev:sq24=rows-sq24.jsonl squad2-dev:sq2=rows-sq2.jsonl scifact:sci=rows-sci-a.jsonl,rows-sci-b.jsonl
"""
import sys, json
from pathlib import Path
sys.path.insert(0, 'benchmarks')
from gate_cross_corpus import article_of, of_features
from gate_model_forms import at_oracle_cut
from qrag_qdrant.coordinator.gate import QUORUM_FEATURES
from qrag_qdrant.eval.gate_training import _scores
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.metrics import roc_auc_score
arts = article_of(Path('../shared/data'))
NEW = ["rarest_in_top", "missing_idf_ratio"]
def read(spec):
    names, _, files = spec.partition('='); dataset, _, index = names.partition(':')
    rows = {}
    for f in files.split(','):
        for l in open(f):
            r = json.loads(l)
            if r['system'] != 'quorum': continue
            if r['id'].startswith('foreign:'): r['group'] = arts.get(r['id'].removeprefix('foreign:'), r['group'])
            rows[r['id']] = r
    return dataset, index, list(rows.values())
idx = {i: (d, r) for d, i, r in (read(s) for s in sys.argv[1:])}
for label, names in [('shipped features', list(QUORUM_FEATURES)), ('+ rarest_in_top, missing_idf_ratio', list(QUORUM_FEATURES) + NEW)]:
    for index, (dataset, rows) in idx.items():
        train = of_features([r for d, rr in idx.values() if d != dataset for r in rr if r['category'] != 'unanswerable'], names)
        test = of_features(rows, names)
        m = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)).fit(train.x[train.gated], train.y[train.gated])
        s = _scores(m, test); fit = test.categories != 'unanswerable'
        a, o = at_oracle_cut(s, test)
        print(f'{label:40s} {index:5s} AUC {roc_auc_score(test.y[fit], s[fit]):.3f} oracle {a:.3f}/{o:.3f}')
