"""Fitting the evidence gate from labelled rows: the rows of one system, the threshold that keeps
an abstain budget, the abstain rates and cross-validated scores. ``gate train`` (eval) and
``gate calibrate`` both fit through here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ..retrieval.gate import LogisticGate

Category = Literal["answerable", "unanswerable", "out_of_corpus"]
CATEGORIES: tuple[Category, ...] = ("answerable", "unanswerable", "out_of_corpus")


def risk_curve(correct: np.ndarray, confidence: np.ndarray, evidence: np.ndarray) -> np.ndarray:
    """The error rate among the answered at each coverage, answering the most confident first and
    the questions without evidence last (ties keep their order). Its mean is the AURC."""
    order = np.lexsort((-confidence, ~evidence))
    return np.cumsum(~correct[order]) / np.arange(1, len(order) + 1)


@dataclass
class SystemRows:
    """One system's rows as arrays; ``gated`` marks rows the gate decides (evidence at quorum)."""

    features: list[str]
    x: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    categories: np.ndarray
    gated: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[dict[str, Any]]) -> SystemRows:
        names = next((list(r["features"]) for r in rows if r["features"]), [])
        return cls(
            names,
            np.array(
                [[r["features"].get(n, 0.0) for n in names] if r["features"] else [0.0] * len(names) for r in rows],
                dtype=float,
            ).reshape(len(rows), len(names)),
            np.array([bool(r["label"]) for r in rows]),
            np.array([r["group"] for r in rows]),
            np.array([r["category"] for r in rows]),
            np.array([bool(r["features"]) for r in rows]),
        )

    def take(self, mask: np.ndarray) -> SystemRows:
        return SystemRows(
            self.features, self.x[mask], self.y[mask], self.groups[mask], self.categories[mask], self.gated[mask]
        )


def abstain_rates(scores: np.ndarray, rows: SystemRows, threshold: float) -> dict[str, float | None]:
    abstained = ~rows.gated | (scores < threshold)
    return {
        c: float(abstained[rows.categories == c].mean()) if (rows.categories == c).any() else None for c in CATEGORIES
    }


def pick_threshold(scores: np.ndarray, rows: SystemRows, target_abstain: float) -> float:
    """The highest cut that abstains on at most ``target_abstain`` of the answerable rows."""
    answerable = rows.categories == "answerable"
    allowed = int(np.floor(target_abstain * answerable.sum())) - int((~rows.gated & answerable).sum())
    candidates = np.sort(scores[rows.gated & answerable])
    if allowed < 0 or not len(candidates):
        return 0.0
    # abstaining below candidates[allowed] drops exactly the `allowed` lowest answerable rows
    return float(candidates[min(allowed, len(candidates) - 1)])


class ConstantRate:
    """What a fold whose training part holds one label can predict: that label's rate."""

    def __init__(self, rate: float):
        self.rate = rate

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        return np.column_stack([np.full(len(x), 1 - self.rate), np.full(len(x), self.rate)])


def fit_model(rows: SystemRows, model: str, seed: int) -> Any:
    labels = rows.y[rows.gated]
    if len(set(labels.tolist())) < 2:
        return ConstantRate(float(labels.mean()) if len(labels) else 0.0)
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    estimator = (
        LogisticRegression(max_iter=2000)
        if model == "logistic"
        else MLPClassifier(hidden_layer_sizes=(16,), max_iter=2000, random_state=seed)
    )
    return make_pipeline(StandardScaler(), estimator).fit(rows.x[rows.gated], rows.y[rows.gated])


def gate_confidences(gate: LogisticGate, rows: SystemRows) -> np.ndarray:
    """A fitted gate's confidence per row (its features read by name); 0 where nothing reached quorum."""
    return np.array(
        [gate.confidence(dict(zip(rows.features, x))) if gated else 0.0 for x, gated in zip(rows.x, rows.gated)]
    )


def model_scores(pipeline: Any, rows: SystemRows) -> np.ndarray:
    scores = np.zeros(len(rows.y))
    if rows.gated.any():
        scores[rows.gated] = pipeline.predict_proba(rows.x[rows.gated])[:, 1]
    return scores


def cross_validated_scores(rows: SystemRows, model: str, seed: int, folds: int = 5) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(rows.y))
    splits = min(folds, len(set(rows.groups[rows.gated])))
    for train, test in GroupKFold(n_splits=splits).split(rows.x, rows.y, rows.groups):
        scores[test] = model_scores(fit_model(rows.take(train), model, seed), rows.take(test))
    return scores
