"""Fit the evidence gate from ``eval --rows-out`` rows (scikit-learn, a training-time dependency).

Rows are split by article (``group``), never by question: the test articles' questions are
neither trained nor tuned on. Each system gets a standardised logistic regression on its own
features. Its threshold is chosen on the training articles only, from grouped cross-validated
predictions: the highest confidence cut that abstains on at most ``target_abstain`` of the
answerable questions. Questions without evidence at quorum abstain whatever the gate says,
and count against that budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import QragError
from ..retrieval.gate import GateModel, LogisticGate
from ..text.json_lines import BadLine, json_lines
from .fitting import (
    SystemRows,
    abstain_rates,
    cross_validated_scores,
    fit_model,
    model_scores,
    pick_threshold,
    risk_curve,
)
from .splits import held_out_docs


def read_rows(paths: Iterable[Path]) -> list[dict[str, Any]]:
    rows = []
    for path in paths:
        try:
            rows += [row for _, row in json_lines(Path(path))]
        except (OSError, BadLine) as exc:
            raise QragError(f"cannot read gate rows from {path}: {exc}") from None
    if not rows:
        raise QragError("no rows to train on: write them with `qrag-qdrant eval ... --rows-out FILE`")
    return rows


def evaluate_model(
    train: SystemRows, test: SystemRows, model: str, seed: int, target_abstain: float
) -> tuple[Any, float, dict[str, Any]]:
    """Fit on ``train``, choose the threshold on its cross-validated scores, measure on ``test``."""
    from sklearn.metrics import roc_auc_score

    pipeline = fit_model(train, model, seed)
    threshold = pick_threshold(cross_validated_scores(train, model, seed), train, target_abstain)
    scores = model_scores(pipeline, test)
    both = len(set(test.y.tolist())) == 2
    answered = test.gated & (scores >= threshold) & (test.categories == "answerable")
    return (
        pipeline,
        threshold,
        {
            "model": model,
            "threshold": round(threshold, 4),
            "auc": round(float(roc_auc_score(test.y, scores)), 4) if both else None,
            "aurc": round(float(risk_curve(test.y, scores, test.gated).mean()), 4),
            "abstain_rate": abstain_rates(scores, test, threshold),
            "answered_recall": float(test.y[answered].mean()) if answered.any() else None,
            "recall": float(test.y[test.categories == "answerable"].mean())
            if (test.categories == "answerable").any()
            else None,
        },
    )


def train_gate(
    rows: Sequence[dict[str, Any]],
    test_share: float = 0.5,
    seed: int = 0,
    target_abstain: float = 0.02,
    sources: Sequence[str] = (),
) -> tuple[GateModel, dict[str, Any]]:
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
                raise QragError(
                    "the quorum's training rows hold only one label (every context right, or every "
                    "one wrong): use more questions, or --hold-out to add out-of-corpus ones"
                )
            report[name] = {"skipped": "its training rows hold only one label"}
            continue
        pipeline, threshold, logistic = evaluate_model(train, test, "logistic", seed, target_abstain)
        report[name] = {"logistic": logistic}
        if name == "quorum":
            report[name]["mlp"] = evaluate_model(train, test, "mlp", seed, target_abstain)[2]
        scaler, regression = pipeline[0], pipeline[-1]
        systems[name] = LogisticGate(
            tuple(data.features),
            scaler.mean_,
            scaler.scale_,
            regression.coef_[0],
            float(regression.intercept_[0]),
            round(threshold, 4),
        )
    info = {
        "format": 1,
        "version": "v1",
        "trained": date.today().isoformat(),
        "label": "the context (ungated) holds a gold answer, or comes from a relevant document",
        "trained_on": {
            "rows": list(sources),
            "questions": len({r["id"] for r in rows}),
            "train_articles": [g for g in groups if g not in test_groups],
            "test_articles": sorted(test_groups),
            "split_seed": seed,
            "target_answerable_abstain": target_abstain,
        },
        "held_out": report,
    }
    return GateModel(systems, info), report
