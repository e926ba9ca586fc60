"""Paired comparison on the same questions: two systems in one store, or each system in two stores.

    python benchmarks/paired_recall.py ../shared/data/squad-dev --store $S --sample 1000 --seed 0 \
        --systems quorum,qdrant-hybrid
    python benchmarks/paired_recall.py ../shared/data/scifact --store $ANCHORED --against-store $CHUNK \
        --systems quorum,qdrant-hybrid

The first compares the two systems; with ``--against-store`` each system is compared with
itself on another store of the same data set (e.g. built with another ``embedding.pooling``),
and with ``--against-config`` under another config (e.g. another ``retrieval.top_k``).
QA sets: answer recall, with the exact McNemar p-value (a binomial test on the questions only one
side gets right), and MRR, and for questions that name their gold documents (MultiHop-RAG's) the
context's coverage of them and all of them in it; relevance sets: nDCG@10 per query, with a
Wilcoxon signed-rank test.
That is what tells a real margin from noise on the same question set.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.eval import Dataset, Evaluation, load_dataset
from qrag_qdrant.eval.metrics import SystemAnswer, paired_comparison


def answers_in(store: Path, config: Path | None, dataset: Dataset, systems: list[str]) -> dict[str, list[SystemAnswer]]:
    """Each system's answer to every question of ``dataset``, from ``store``."""
    with QuorumRAG.from_config(config, store=store, namespace=dataset.namespace) as rag:
        evaluation = Evaluation(rag, dataset, systems)
        answers: dict[str, list[SystemAnswer]] = {name: [] for name in systems}
        for question in dataset.questions:
            search = evaluation.search_question(question)
            for name in systems:
                answers[name].append(evaluation.answer(name, search))
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--store", type=Path, default=Path(".qrag"))
    parser.add_argument("--against-store", type=Path, help="compare each system with itself on this store")
    parser.add_argument("--config", type=Path)
    parser.add_argument("--against-config", type=Path, help="compare each system with itself under this config")
    parser.add_argument("--sample", type=int)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--systems", default="quorum,qdrant-hybrid")
    args = parser.parse_args()

    systems = args.systems.split(",")
    dataset = load_dataset(args.dataset, sample=args.sample, seed=args.seed)
    first = answers_in(args.store, args.config, dataset, systems)
    if args.against_store or args.against_config:
        store, config = args.against_store or args.store, args.against_config or args.config
        second = answers_in(store, config, dataset, systems)
        pairs = {
            f"{name}: {args.store} {args.config} against {store} {config}": (first[name], second[name])
            for name in systems
        }
    else:
        if len(systems) != 2:
            raise SystemExit("--systems: name two systems, or give --against-store")
        pairs = {f"{systems[0]} against {systems[1]}": (first[systems[0]], first[systems[1]])}
    result = {label: paired_comparison(dataset.questions, a, b, dataset.kind) for label, (a, b) in pairs.items()}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
