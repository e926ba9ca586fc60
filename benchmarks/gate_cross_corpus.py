"""The evidence gate across corpora: fit on some data sets, test on another, from ``eval --rows-out`` rows.

    qrag-qdrant eval ../shared/data/squad-dev --store $S --systems quorum --sample 3000 --seed 1 \\
        --foreign ../shared/data/scifact --rows-out rows-sq48.jsonl        # and the other indexes
    python benchmarks/gate_cross_corpus.py --data ../shared/data \\
        --rows squad-dev:sq48=rows-sq48.jsonl --rows squad-dev:sq24=rows-sq24.jsonl \\
        --rows squad2-dev:sq2=rows-sq2.jsonl --rows scifact:sci=rows-sci-a.jsonl,rows-sci-b.jsonl \\
        --out-model qrag_qdrant/retrieval/gate-v2.json --json-out cross.json

Each ``--rows DATASET:INDEX=FILES`` is one indexed corpus and its questions. Printed:

1. **Leave one data set out**: for each index, a gate fitted on the rows of the *other* data sets
   only (its threshold chosen on them by ``gate train``'s rule), against the shipped v1 gate. Once
   with v1's 15 features, once with the rare-term features added.
2. **The mixed gate** (``--out-model``): fitted on the training articles of every data set at once,
   reported per index on the test articles, which nothing was fitted or tuned on.

Questions are grouped by the article they were written on, across data sets (SQuAD 2.0's
articles are SQuAD 1.1's; a SQuAD question asked as another corpus's out-of-corpus question keeps
its article), so no article is on both sides. A SciFact claim asked of a squad index is grouped by
its own id, not by its relevant abstract: the same claim can be a training row there and a test
row of the SciFact index (different features, the same text). Rows of unanswerable questions are reported, never
fitted: they look like answerable ones to retrieval (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qrag_qdrant.calibration.fitting import (
    CATEGORIES,
    SystemRows,
    abstain_rates,
    cross_validated_scores,
    fit_model,
    gate_confidences,
    model_scores,
    pick_threshold,
    risk_curve,
)
from qrag_qdrant.calibration.gate_training import train_gate
from qrag_qdrant.retrieval.gate import QUORUM_FEATURES, GateModel

#: the gate fitted on squad-dev alone, which the cross-corpus fit replaced
SQUAD_ONLY_MODEL = Path(__file__).parent / "experiments" / "gate-v1.json"

RARE_TERM_FEATURES = ("idf_top_share", "idf_context_share", "rarest_in_corpus", "names_in_corpus")
V1_FEATURES = [name for name in QUORUM_FEATURES if name not in RARE_TERM_FEATURES]


def article_of(data: Path) -> dict[str, str]:
    """Question id -> the article it was written on, over every QA data set under ``data``."""
    articles = {}
    for questions in data.glob("*/questions.jsonl"):
        for line in questions.read_text().splitlines():
            row = json.loads(line)
            if row.get("doc"):
                articles[str(row["id"])] = row["doc"]
    return articles


def read_index(spec: str, articles: dict[str, str]) -> tuple[str, str, list[dict[str, Any]]]:
    names, _, files = spec.partition("=")
    dataset, _, index = names.partition(":")
    rows = []
    for file in files.split(","):
        for line in Path(file).read_text().splitlines():
            row = json.loads(line)
            if row["system"] != "quorum":
                continue
            if row["id"].startswith("foreign:"):
                row["group"] = articles.get(row["id"].removeprefix("foreign:"), row["group"])
            row["index"] = index
            if row["features"]:  # in the gate's own order (rows written before it was fixed differ)
                row["features"] = {name: row["features"][name] for name in QUORUM_FEATURES}
            rows.append(row)
    unique = {row["id"]: row for row in rows}  # a question asked twice of one index (two files) counts once
    return dataset, index, list(unique.values())


def measure(scores: np.ndarray, rows: SystemRows, threshold: float) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score

    rates = abstain_rates(scores, rows, threshold)
    fitted = rows.categories != "unanswerable"
    y, s, gated = rows.y[fitted], scores[fitted], rows.gated[fitted]
    return {
        "threshold": round(threshold, 4),
        **{f"abstain_{c}": rates[c] for c in CATEGORIES},
        "auc": round(float(roc_auc_score(y, s)), 4) if len(set(y.tolist())) == 2 else None,
        "aurc": round(float(risk_curve(y, s, gated).mean()), 4),
        "questions": len(rows.y),
    }


def of_features(rows: list[dict[str, Any]], names: Sequence[str]) -> SystemRows:
    data = SystemRows.of(rows)
    keep = [data.features.index(name) for name in names]
    return SystemRows(list(names), data.x[:, keep], data.y, data.groups, data.categories, data.gated)


def fitted_scores(train: SystemRows, test: SystemRows, target: float) -> tuple[np.ndarray, float]:
    train = train.take(train.categories != "unanswerable")
    threshold = pick_threshold(cross_validated_scores(train, "logistic", 0), train, target)
    return model_scores(fit_model(train, "logistic", 0), test), threshold


def leave_one_out(indexes: dict[str, tuple[str, list[dict[str, Any]]]], target: float) -> dict[str, Any]:
    shipped = GateModel.load(SQUAD_ONLY_MODEL).systems["quorum"]
    table: dict[str, Any] = {}
    for index, (dataset, rows) in indexes.items():
        others = [row for d, r in indexes.values() if d != dataset for row in r]
        test_rows = SystemRows.of(rows)
        table[index] = {"shipped v1": measure(gate_confidences(shipped, test_rows), test_rows, shipped.threshold)}
        for label, names in (
            ("v1 features, other data sets", V1_FEATURES),
            ("rare-term features, other data sets", list(QUORUM_FEATURES)),
        ):
            scores, threshold = fitted_scores(of_features(others, names), of_features(rows, names), target)
            table[index][label] = measure(scores, of_features(rows, names), threshold)
    return table


def mixed_gate(
    indexes: dict[str, tuple[str, list[dict[str, Any]]]], target: float, sources: list[str], test_share: float
) -> tuple[GateModel, dict[str, Any]]:
    rows = [row for _, r in indexes.values() for row in r if row["category"] != "unanswerable"]
    model, _ = train_gate(rows, test_share, 0, target, sources)
    test_groups = set(model.info["trained_on"]["test_articles"])
    gate = model.systems["quorum"]
    table = {}
    for index, (_, index_rows) in indexes.items():
        data = SystemRows.of([row for row in index_rows if row["group"] in test_groups])
        table[index] = measure(gate_confidences(gate, data), data, gate.threshold)
    model.info.update(
        {
            "version": "v2",
            "indexes": {i: d for i, (d, _) in indexes.items()},
            "label": "the context (ungated) holds a gold answer, or comes from a relevant document; "
            "fitted on the training articles of every index at once",
            "tested_on": table,
        }
    )
    previous = GateModel.load(SQUAD_ONLY_MODEL)
    model.systems.update({name: gate for name, gate in previous.systems.items() if name != "quorum"})
    model.info["list_systems"] = (
        "the gates of the other systems (plain ranked lists, for eval's comparisons) "
        "are v1's, fitted on squad-dev alone"
    )
    return model, table


def print_table(title: str, table: dict[str, Any]) -> None:
    print(f"\n{title}\n| index | gate | threshold | abstain: answerable | unanswerable | out-of-corpus | AUC | AURC |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for index, gates in table.items():
        for name, m in gates.items() if "threshold" not in gates else [("mixed v2", gates)]:
            cells = [f"{m['abstain_' + c]:.3f}" if m["abstain_" + c] is not None else "-" for c in CATEGORIES]
            print(f"| {index} | {name} | {m['threshold']:.3f} | {' | '.join(cells)} | {m['auc']} | {m['aurc']} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="the folder of the QA data sets (article of each id)")
    parser.add_argument("--rows", action="append", required=True, help="DATASET:INDEX=FILE[,FILE]")
    parser.add_argument("--target-abstain", type=float, default=0.02)
    parser.add_argument("--test-share", type=float, default=0.5)
    parser.add_argument("--out-model", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    articles = article_of(args.data)
    indexes = {}
    for spec in args.rows:
        dataset, index, rows = read_index(spec, articles)
        indexes[index] = (dataset, rows)
    loo = leave_one_out(indexes, args.target_abstain)
    print_table("Leave one data set out (fitted on the others; shipped v1 as is)", loo)
    sources = [
        spec.split("=")[0] + "=" + ",".join(Path(f).name for f in spec.split("=")[1].split(",")) for spec in args.rows
    ]
    model, mixed = mixed_gate(indexes, args.target_abstain, sources, args.test_share)
    print_table("Mixed gate, test articles only", mixed)
    if args.out_model:
        if args.out_model.exists() and (weights := GateModel.load(args.out_model).info.get("calibration_blend")):
            model.info["calibration_blend"] = weights
            print(
                f"calibration_blend kept from the file replaced; derive it again for the new threshold: "
                f"benchmarks/gate_blend.py --gate {args.out_model} --write"
            )
        model.save(args.out_model)
    if args.json_out:
        args.json_out.write_text(json.dumps({"leave_one_out": loo, "mixed": mixed}, indent=2) + "\n")


if __name__ == "__main__":
    main()
