"""`qrag-qdrant eval` with the way the model reads the passages changed, to measure it before it
becomes an option (docs/benchmarks.md, "Reading a spread context"). The arguments after the
variant are eval's own:

    python benchmarks/spread_context_variants.py per-passage ../shared/data/squad-dev --store $S \\
        --articles tune --sample 150 --seed 22 --systems quorum --generate 150 --answers-out pp-s22.jsonl

- ``per-passage``: each passage is read alone (as a one-cluster context), and the answer the
  model wrote surest (geometric-mean token probability) among those that do not decline is kept;
  the token counts are the reads' sums.
- ``best-last``: the passages in reverse rank order, the best one next to the question (the
  worked examples too); the numbers stay the passages' own.
- ``question-first``: the question before the passages as well as after them (the worked
  examples too), so that the model reads the passages knowing what is asked.
"""

from __future__ import annotations

import sys

from qrag_qdrant.cli.app import main
from qrag_qdrant.eval import answering
from qrag_qdrant.generation import answer, prompt
from qrag_qdrant.results import Answer

answer_together, user_turn = answer.answer_from, prompt.user_turn
SUMMED = ("prompt_tokens", "cached_tokens", "completion_tokens", "completion_seconds")


def per_passage(evidence, backend, settings, on_token=None, cancelled=None):
    if evidence.abstained or len(evidence.passages) < 2:
        return answer_together(evidence, backend, settings, on_token, cancelled)
    reads = []
    for passage in evidence.passages:
        read = Answer.from_evidence(evidence)
        answer.generate_answer(read, [passage], backend, settings, None, cancelled)
        reads.append(read)
    answered = [r for r in reads if r.error is None and not r.abstained]
    kept = max(answered, key=lambda r: r.answer_probability or 0.0) if answered else reads[0]
    if usages := [r.usage for r in reads if r.usage is not None]:
        kept.usage = usages[0].model_copy(update={k: sum(getattr(u, k) for u in usages) for k in SUMMED})
    kept.decline_probability = min(r.decline_probability or 0.0 for r in reads)
    return kept


def best_last(question, passages):
    return user_turn(question, passages[::-1])


def question_first(question, passages):
    return f"Question: {question}\n\n{user_turn(question, passages)}"


VARIANTS = {"best-last": best_last, "question-first": question_first}

if __name__ == "__main__":
    variant = sys.argv.pop(1)
    if variant == "per-passage":
        answer.answer_from = answering.answer_from = per_passage
    elif variant in VARIANTS:
        prompt.user_turn = VARIANTS[variant]
    else:
        sys.exit(f"unknown variant {variant!r}: per-passage, {', '.join(VARIANTS)}")
    sys.argv.insert(1, "eval")
    main()
