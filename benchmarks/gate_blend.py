"""How far `gate calibrate` should move the shipped threshold toward the one its synthetic
questions give: the blend weight in `gate-v2.json`, derived and checked leave-one-out.

    python benchmarks/gate_blend.py --writer model \\
        --index sq48=rows-sq48.jsonl,docs/perf/gate/calibration-sq48-model.json \\
        --index sq2=rows-sq2.jsonl,docs/perf/gate/calibration-sq2-model.json \\
        --index sci=rows-sci-a.jsonl+rows-sci-b.jsonl,docs/perf/gate/calibration-sci-model.json [--write]

Per index: ``eval --rows-out`` rows of its real questions (``+`` joins files) and the report of
``benchmarks/gate_calibration.py`` on it. Both thresholds are estimates of the index's true cut
(the one abstaining on 5% of its real answerable questions), with errors of their own: the
shipped one is fitted on other corpora, the calibrated one on questions easier or harder than the
real ones. The blend weights them by the inverse of their mean squared error in logits,

    logit(kept) = (1 - w) * logit(shipped) + w * logit(calibrated),  w = (1/c^2) / (1/c^2 + 1/p^2),

c and p the root mean squared errors of the calibrated and the shipped thresholds. Each index's
weight is derived from the other indexes only, and its real abstain rates at the blended cut are
printed; then the weight from all of them, the one to ship.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrag_qdrant.calibration.fitting import SystemRows, abstain_rates, gate_confidences, pick_threshold
from qrag_qdrant.calibration.namespace import blended
from qrag_qdrant.retrieval.gate import DEFAULT_MODEL, GateModel, logit

TARGET = 0.05


def inverse_mse_weight(indexes: list[tuple], shipped: float) -> float:
    """The calibrated threshold's weight from these indexes' (..., true cut logit, calibrated cut)
    errors: each estimate weighted by the inverse of its mean squared error in logits."""
    c2 = sum((logit(calibrated) - true) ** 2 for *_, true, calibrated in indexes) / len(indexes)
    p2 = sum((shipped - true) ** 2 for *_, true, _ in indexes) / len(indexes)
    return (1 / c2) / (1 / c2 + 1 / p2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--index", action="append", required=True, help="NAME=ROWS[+ROWS...],REPORT")
    parser.add_argument("--writer", default="model", help="who wrote the reports' questions (a label)")
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--gate", type=Path, default=DEFAULT_MODEL, help="the gate file whose threshold is blended")
    parser.add_argument(
        "--write",
        action="store_true",
        help="store the weight from all indexes in that file's calibration_blend, for this writer",
    )
    args = parser.parse_args()
    model = GateModel.load(args.gate)
    gate = model.systems["quorum"]
    shipped = logit(gate.threshold)
    indexes = {}
    for spec in args.index:
        name, paths = spec.split("=", 1)
        rows_paths, report = paths.split(",")
        rows = [
            row
            for path in rows_paths.split("+")
            for line in Path(path).read_text().splitlines()
            if (row := json.loads(line))["system"] == "quorum"
        ]
        data = SystemRows.of(rows)
        scores = gate_confidences(gate, data)
        calibrated = json.loads(Path(report).read_text())["targets"][str(TARGET)]["threshold"]
        indexes[name] = (data, scores, logit(pick_threshold(scores, data, TARGET)), calibrated)
    result = {"writer": args.writer, "shipped_threshold": gate.threshold, "leave_one_out": {}}
    print(
        f"| index ({args.writer}) | weight from the others | threshold: shipped / calibrated / blended | "
        f"real abstain at the blend: answerable | out-of-corpus | at the calibrated: answerable | out-of-corpus |"
    )
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    for name, (data, scores, _, calibrated) in indexes.items():
        others = [v for k, v in indexes.items() if k != name]
        w = inverse_mse_weight(others, shipped)
        kept = blended(gate.threshold, calibrated, w)
        at_blend = abstain_rates(scores, data, kept)
        at_calibrated = abstain_rates(scores, data, calibrated)
        result["leave_one_out"][name] = {
            "weight": w,
            "threshold": kept,
            "blended": at_blend,
            "calibrated": at_calibrated,
        }
        print(
            f"| {name} | {w:.2f} | {gate.threshold:.3f} / {calibrated:.3f} / {kept:.3f} | "
            f"{at_blend['answerable']:.3f} | {at_blend['out_of_corpus']:.3f} | {at_calibrated['answerable']:.3f} | "
            f"{at_calibrated['out_of_corpus']:.3f} |"
        )
    result["weight"] = inverse_mse_weight(list(indexes.values()), shipped)
    print(f"\nweight from all {len(indexes)} indexes: {result['weight']:.2f}")
    if args.write:
        model.info.setdefault("calibration_blend", {})[args.writer] = round(result["weight"], 2)
        model.save(args.gate)
        print(f"written to {args.gate} as calibration_blend.{args.writer}")
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
