"""Fit the evidence gate from ``eval --rows-out`` rows (scikit-learn, a training-time dependency).

Rows are split by article (``group``), never by question: the test articles' questions are
neither trained nor tuned on. Each system gets a standardised logistic regression on its own
features. Its threshold is chosen on the training articles only, from grouped cross-validated
predictions: the highest confidence cut that abstains on at most ``target_abstain`` of the
answerable questions. Questions without evidence at quorum abstain whatever the gate says,
and count against that budget.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from ..coordinator.gate import GateModel, LogisticGate
from ..errors import QragError
from .dataset import CATEGORIES, held_out_docs
from .metrics import risk_curve


def read_rows(paths: Iterable[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        try:
            rows += [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
        except (OSError, json.JSONDecodeError) as exc:
            raise QragError(f"cannot read gate rows from {path}: {exc}") from None
    if not rows:
        raise QragError("no rows to train on: write them with `qrag-qdrant eval ... --rows-out FILE`")
    return rows


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
        return cls(names,
                   np.array([[r["features"].get(n, 0.0) for n in names] if r["features"] else [0.0] * len(names)
                             for r in rows], dtype=float).reshape(len(rows), len(names)),
                   np.array([bool(r["label"]) for r in rows]), np.array([r["group"] for r in rows]),
                   np.array([r["category"] for r in rows]), np.array([bool(r["features"]) for r in rows]))

    def take(self, mask: np.ndarray) -> SystemRows:
        return SystemRows(self.features, self.x[mask], self.y[mask], self.groups[mask], self.categories[mask],
                          self.gated[mask])


def abstain_rates(scores: np.ndarray, rows: SystemRows, threshold: float) -> dict[str, float | None]:
    abstained = ~rows.gated | (scores < threshold)
    return {c: float(abstained[rows.categories == c].mean()) if (rows.categories == c).any() else None
            for c in CATEGORIES}


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


def _fit(rows: SystemRows, model: str, seed: int) -> Any:
    labels = rows.y[rows.gated]
    if len(set(labels.tolist())) < 2:
        return ConstantRate(float(labels.mean()) if len(labels) else 0.0)
    from sklearn.linear_model import LogisticRegression
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    estimator = (LogisticRegression(max_iter=2000) if model == "logistic"
                 else MLPClassifier(hidden_layer_sizes=(16,), max_iter=2000, random_state=seed))
    return make_pipeline(StandardScaler(), estimator).fit(rows.x[rows.gated], rows.y[rows.gated])


def gate_confidences(gate: LogisticGate, rows: SystemRows) -> np.ndarray:
    """A fitted gate's confidence per row (its features read by name); 0 where nothing reached quorum."""
    return np.array([gate.confidence(dict(zip(rows.features, x))) if gated else 0.0
                     for x, gated in zip(rows.x, rows.gated)])


def _scores(pipeline: Any, rows: SystemRows) -> np.ndarray:
    scores = np.zeros(len(rows.y))
    if rows.gated.any():
        scores[rows.gated] = pipeline.predict_proba(rows.x[rows.gated])[:, 1]
    return scores


def _cross_validated(rows: SystemRows, model: str, seed: int, folds: int = 5) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    scores = np.zeros(len(rows.y))
    splits = min(folds, len(set(rows.groups[rows.gated])))
    for train, test in GroupKFold(n_splits=splits).split(rows.x, rows.y, rows.groups):
        scores[test] = _scores(_fit(rows.take(train), model, seed), rows.take(test))
    return scores


def evaluate_model(train: SystemRows, test: SystemRows, model: str, seed: int,
                   target_abstain: float) -> tuple[Any, float, dict[str, Any]]:
    """Fit on ``train``, choose the threshold on its cross-validated scores, measure on ``test``."""
    from sklearn.metrics import roc_auc_score

    pipeline = _fit(train, model, seed)
    threshold = pick_threshold(_cross_validated(train, model, seed), train, target_abstain)
    scores = _scores(pipeline, test)
    both = len(set(test.y.tolist())) == 2
    answered = test.gated & (scores >= threshold) & (test.categories == "answerable")
    return pipeline, threshold, {
        "model": model, "threshold": round(threshold, 4),
        "auc": round(float(roc_auc_score(test.y, scores)), 4) if both else None,
        "aurc": round(float(risk_curve(test.y, scores, test.gated).mean()), 4),
        "abstain_rate": abstain_rates(scores, test, threshold),
        "answered_recall": float(test.y[answered].mean()) if answered.any() else None,
        "recall": float(test.y[test.categories == "answerable"].mean())
        if (test.categories == "answerable").any() else None,
    }


def train_gate(rows: Sequence[dict[str, Any]], test_share: float = 0.5, seed: int = 0,
               target_abstain: float = 0.02, sources: Sequence[str] = ()) -> tuple[GateModel, dict[str, Any]]:
    """A gate per system in the rows, and its held-out report (logistic against a small MLP)."""
    groups = sorted({r["group"] for r in rows})
    test_groups = held_out_docs(groups, test_share, seed, salt="gate-test")
    report: dict[str, Any] = {}
    systems: dict[str, LogisticGate] = {}
    for name in dict.fromkeys(r["system"] for r in rows):
        data = SystemRows.of([r for r in rows if r["system"] == name])
        if not data.features:
            continue
        is_test = np.isin(data.groups, list(test_groups))
        train, test = data.take(~is_test), data.take(is_test)
        if len(set(train.y[train.gated].tolist())) < 2:
            if name == "quorum":
                raise QragError("the quorum's training rows hold only one label (every context right, or every "
                                "one wrong): use more questions, or --hold-out to add out-of-corpus ones")
            report[name] = {"skipped": "its training rows hold only one label"}
            continue
        pipeline, threshold, logistic = evaluate_model(train, test, "logistic", seed, target_abstain)
        report[name] = {"logistic": logistic}
        if name == "quorum":
            report[name]["mlp"] = evaluate_model(train, test, "mlp", seed, target_abstain)[2]
        scaler, regression = pipeline[0], pipeline[-1]
        systems[name] = LogisticGate(tuple(data.features), scaler.mean_, scaler.scale_, regression.coef_[0],
                                     float(regression.intercept_[0]), round(threshold, 4))
    info = {
        "format": 1, "version": "v1", "trained": date.today().isoformat(),
        "label": "the context (ungated) holds a gold answer, or comes from a relevant document",
        "trained_on": {"rows": list(sources), "questions": len({r["id"] for r in rows}),
                       "train_articles": [g for g in groups if g not in test_groups],
                       "test_articles": sorted(test_groups), "split_seed": seed,
                       "target_answerable_abstain": target_abstain},
        "held_out": report,
    }
    return GateModel(systems, info), report
