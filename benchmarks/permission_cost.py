"""What a permission filter costs a query: evidence-only retrieval with and without the caller's
filter, same run, on a namespace where a share of the documents is restricted.

    python benchmarks/permission_cost.py --store /tmp/bench/store --namespace eval-scifact \
        --questions ../shared/data/scifact/queries.jsonl --restrict 0.1 --json-out permission-cost.json

The store is copied first (the original is not changed); in the copy every tenth document (by
sorted source, ``--restrict``) gets the readers ``hr`` or, every other one, ``legal``, through
``Documents.set_readers`` as the CLI and the service set them. Then each question is retrieved
four ways, in rotating order so all see the same machine load:
- ``all``: a caller who reads every document (no filter: the CLI, a ``*`` key);
- ``everyone``: a caller of no group (filter: documents with no readers);
- ``hr``: a caller of ``hr`` (filter: no readers, or ``hr``);
- ``hr+legal``: a caller of both, who may read every document (no filter, as its groups cover
  every group named; each hit is still checked).
Each caller's first question counts its view (points and term counts) once; the view is cached
after, as in the service, and that first question is reported apart. Prints the p50 and p95 of
each, the ratios to ``all``, and whether ``hr+legal`` found exactly the evidence ``all`` did.

Then what a caller of no group can learn: the restricted documents are removed from the copy,
and each question retrieved again (by the operator, who now reads exactly what that caller did).
Where the two differ, the restricted documents changed what the caller saw: Qdrant's BM25 IDF is
counted over the whole collection, restricted chunks included (docs/teams.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from qrag_qdrant import QuorumRAG
from qrag_qdrant.cli.threads import one_blas_thread
from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.results import Evidence
from qrag_qdrant.store.access import Access

CALLERS = {"all": None, "everyone": [], "hr": ["hr"], "hr+legal": ["hr", "legal"]}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--restrict", type=float, default=0.1, help="share of documents hr or legal may read")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    one_blas_thread()
    questions = [json.loads(line)["question"] for line in args.questions.read_text().splitlines()][: args.n]
    with tempfile.TemporaryDirectory(prefix="qrag-permissions-") as scratch:
        store = Path(scratch) / "store"
        shutil.copytree(args.store, store)
        with QuorumRAG(load_settings(store=store, namespace=args.namespace)) as rag:
            result = measure(rag, questions, args.restrict)
    result["command"] = "python benchmarks/permission_cost.py " + " ".join(
        f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items() if v is not None
    )
    print(json.dumps(result, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=2) + "\n")


def measure(rag: QuorumRAG, questions: list[str], restrict: float) -> dict[str, object]:
    documents = rag.documents()
    sources = [d.source for d in documents.page(0, 1000).documents]
    total = documents.page(0, 1).total
    offset = len(sources)
    while offset < total:
        sources += [d.source for d in documents.page(offset, 1000).documents]
        offset += 1000
    step = round(1 / restrict)
    restricted = sources[::step]
    started = time.perf_counter()
    for n, source in enumerate(restricted):
        documents.set_readers(source, ["hr" if n % 2 == 0 else "legal"])
    setting_s = time.perf_counter() - started
    rag.warm()
    points = rag.coordinator.searcher.points
    hidden = {name: points[name] - count for name, count in rag.coordinator.views.counts_for(Access.of([]))[0].items()}
    seconds: dict[str, list[float]] = {caller: [] for caller in CALLERS}
    first: dict[str, float] = {}
    same_evidence = 0
    seen = []
    for n, question in enumerate(questions):
        order = list(CALLERS)[n % len(CALLERS) :] + list(CALLERS)[: n % len(CALLERS)]
        found = {}
        for caller in order:
            began = time.perf_counter()
            evidence = rag.retrieve(question, readers=CALLERS[caller])
            spent = time.perf_counter() - began
            if caller not in first:
                first[caller] = spent
            else:
                seconds[caller].append(spent)
            found[caller] = [[(p.source, p.text) for p in c.passages] for c in evidence.clusters]
        same_evidence += found["hr+legal"] == found["all"]
        seen.append(rag.retrieve(question, readers=[]))
    base = statistics.median(seconds["all"])
    started = time.perf_counter()
    for source in restricted:
        documents.remove(source)
    removing_s = time.perf_counter() - started
    clean = [rag.retrieve(question) for question in questions]
    return {
        "documents": total,
        "restricted_documents": len(restricted),
        "points": points,
        "restricted_points": hidden,
        "set_readers_seconds": round(setting_s, 2),
        "questions": len(questions),
        "first_question_ms": {caller: round(s * 1000, 1) for caller, s in first.items()},
        "p50_ms": {caller: round(statistics.median(s) * 1000, 2) for caller, s in seconds.items()},
        "p95_ms": {caller: round(percentile(s, 0.95) * 1000, 2) for caller, s in seconds.items()},
        "p50_ratio_to_all": {caller: round(statistics.median(s) / base, 3) for caller, s in seconds.items()},
        "hr_legal_same_evidence_as_all": f"{same_evidence}/{len(questions)}",
        "no_group_against_a_namespace_without_the_restricted_documents": leakage(seen, clean),
        "removing_seconds": round(removing_s, 2),
    }


def leakage(seen: list[Evidence], clean: list[Evidence]) -> dict[str, object]:
    """How the evidence a caller of no group got differs from a namespace that never held the
    restricted documents: the statistics that could tell it something of them."""

    def passages(evidence: Evidence) -> list[str]:
        return [p.text for c in evidence.clusters for p in c.passages]

    gaps = [abs(a.confidence - b.confidence) for a, b in zip(seen, clean)]
    same = sum(a.key_terms == b.key_terms and a.unseen_terms == b.unseen_terms for a, b in zip(seen, clean))
    return {
        "same_passages": f"{sum(passages(a) == passages(b) for a, b in zip(seen, clean))}/{len(seen)}",
        "same_decision": f"{sum(a.abstained == b.abstained for a, b in zip(seen, clean))}/{len(seen)}",
        "same_key_and_unseen_terms": f"{same}/{len(seen)}",
        "confidence_gap_median": round(statistics.median(gaps), 4),
        "confidence_gap_max": round(max(gaps), 4),
    }


if __name__ == "__main__":
    main()
