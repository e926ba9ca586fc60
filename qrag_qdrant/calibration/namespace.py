"""Calibrate the evidence gate on a namespace's own corpus, with no labels (``gate calibrate``).

A gate fitted once, on one corpus, cannot know where a team's evidence is weak. So: draw
passages from the namespace, write a question each one answers (the generation backend, or
without one a query made from one of the passage's own sentences), and hold a share of the
documents out of the index (``retrieval.exclude_sources``: no search returns them and the
term counts leave them out), so their questions are out-of-corpus. Each question goes through
the same retrieval users get. A question's context "holds the answer" when it cites the span
its passage came from. The threshold (and optionally the weights) is then chosen as ``gate
train`` chooses it, moved only part of the way from the shipped one (``blended``), and stored
with the namespace's collections, where the coordinator finds it.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from ..config.settings import Settings
from ..errors import QragError
from ..generation.base import Completer
from ..results import Evidence
from ..retrieval import Coordinator
from ..retrieval.gate import GateModel, LogisticGate, logit, sigmoid
from ..store import Store
from ..store.base import CALIBRATED_GATE
from ..text.json_lines import json_lines
from ..text.sentences import sentences
from .fitting import (
    SystemRows,
    abstain_rates,
    gate_confidences,
    pick_threshold,
    risk_curve,
)
from .splits import held_out_docs

QUESTION_SYSTEM = "You write one question for a reading test."
QUESTION_PROMPT = (
    "Passage:\n{passage}\n\nWrite one short question that this passage answers, about a specific "
    "fact in it. Reply with the question only."
)
#: what the questions were written with, in their cache key: a new prompt writes them again
PROMPT_VERSION = hashlib.sha256((QUESTION_SYSTEM + QUESTION_PROMPT).encode()).hexdigest()[:8]
#: the words a question made from a sentence keeps
SENTENCE_QUERY_WORDS = 12
MIN_PASSAGE_WORDS = 20
COVERAGES = (1.0, 0.98, 0.95, 0.9, 0.8, 0.7, 0.5)


@dataclass(frozen=True)
class Probe:
    """One calibration question and the passage it was written from."""

    question: str
    source: str
    start: int
    end: int
    held_out: bool


@dataclass
class CalibrationResult:
    gate: GateModel
    #: per question, as ``gate train`` reads rows: its gate features, label ("the context cites the
    #: passage it was written from") and category (answerable, or out_of_corpus when held out)
    rows: list[dict[str, Any]] = field(default_factory=list)
    risk_coverage: list[dict[str, float | None]] = field(default_factory=list)
    #: area under the risk-coverage curve of the calibrated gate on these questions (lower is better)
    aurc: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {
            "calibration": self.gate.info["calibrated_on"],
            "threshold": self.gate.systems["quorum"].threshold,
            "aurc": self.aurc,
            "abstain_rate": self.gate.info["calibrated_on"]["abstain_rate"],
            "risk_coverage": self.risk_coverage,
        }


class QuestionCache:
    """What the model wrote per passage, so a rerun costs nothing: a JSON Lines file."""

    def __init__(self, path: Path):
        self.path = path
        self.known: dict[str, str] = {}
        if path.is_file():
            for _, row in json_lines(path, skip_invalid=True):  # a torn last line after a crash is passed over
                if isinstance(row.get("key"), str) and isinstance(row.get("question"), str):
                    self.known[row["key"]] = row["question"]

    @staticmethod
    def key(writer: str, passage: str) -> str:
        return hashlib.sha256(f"{writer}\x1f{passage}".encode()).hexdigest()

    def get(self, writer: str, passage: str, write: Callable[[str], str]) -> str:
        key = self.key(writer, passage)
        if key not in self.known:
            self.known[key] = write(passage)
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as file:
                file.write(json.dumps({"key": key, "question": self.known[key]}) + "\n")
        return self.known[key]


def sentence_question(passage: str, seed: int) -> str:
    """A query from the passage's own words: a stretch of its longest sentence, with no model."""
    sentence = max(sentences(passage), key=lambda s: len(s.split()), default=passage)
    words = sentence.split()
    start = random.Random(f"{seed}:{passage}").randrange(max(len(words) - SENTENCE_QUERY_WORDS, 0) + 1)
    return " ".join(words[start : start + SENTENCE_QUERY_WORDS])


