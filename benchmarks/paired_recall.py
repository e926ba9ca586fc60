"""Paired comparison of two systems' answer recall on the same questions (McNemar's test).

    python benchmarks/paired_recall.py ../shared/data/squad-dev --store $S --sample 1000 --seed 0 \
        --systems quorum,qdrant-hybrid

Prints how many questions only one of the two gets right, and the continuity-corrected
McNemar p-value, which is what tells a real margin from noise on the same question set.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.eval import Evaluation, load_dataset
from qrag_qdrant.eval.metrics import first_answer_rank


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--store", type=Path, default=Path(".qrag"))
    parser.add_argument("--config", type=Path)
    parser.add_argument("--sample", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--systems", default="quorum,qdrant-hybrid")
    args = parser.parse_args()

    first, second = args.systems.split(",")
    dataset = load_dataset(args.dataset, sample=args.sample, seed=args.seed)
    with QuorumRAG.from_config(args.config, store=args.store, namespace=dataset.namespace) as rag:
        evaluation = Evaluation(rag, dataset, [first, second])
        right: dict[str, list[bool]] = {first: [], second: []}
        for question in dataset.questions:
            if not question.answerable:
                continue
            search = evaluation.search_question(question)
            for name in right:
                right[name].append(first_answer_rank(evaluation.answer(name, search), question.answers) is not None)
    only_first = sum(a and not b for a, b in zip(right[first], right[second]))
    only_second = sum(b and not a for a, b in zip(right[first], right[second]))
    discordant = only_first + only_second
    chi2 = max(abs(only_first - only_second) - 1, 0) ** 2 / discordant if discordant else 0.0
    print(f"{first}: {sum(right[first])}/{len(right[first])} right, {second}: {sum(right[second])}/{len(right[second])}")
    print(f"only {first}: {only_first}, only {second}: {only_second}, McNemar chi2 {chi2:.2f}, "
          f"p {math.erfc(math.sqrt(chi2 / 2)):.4f}")


if __name__ == "__main__":
    main()
