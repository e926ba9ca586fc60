"""Evaluation on conversations (``conversations.jsonl``: MTRAG, INSCIT): each turn is searched
after its history, per variant, through the path users get (``QuorumRAG.asked`` and
``retrieve``), and first turns and follow-ups are reported apart.

Variants: ``last`` (the question alone), ``rewrite`` (``retrieval.conversation.mode = rewrite``) and
``human`` (the data set's own stand-alone rewrite, searched with no history: the ceiling).
A turn's history is the conversation's earlier questions and reference answers, as a chat
client would send them. Conversations are split by id: ``tune`` is the fixed quarter used to
choose settings, and results are reported per split.
"""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api import QuorumRAG
from ..calibration.splits import held_out_docs
from ..results import Answer, Evidence
from ..retrieval import Coordinator
from ..retrieval.conversation import Turn, dropped_words
from ..text.json_lines import BadLine, json_lines
from .dataset import TUNING_SHARE, DatasetError
from .metrics import paired_test, percentile, token_f1

if TYPE_CHECKING:
    from rich.table import Table

VARIANTS = ("last", "rewrite", "human")
CITATION = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
#: turns a data set marks as having no answer in its corpus
UNANSWERABLE = frozenset({"UNANSWERABLE", "noAnswerNoRelevantInfo"})


@dataclass(frozen=True)
class ConversationTurn:
    conversation: str
    turn: int
    question: str
    answer: str
    #: the data set's human stand-alone rewrite, where it has one
    rewrite: str | None
    #: the passages that answer it (every annotation's, for INSCIT)
    gold: frozenset[str]
    unanswerable: bool
    history: tuple[Turn, ...]
    split: str
    #: the data set's agent asked the user a clarifying question here (INSCIT's ``clarification``)
    agent_asked: bool = False

    @property
    def id(self) -> str:
        return f"{self.conversation}:{self.turn}"

    @property
    def follow_up(self) -> bool:
        return bool(self.history)

    @property
    def answerable(self) -> bool:
        return bool(self.gold) and not self.unanswerable


def load_conversations(root: Path, sample: int | None = None, seed: int = 0) -> list[ConversationTurn]:
    """Every turn of ``root/conversations.jsonl`` with its history; ``sample`` conversations
    drawn with ``random.Random(seed)``."""
    path = root / "conversations.jsonl"
    if not path.is_file():
        raise DatasetError(f"{root} has no conversations.jsonl")
    try:
        conversations = [row for _, row in json_lines(path)]
    except BadLine as exc:
        raise DatasetError(str(exc)) from None
    tuning = held_out_docs([c["id"] for c in conversations], TUNING_SHARE, 0, salt="tuning:")
    if sample is not None and sample < len(conversations):
        conversations = random.Random(seed).sample(conversations, sample)
    turns = []
    for conversation in conversations:
        history: list[Turn] = []
        for item in conversation["turns"]:
            gold = set(item.get("evidence_docs") or ())
            for label in item.get("all_labels") or ():
                gold |= set(label.get("evidence_docs") or ())
            marked = item.get("answerability") or item.get("response_type")
            turns.append(
                ConversationTurn(
                    conversation["id"],
                    item["turn"],
                    item["question"],
                    item.get("answer") or "",
                    item.get("rewrite"),
                    frozenset(gold),
                    marked in UNANSWERABLE,
                    tuple(history),
                    "tune" if conversation["id"] in tuning else "test",
                    marked == "clarification",
                )
            )
            history += [Turn("user", item["question"]), Turn("assistant", item.get("answer") or "")]
    return turns


@dataclass
class TurnResult:
    id: str
    variant: str
    split: str
    follow_up: bool
    answerable: bool
    unanswerable: bool
    searched_for: str
    how: str
    gold_any: bool
    gold_top: bool
    abstained: bool
    #: the rewrite's seconds (0 without a model call)
    seconds: float
    #: we asked the user which reading they meant
    asked_back: bool = False
    #: the data set's agent asked the user here
    agent_asked: bool = False
    #: content words of the typed question the searched question lacks
    dropped: tuple[str, ...] = ()
    answer: str | None = None
    f1: float | None = None
    supported: bool | None = None


def searched(pipeline: Coordinator, variant: str, turn: ConversationTurn) -> Evidence:
    """The turn's evidence as ``QuorumRAG.retrieve`` finds it after the history (``human``: the
    data set's rewrite, with no history)."""
    if variant == "human":
        return pipeline.retrieve(pipeline.conversation.asked(turn.rewrite or turn.question))
    return pipeline.retrieve(pipeline.conversation.asked(turn.question, turn.history))