def model_question(completer: Completer, passage: str) -> str:
    reply = completer.complete(QUESTION_SYSTEM, QUESTION_PROMPT.format(passage=passage), 48, threading.Event())
    line = next((line.strip() for line in reply.splitlines() if line.strip()), "")
    return re.sub(r"^(?:question\s*:\s*|\d+[.)]\s*)", "", line, flags=re.IGNORECASE).strip().strip('"')


def question_writer(
    settings: Settings, generator: Callable[[], object], kind: str, seed: int, cache: QuestionCache
) -> tuple[str, Callable[[str], str]]:
    """Who writes the questions, and how: the generation backend (``model``; ``auto`` when one
    opens and can complete a prompt, its questions cached), else the passages' own sentences."""
    if kind != "sentences":
        try:
            backend = generator()
        except QragError:
            if kind == "model":
                raise
            backend = None
        if isinstance(backend, Completer):
            name = (
                f"model:{settings.generation.backend}:{settings.llm.gguf or 'packaged'}:{settings.ollama.model}"
                f":prompt-{PROMPT_VERSION}"
            )
            return name, lambda passage: cache.get(name, passage, lambda text: model_question(backend, text))
        if kind == "model":
            raise QragError("the generation backend cannot complete a prompt: use --questions sentences")
    return "sentences", lambda passage: sentence_question(passage, seed)


def draw_probes(
    store: Store, collection: str, passages: int, hold_out: float, seed: int, write: Callable[[str], str]
) -> tuple[list[Probe], frozenset[str]]:
    """``passages`` passages drawn from ``collection``, a question for each, and the held-out sources."""
    stored = [
        p
        for p in store.scroll_payloads(collection, ["source", "text", "start", "end"])
        if len(str(p.get("text", "")).split()) >= MIN_PASSAGE_WORDS
    ]
    sources = sorted({p["source"] for p in stored})
    if len(sources) < 2:
        raise QragError("gate calibrate needs at least two documents of 20 words or more in the namespace")
    held = held_out_docs(sources, hold_out, seed, salt="calibrate:") or frozenset(sources[-1:])
    if len(held) == len(sources):
        held = frozenset(sorted(held)[1:])
    drawn = random.Random(seed).sample(stored, min(passages, len(stored)))
    probes = [
        Probe(question, p["source"], p["start"], p["end"], p["source"] in held)
        for p in drawn
        if (question := write(p["text"]))
    ]
    return probes, held


def holds_passage(evidence: Evidence, probe: Probe) -> bool:
    """The context cites the span the question was written from."""
    return any(
        p.source == probe.source and p.start < probe.end and probe.start < p.end
        for cluster in evidence.clusters
        for p in cluster.passages
    )


def probe_row(evidence: Evidence, probe: Probe, advance: Callable[[], None]) -> dict[str, Any]:
    """A ``gate train`` row of one calibration question: answerable when its document is indexed
    and the evidence holds its passage."""
    advance()
    return {
        "id": probe.question,
        "group": probe.source,
        "system": "quorum",
        "features": evidence.gate_features or {},
        "category": "out_of_corpus" if probe.held_out else "answerable",
        "label": not probe.held_out and holds_passage(evidence, probe),
    }


