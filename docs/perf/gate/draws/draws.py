"""gate calibrate on three independent draws of 200 passages per index (seeds 0, 1, 2: other
passages and other held-out documents; the questions by the packaged 1.5B, cached), each alone
and the three pooled (600 questions), with the shipped v2's weights; each kept threshold applied
to the index's real rows. Then the blend weight derived again from the pooled cuts, leave one
index out, as benchmarks/gate_blend.py derives it. ROWS/: rows-<index>.jsonl (eval --rows-out;
sci: rows-sci-a and rows-sci-b) and syn-<index>-s<seed>.jsonl (synthetic_rows.py with --seed)."""
import json
import sys
from pathlib import Path

sys.path.insert(0, 'benchmarks')
from gate_blend import inverse_mse_weight  # noqa: E402
from gate_cross_corpus import read_index  # noqa: E402

from qrag_qdrant.calibration import blended  # noqa: E402
from qrag_qdrant.coordinator.gate import DEFAULT_MODEL, GateModel, logit  # noqa: E402
from qrag_qdrant.eval.gate_training import (  # noqa: E402
    SystemRows,
    abstain_rates,
    gate_confidences,
    pick_threshold,
)

R = Path('ROWS')
model = GateModel.load(DEFAULT_MODEL)
gate, w = model.systems['quorum'], model.info['calibration_blend']['model']
REAL = {'sq48': ['rows-sq48.jsonl'], 'sq2': ['rows-sq2.jsonl'], 'sci': ['rows-sci-a.jsonl', 'rows-sci-b.jsonl']}


def rows_of(files):
    """The index's quorum rows, a question asked in two files once (gate_cross_corpus's reader)."""
    return SystemRows.of(read_index('real:index=' + ','.join(str(R / f) for f in files), {})[2])


def cut_of(rows):
    data = SystemRows.of(rows)
    return pick_threshold(gate_confidences(gate, data), data, 0.05)


print(f'shipped threshold {gate.threshold}, blend weight {w}')
print('| index | draw | passages | synthetic 5% cut (real 5% cut) | real abstain at the synthetic cut: answerable / out of corpus '
      '| kept (blend) | real abstain at the kept cut: answerable / out of corpus | 90% / 5% |')
print('| --- | --- | ---: | --- | --- | ---: | --- | --- |')
pooled = {}
for index, files in REAL.items():
    real = rows_of(files)
    scores = gate_confidences(gate, real)
    true = pick_threshold(scores, real, 0.05)
    syn = {s: [json.loads(line) for line in open(R / f'syn-{index}-s{s}.jsonl')] for s in (0, 1, 2)}
    draws = [*((f'seed {s}', r) for s, r in syn.items()), ('seeds 0-2 pooled', [r for v in syn.values() for r in v])]
    for label, rows in draws:
        cut = cut_of(rows)
        kept = blended(gate.threshold, cut, w)
        a, b = abstain_rates(scores, real, cut), abstain_rates(scores, real, kept)
        met = 'met' if b['answerable'] <= 0.05 and b['out_of_corpus'] >= 0.90 else 'no'
        print(f'| {index} | {label} | {len(rows)} | {cut:.3f} ({true:.3f}) | {a["answerable"]:.3f} / {a["out_of_corpus"]:.3f} '
              f'| {kept:.3f} | {b["answerable"]:.3f} / {b["out_of_corpus"]:.3f} | {met} |')
    pooled[index] = (real, scores, logit(true), cut)

print('\nthe blend weight from the pooled cuts, each index from the other two:')
for index, (real, scores, _, cut) in pooled.items():
    weight = inverse_mse_weight([v for k, v in pooled.items() if k != index], logit(gate.threshold))
    kept = blended(gate.threshold, cut, weight)
    b = abstain_rates(scores, real, kept)
    print(f'  {index}: weight {weight:.2f}, kept {kept:.3f}: answerable {b["answerable"]:.3f}, out of corpus {b["out_of_corpus"]:.3f}')
print(f'  from all three: {inverse_mse_weight(list(pooled.values()), logit(gate.threshold)):.2f}')
