"""Leave one data set out: does a richer model of the gate's own features rank out-of-corpus
questions better than its logistic regression (docs/benchmarks.md, "The gate across corpora")?
Each index is scored by a model fitted on the other data sets' rows; its cut is the oracle one
(5% of the index's own answerable questions abstained), so only the ranking is compared.

    python benchmarks/gate_model_forms.py squad-dev:sq48=rows-sq48.jsonl squad-dev:sq24=rows-sq24.jsonl \\
        squad2-dev:sq2=rows-sq2.jsonl scifact:sci=rows-sci-a.jsonl,rows-sci-b.jsonl

The rows are ``eval --rows-out``'s, made by the commands in gate_cross_corpus.py's docstring.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from qrag_qdrant.calibration.fitting import SystemRows, abstain_rates, model_scores, pick_threshold
from qrag_qdrant.retrieval.gate import QUORUM_FEATURES

sys.path.insert(0, str(Path(__file__).parent))
from gate_cross_corpus import article_of, of_features, read_index

MODELS = {
    "logistic (the gate's)": lambda: make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000)),
    "logistic, pairwise products": lambda: make_pipeline(
        StandardScaler(),
        PolynomialFeatures(2, include_bias=False),
        StandardScaler(),
        LogisticRegression(C=0.1, max_iter=5000),
    ),
    "MLP, 16 units": lambda: make_pipeline(StandardScaler(), MLPClassifier((16,), max_iter=2000, random_state=0)),
    "gradient boosting": lambda: HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, random_state=0),
}


def at_oracle_cut(scores: np.ndarray, rows: SystemRows, share: float = 0.05) -> tuple[float, float]:
    """Answerable and out-of-corpus abstain rates at the cut that abstains on ``share`` of the
    index's own answerable questions (``gate train``'s rule, applied to the index itself)."""
    rates = abstain_rates(scores, rows, pick_threshold(scores, rows, share))
    return rates["answerable"], rates["out_of_corpus"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("indexes", nargs="+", help="DATASET:INDEX=ROWS[,ROWS...]")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    args = parser.parse_args()
    articles = article_of(args.data)
    indexes = {index: (dataset, rows) for dataset, index, rows in (read_index(s, articles) for s in args.indexes)}
    names = list(QUORUM_FEATURES)
    print("| index | model | AUC | abstain at the oracle cut: answerable | out-of-corpus |")
    print("| --- | --- | ---: | ---: | ---: |")
    for index, (dataset, rows) in indexes.items():
        train = of_features(
            [r for d, rs in indexes.values() if d != dataset for r in rs if r["category"] != "unanswerable"], names
        )
        test = of_features(rows, names)
        fitted = test.categories != "unanswerable"
        for label, make in MODELS.items():
            scores = model_scores(make().fit(train.x[train.gated], train.y[train.gated]), test)
            answerable, foreign = at_oracle_cut(scores, test)
            print(
                f"| {index} | {label} | {roc_auc_score(test.y[fitted], scores[fitted]):.3f} | "
                f"{answerable:.3f} | {foreign:.3f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