def turn_result(variant: str, turn: ConversationTurn, evidence: Evidence) -> TurnResult:
    sources = [{p.source for p in cluster.passages} for cluster in evidence.clusters]
    step = evidence.conversation
    return TurnResult(
        turn.id,
        variant,
        turn.split,
        turn.follow_up,
        turn.answerable,
        turn.unanswerable,
        evidence.searched,
        "human" if variant == "human" or step is None else step.how,
        any(s & turn.gold for s in sources),
        bool(sources) and bool(sources[0] & turn.gold),
        evidence.abstained,
        evidence.timings_ms.get("conversation", 0.0) / 1000,
        evidence.clarification is not None,
        turn.agent_asked,
        tuple(dropped_words(evidence.searched, turn.question)) if variant != "human" else (),
    )


def run_variant(
    rag: QuorumRAG,
    pipeline: Coordinator,
    variant: str,
    turns: Sequence[ConversationTurn],
    answered: frozenset[str],
    scored: dict[tuple[Any, ...], tuple[str | None, float, bool]],
    advance: Callable[[], None],
    on_result: Callable[[TurnResult], None] | None = None,
) -> list[TurnResult]:
    """Each turn searched as ``variant`` (and the turns ``answered`` names, answered); ``rag``
    is answered from, ``pipeline`` configured with the variant's ``retrieval.conversation.mode``.
    ``scored``: answers already scored, by what the model was sent (the searched question and the
    passages): a greedy model writes the same answer to the same prompt, so a variant that searched
    a turn as another did reuses its answer instead of asking again."""
    results = []
    for turn in turns:
        evidence = searched(pipeline, variant, turn)
        result = turn_result(variant, turn, evidence)
        if turn.id in answered:
            sent = (turn.id, evidence.searched, tuple((p.source, p.start, p.end) for p in evidence.passages))
            if sent not in scored:
                scored[sent] = scored_answer(rag.answer(evidence.question, evidence=evidence), turn)
            result.answer, result.f1, result.supported = scored[sent]
        results.append(result)
        if on_result is not None:
            on_result(result)
        advance()
    return results


def scored_answer(answer: Answer, turn: ConversationTurn) -> tuple[str | None, float, bool]:
    """The answer, its token F1 against the reference (0 for an abstention) and whether it is
    shown as supported."""
    if answer.abstained or not answer.answer:
        return answer.answer, 0.0, False
    supported = bool(answer.claims) and all(c.supported for c in answer.claims)
    return answer.answer, token_f1(CITATION.sub("", answer.answer), [turn.answer]), supported


def share(rows: Sequence[TurnResult], value: Callable[[TurnResult], bool]) -> float | None:
    return round(sum(map(value, rows)) / len(rows), 4) if rows else None


def summary(rows: Sequence[TurnResult]) -> dict[str, Any]:
    """One variant's figures on some turns: gold evidence and abstention on the answerable ones,
    abstention on the unanswerable ones, answers where generated, and the rewrite's seconds."""
    answerable = [r for r in rows if r.answerable]
    unanswerable = [r for r in rows if r.unanswerable]
    answered = [r for r in answerable if r.f1 is not None]
    called = [r.seconds for r in rows if r.seconds]
    return {
        "turns": len(rows),
        "answerable": len(answerable),
        "gold_in_evidence": share(answerable, lambda r: r.gold_any),
        "gold_in_top_cluster": share(answerable, lambda r: r.gold_top),
        "abstained_answerable": share(answerable, lambda r: r.abstained),
        "unanswerable": len(unanswerable),
        "abstained_unanswerable": share(unanswerable, lambda r: r.abstained),
        "rewritten": share(rows, lambda r: r.how == "rewritten"),
        "asked_back_answerable": share(answerable, lambda r: r.asked_back),
        "dropped_a_typed_word": sum(bool(r.dropped) for r in rows),
        "agent_asked": sum(r.agent_asked for r in rows),
        "asked_back_where_agent_asked": sum(r.asked_back for r in rows if r.agent_asked),
        "asked_back": sum(r.asked_back for r in rows),
        "model_calls": len(called),
        "seconds_added_median": round(percentile([r.seconds for r in rows], 50), 3) if rows else None,
        "seconds_per_model_call_median": round(percentile(called, 50), 3) if called else None,
        "answered": len(answered),
        "token_f1": round(sum(r.f1 or 0.0 for r in answered) / len(answered), 4) if answered else None,
        "supported": share(answered, lambda r: bool(r.supported)) if answered else None,
    }


def paired(first: Sequence[TurnResult], second: Sequence[TurnResult]) -> dict[str, Any]:
    """``first`` against ``second`` on the same answerable turns: exact McNemar on gold in the
    evidence and in the top cluster, Wilcoxon on token F1 where both answered."""
    pairs = [(a, b) for a, b in zip(first, second) if a.answerable]
    tests = {
        "gold_in_evidence": paired_test([(a.gold_any, b.gold_any) for a, b in pairs], exact_mcnemar=True),
        "gold_in_top_cluster": paired_test([(a.gold_top, b.gold_top) for a, b in pairs], exact_mcnemar=True),
    }
    answered = [(a.f1, b.f1) for a, b in pairs if a.f1 is not None and b.f1 is not None]
    if answered:
        tests["token_f1"] = paired_test(answered)
    return tests


