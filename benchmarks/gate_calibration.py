"""How well ``gate calibrate`` picks a namespace's threshold, judged on real labelled questions.

    python benchmarks/gate_calibration.py --store $S --namespace eval-squad2-dev \\
        --rows rows-sq2.jsonl --questions model --passages 200 --cache sq2-questions.jsonl

Runs the calibration as the command does (the same ``calibrate``: passages drawn, a quarter of
the documents held out, questions by the model, cached, or by the passages' sentences), without
storing it. Then the thresholds it gives are applied to the real questions of ``eval --rows-out``
rows of the same index, which it never saw:

1. the threshold the command keeps (blended with the shipped one, ``calibration.blended``) and the
   real abstain rates it gives;
2. at targets of 5%, 3% and 2% of the synthetic in-corpus questions abstained: the real
   answerable and out-of-corpus abstain rates, and the share of synthetic questions below the
   cut that abstains on exactly 5% of the real answerable ones;
3. the calibration curve: subsets of 25 to all the passages (100 draws each) and the spread of
   the threshold and of the real abstain rates they give.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import numpy as np

from qrag_qdrant import QuorumRAG
from qrag_qdrant.calibration.fitting import SystemRows, abstain_rates, gate_confidences, pick_threshold
from qrag_qdrant.calibration.namespace import QuestionCache, blended, calibrate, question_writer
from qrag_qdrant.retrieval.gate import DEFAULT_MODEL, GateModel, LogisticGate

TARGETS = (0.05, 0.03, 0.02)
SUBSETS = (25, 50, 100, 150)


def real_rows(path: Path, gate: LogisticGate) -> tuple[SystemRows, np.ndarray]:
    rows = [row for line in path.read_text().splitlines() if (row := json.loads(line))["system"] == "quorum"]
    data = SystemRows.of(rows)
    return data, gate_confidences(gate, data)


def synthetic_threshold(rows: list[dict], gate: LogisticGate, target: float) -> float:
    data = SystemRows.of(rows)
    return pick_threshold(gate_confidences(gate, data), data, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--rows", type=Path, required=True, help="eval --rows-out rows of the same index")
    parser.add_argument("--questions", choices=["model", "sentences"], default="model")
    parser.add_argument("--passages", type=int, default=600)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=Path("calibration-questions.jsonl"))
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    gate = GateModel.load(DEFAULT_MODEL).systems["quorum"]
    with QuorumRAG.from_config(store=args.store, namespace=args.namespace) as rag:
        name, write = question_writer(rag.settings, rag.generator, args.questions, args.seed, QuestionCache(args.cache))
        started = time.perf_counter()
        result = calibrate(rag.settings, rag.store, rag.pipeline, write, name, args.passages, seed=args.seed)
        seconds = time.perf_counter() - started
    synthetic = result.rows
    data, scores = real_rows(args.rows, gate)
    real_cut = pick_threshold(scores, data, 0.05)
    inside = np.array(
        [gate.confidence(r["features"]) if r["features"] else 0.0 for r in synthetic if r["category"] == "answerable"]
    )
    kept = result.gate.systems["quorum"].threshold
    report = {
        "questions": name,
        "passages": len(synthetic),
        "seconds": round(seconds, 1),
        "real_5pct_cut": real_cut,
        "synthetic_below_real_5pct_cut": round(float((inside < real_cut).mean()), 3),
        "kept": {
            "threshold": kept,
            "blend": result.gate.info["calibrated_on"]["blend"],
            **abstain_rates(scores, data, kept),
        },
        "targets": {},
        "curve": {},
    }
    print(
        f"{name}: {len(synthetic)} questions in {seconds:.0f} s; {report['synthetic_below_real_5pct_cut']:.3f} of "
        f"the synthetic in-corpus ones fall below the cut abstaining on 5% of the real answerable ({real_cut:.3f})"
    )
    print(
        f"kept (blend {report['kept']['blend']:.2f}): threshold {kept:.3f}, real abstain: answerable "
        f"{report['kept']['answerable']:.3f}, out-of-corpus {report['kept']['out_of_corpus']:.3f}\n"
    )
    print(
        "| target (synthetic) | threshold | real abstain: answerable | out-of-corpus |\n| ---: | ---: | ---: | ---: |"
    )
    for target in TARGETS:
        cut = synthetic_threshold(synthetic, gate, target)
        rates = abstain_rates(scores, data, cut)
        report["targets"][target] = {"threshold": cut, **rates}
        print(f"| {target:.2f} | {cut:.3f} | {rates['answerable']:.3f} | {rates['out_of_corpus']:.3f} |")
    weight = report["kept"]["blend"]
    print(
        "\n| passages | threshold | real abstain: answerable | out-of-corpus | draws meeting 5% / 90% | "
        "kept (blended): threshold | draws meeting |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in [n for n in SUBSETS if n < len(synthetic)] + [len(synthetic)]:
        draws = [random.Random(d).sample(synthetic, size) for d in range(100)] if size < len(synthetic) else [synthetic]
        cuts = [synthetic_threshold(rows, gate, 0.05) for rows in draws]
        rates = [abstain_rates(scores, data, cut) for cut in cuts]
        answerable = np.array([r["answerable"] for r in rates])
        outside = np.array([r["out_of_corpus"] for r in rates])
        met = float(np.mean((answerable <= 0.05) & (outside >= 0.90)))
        kept_cuts = [blended(gate.threshold, cut, weight) for cut in cuts]
        kept_rates = [abstain_rates(scores, data, cut) for cut in kept_cuts]
        kept_met = float(np.mean([r["answerable"] <= 0.05 and r["out_of_corpus"] >= 0.90 for r in kept_rates]))
        report["curve"][size] = {
            "threshold": [float(np.mean(cuts)), float(np.std(cuts))],
            "answerable": [float(answerable.mean()), float(answerable.std())],
            "out_of_corpus": [float(outside.mean()), float(outside.std())],
            "met": met,
            "kept_threshold": [float(np.mean(kept_cuts)), float(np.std(kept_cuts))],
            "kept_met": kept_met,
        }
        print(
            f"| {size} | {np.mean(cuts):.3f} ± {np.std(cuts):.3f} | {answerable.mean():.3f} ± {answerable.std():.3f} "
            f"| {outside.mean():.3f} ± {outside.std():.3f} | {met:.2f} | {np.mean(kept_cuts):.3f} ± "
            f"{np.std(kept_cuts):.3f} | {kept_met:.2f} |"
        )
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
