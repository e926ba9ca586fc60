"""Paired comparison of two systems' answer recall on the same questions (McNemar's test).

    python benchmarks/paired_recall.py ../shared/data/squad-dev --store $S --sample 1000 --seed 0 \
        --systems quorum,qdrant-hybrid

Prints how many questions only one of the two gets right, and the exact McNemar p-value
(a binomial test on those questions), which is what tells a real margin from noise on the same
question set.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.eval import Evaluation, load_dataset
from qrag_qdrant.eval.metrics import first_answer_rank, paired_test


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
    paired = paired_test([(float(a), float(b)) for a, b in zip(right[first], right[second])], exact_mcnemar=True)
    print(f"{first}: {sum(right[first])}/{len(right[first])} right, {second}: {sum(right[second])}/{len(right[second])}")
    print(f"only {first}: {paired['wins']}, only {second}: {paired['losses']}, exact McNemar p "
          f"{paired['p_value'] if paired['p_value'] is not None else 1.0:.4f}")


if __name__ == "__main__":
    main()