def calibrate(
    settings: Settings,
    store: Store,
    coordinator_for: Callable[[Settings], Coordinator],
    write: Callable[[str], str],
    writer_name: str,
    passages: int = 600,
    hold_out: float = 0.25,
    seed: int = 0,
    target_abstain: float = 0.05,
    advance: Callable[[], None] = lambda: None,
    blend: float | None = None,
) -> CalibrationResult:
    """Fit the namespace's gate; ``coordinator_for`` opens the pipeline with given settings.
    ``blend``: how far the threshold moves from the shipped one toward the synthetic questions'
    (1: all the way); None: the base gate's measured weight for this writer (``blend_weight``)."""
    base = GateModel.load(settings.retrieval.gate_model)
    if "quorum" not in base.systems:
        raise QragError("the base gate model has no quorum system to calibrate")
    probing = coordinator_for(settings)
    try:
        probes, held = draw_probes(store, probing.views.finest, passages, hold_out, seed, write)
    finally:
        probing.close()
    excluded = settings.model_copy(
        update={
            "retrieval": settings.retrieval.model_copy(
                update={"exclude_sources": tuple(sorted(held)), "min_confidence": 0.0}
            )
        }
    )
    coordinator = coordinator_for(excluded)
    try:
        rows = [probe_row(coordinator.retrieve(probe.question), probe, advance) for probe in probes]
    finally:
        coordinator.close()
    data = SystemRows.of(rows)
    shipped = base.systems["quorum"]
    fitted = _fitted(shipped, data, target_abstain)
    weight = blend_weight(base, writer_name) if blend is None else blend
    gate = replace(fitted, threshold=blended(shipped.threshold, fitted.threshold, weight))
    info = {
        **base.info,
        "calibrated_on": {
            "namespace": settings.namespace,
            "date": date.today().isoformat(),
            "questions": writer_name,
            "passages": len(probes),
            "held_out_documents": len(held),
            "hold_out": hold_out,
            "seed": seed,
            "target_answerable_abstain": target_abstain,
            "weights": "shipped",
            "synthetic_threshold": fitted.threshold,
            "shipped_threshold": shipped.threshold,
            "blend": weight,
        },
    }
    scores = gate_confidences(gate, data)
    info["calibrated_on"]["abstain_rate"] = abstain_rates(scores, data, gate.threshold)
    return CalibrationResult(
        GateModel({**base.systems, "quorum": gate}, info),
        rows,
        risk_table(gate, data),
        round(float(risk_curve(data.y, scores, data.gated).mean()), 4),
    )


def blend_weight(base: GateModel, writer_name: str) -> float:
    """The base gate's weight for questions by this writer (``model:...`` or ``sentences``): measured
    across corpora by ``benchmarks/gate_blend.py``; 1 where the gate file gives none."""
    return float(base.info.get("calibration_blend", {}).get(writer_name.split(":", 1)[0], 1.0))


def blended(shipped: float, calibrated: float, weight: float) -> float:
    """The threshold ``weight`` of the way from ``shipped`` to ``calibrated``, in logits. Both are
    estimates of the corpus's true cut: the shipped one fitted on other corpora, the calibrated one
    on questions easier (squad) or vaguer (SciFact) than real ones."""
    if weight in (0.0, 1.0):
        return calibrated if weight else shipped
    return round(sigmoid((1 - weight) * logit(shipped) + weight * logit(calibrated)), 4)


def _fitted(gate: LogisticGate, rows: SystemRows, target_abstain: float) -> LogisticGate:
    """The shipped weights with the threshold these rows give (refitting the weights on a few hundred
    synthetic questions measured worse than the shipped weights: docs/design.md)."""
    if not (rows.categories == "answerable").any():
        raise QragError("no calibration question came from an indexed document: use more --passages")
    return replace(gate, threshold=round(pick_threshold(gate_confidences(gate, rows), rows, target_abstain), 4))


def risk_table(gate: LogisticGate, rows: SystemRows) -> list[dict[str, float | None]]:
    """At each target share of answerable questions kept: the cut, both abstain rates, and the
    error rate among the answered (answered without the passage, or out of corpus)."""
    scores = gate_confidences(gate, rows)
    table = []
    for coverage in COVERAGES:
        cut = pick_threshold(scores, rows, 1 - coverage) if coverage < 1 else 0.0
        rates = abstain_rates(scores, rows, cut)
        answered = rows.gated & (scores >= cut)
        table.append(
            {
                "target_answerable_kept": coverage,
                "threshold": round(cut, 4),
                "abstain_answerable": rates["answerable"],
                "abstain_out_of_corpus": rates["out_of_corpus"],
                "error_answered": float(1 - rows.y[answered].mean()) if answered.any() else 0.0,
            }
        )
    return table


def save(store: Store, collections: Sequence[str], gate: GateModel | None) -> None:
    """Keep the calibrated gate with every collection of the namespace (None removes it)."""
    for name in collections:
        store.attach(name, CALIBRATED_GATE, gate.dumps().encode() if gate is not None else None)