def report(results: dict[str, list[TurnResult]]) -> dict[str, Any]:
    """Per split (all, tune, test) and per kind of turn (first, follow-up): each variant's
    summary, and the paired tests of each variant against ``last`` on follow-ups."""
    out: dict[str, Any] = {}
    for split in ("all", "tune", "test"):
        chosen = {v: [r for r in rows if split == "all" or r.split == split] for v, rows in results.items()}
        out[split] = {
            kind: {v: summary([r for r in rows if r.follow_up == (kind == "follow_ups")]) for v, rows in chosen.items()}
            for kind in ("first_turns", "follow_ups")
        }
        follow = {v: [r for r in rows if r.follow_up] for v, rows in chosen.items()}
        out[split]["paired_vs_last"] = {
            v: paired(follow[v], follow["last"]) for v in follow if v != "last" and "last" in follow
        }
    return out


def identical_first_turns(results: dict[str, list[TurnResult]]) -> bool:
    """Whether every variant searched each first turn as typed (no history: nothing to rewrite)."""
    return all(r.how in ("first_turn", "human") for rows in results.values() for r in rows if not r.follow_up)


def evaluate_conversations(
    rag: QuorumRAG,
    pipeline_for: Callable[[str], Coordinator],
    turns: Sequence[ConversationTurn],
    variants: Sequence[str],
    answered: frozenset[str],
    advance: Callable[[], None],
    on_result: Callable[[TurnResult], None] | None = None,
) -> dict[str, Any]:
    """Every variant on every turn, and the turns ``answered`` names answered by each;
    ``pipeline_for(variant)`` gives the pipeline configured for it."""
    if unknown := set(variants) - set(VARIANTS):
        raise DatasetError(f"--variants {', '.join(sorted(unknown))}: use {', '.join(VARIANTS)}")
    if "human" in variants and not any(t.rewrite for t in turns):
        raise DatasetError("the human variant needs a data set with stand-alone rewrites (MTRAG has them)")
    started = time.perf_counter()
    scored: dict[tuple[Any, ...], tuple[str | None, float, bool]] = {}
    results = {v: run_variant(rag, pipeline_for(v), v, turns, answered, scored, advance, on_result) for v in variants}
    return {
        "variants": list(variants),
        "conversations": len({t.conversation for t in turns}),
        "turns": len(turns),
        "follow_ups": sum(t.follow_up for t in turns),
        "first_turns_searched_as_typed": identical_first_turns(results),
        "seconds": round(time.perf_counter() - started, 1),
        "results": report(results),
    }


def row(result: TurnResult) -> str:
    return json.dumps(asdict(result)) + "\n"


def to_answer(turns: Sequence[ConversationTurn], count: int, seed: int) -> frozenset[str]:
    """``count`` answerable follow-ups drawn with ``seed``: every variant answers the same ones."""
    eligible = sorted(t.id for t in turns if t.follow_up and t.answerable)
    return frozenset(random.Random(seed).sample(eligible, min(count, len(eligible))))


#: the columns of ``conversation_table``: (heading, summary key)
TABLE_COLUMNS = (
    ("turns", "turns"),
    ("gold in evidence", "gold_in_evidence"),
    ("in top cluster", "gold_in_top_cluster"),
    ("abstained (ans)", "abstained_answerable"),
    ("abstained (unans)", "abstained_unanswerable"),
    ("rewritten", "rewritten"),
    ("asked back (ans)", "asked_back_answerable"),
    ("dropped a word", "dropped_a_typed_word"),
    ("s added (median)", "seconds_added_median"),
    ("s per rewrite", "seconds_per_model_call_median"),
    ("token F1", "token_f1"),
    ("supported", "supported"),
)


def conversation_table(result: dict[str, Any], split: str) -> Table:
    """One row per (kind of turn, variant) of a split."""
    from rich.table import Table

    figures = result["results"][split]
    table = Table(title=f"{split}: {result['conversations']} conversations, {result['turns']} turns")
    table.add_column("turns of")
    table.add_column("variant")
    for heading, _ in TABLE_COLUMNS:
        table.add_column(heading, justify="right")
    for kind in ("first_turns", "follow_ups"):
        for variant, summary_ in figures[kind].items():
            table.add_row(
                kind.replace("_", " "),
                variant,
                *("-" if summary_[key] is None else str(summary_[key]) for _, key in TABLE_COLUMNS),
            )
    return table
