"""``[retrieval]`` and its sections: how a question is searched, fused, ranked and put in context.

The keys every search reads stay at the top of ``[retrieval]``; what only one step reads has its
own section: ``[retrieval.context]`` (what reaches the model), ``[retrieval.parts]`` (a question
of several parts) and ``[retrieval.conversation]`` (a follow-up). The flat keys these replaced
(``retrieval.part_top_k``, ``QRAG_RETRIEVAL_CONTEXT=fixed``) are still read, each with a warning
that names its new place (``FORMER_KEYS``).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, model_validator

from .sections import Section
from .values import check_expansions


class ContextSettings(Section):
    """What of the ranked clusters reaches the model (and the evidence gate)."""

    mode: Literal["adaptive", "fixed"] = Field(
        "adaptive",
        description="adaptive: the best cluster alone when it leads the next by margin, else the clusters "
        "within that margin of it, adaptive_words each; fixed: clusters and words",
    )
    clusters: PositiveInt = Field(5, description="clusters the gate reads, and the fixed context sends")
    words: NonNegativeInt = Field(500, description="context words shared by the clusters; 0: whole spans")
    margin: float = Field(
        0.2,
        ge=0.0,
        description="adaptive context: the ranking-score lead over the next cluster at which the best cluster "
        "is sent alone",
    )
    adaptive_words: PositiveInt = Field(150, description="adaptive context: words per cluster sent")
    adaptive_clusters: PositiveInt = Field(3, description="adaptive context: the most clusters sent")


class PartsSettings(Section):
    """A question of several parts: each part searched in its own documents, with its own quorum."""

    mode: Literal["rules", "model", "off"] = Field(
        "rules",
        description="rules: a question that names documents by publisher (and date) is searched part by part, "
        "each part in its documents with its own quorum and share of the context, and one that spans documents "
        "by its form (clauses, two compared phrases, two ordered events) each part by its own words; model: the "
        "rules, then the model splits a question they leave whole that reads as one about several documents "
        "(a model call for those only); off: always whole",
    )
    top_k: PositiveInt = Field(
        60,
        description="the hits each retriever returns for a part, searched in its documents alone (more let a "
        "part's every document reach quorum: docs/benchmarks.md)",
    )
    clusters: PositiveInt = Field(
        8,
        description="the clusters the parts share (rounded up per part), within words; more, shorter windows "
        "let each of the question's documents in",
    )
    words: PositiveInt = Field(
        300,
        description="the context words the parts share (the same documents reached the context at 300 as at "
        "500 words, in a shorter prompt)",
    )


class ConversationSettings(Section):
    """A question asked after others: how it becomes a stand-alone question, and the history's bounds."""

    mode: Literal["rewrite", "last"] = Field(
        "rewrite",
        description="rewrite: the model makes a follow-up stand-alone from the earlier turns (a model call only "
        "for a follow-up that points back); last: the question alone, as typed",
    )
    readings: bool = Field(
        True,
        description="a rewrite that carried over a word the follow-up replaces (international travel, then "
        "'And within Norway?') is searched without it too (one more retrieval): the same evidence answers the "
        "user's reading; different evidence asks the user which one they mean",
    )
    history_window: NonNegativeInt = Field(
        4, description="the most recent earlier turns the rewrite reads (user and assistant each count)"
    )
    history_assistant_chars: PositiveInt = Field(300, description="characters of each assistant turn the rewrite reads")
    max_history_turns: PositiveInt = Field(
        100, description="a history of more turns is refused (bad_question); send the most recent ones"
    )
    max_turn_chars: PositiveInt = Field(8000, description="a history turn longer than this is refused (bad_question)")
    max_history_chars: PositiveInt = Field(
        64000, description="a history longer than this in all is refused (bad_question)"
    )


#: a flat ``[retrieval]`` key of earlier releases -> its section and key now
FORMER_KEYS = {
    "context_clusters": ("context", "clusters"),
    "word_budget": ("context", "words"),
    "adaptive_margin": ("context", "margin"),
    "adaptive_words": ("context", "adaptive_words"),
    "adaptive_clusters": ("context", "adaptive_clusters"),
    "question_parts": ("parts", "mode"),
    "part_top_k": ("parts", "top_k"),
    "part_clusters": ("parts", "clusters"),
    "part_words": ("parts", "words"),
    "readings": ("conversation", "readings"),
    "history_window": ("conversation", "history_window"),
    "history_assistant_chars": ("conversation", "history_assistant_chars"),
    "max_history_turns": ("conversation", "max_history_turns"),
    "max_turn_chars": ("conversation", "max_turn_chars"),
    "max_history_chars": ("conversation", "max_history_chars"),
}
#: former keys whose name is now a section's: a plain value there is the section's ``mode``
FORMER_MODES = ("context", "conversation")


def warn_moved(former: str, section: str, key: str) -> None:
    """One line that says where ``retrieval.<former>`` is now, in TOML and in the environment."""
    warnings.warn(
        f"retrieval.{former} is now retrieval.{section}.{key} ([retrieval.{section}] {key} = ..., "
        f"QRAG_RETRIEVAL_{section.upper()}_{key.upper()}); the old name is read until 0.6",
        FutureWarning,
        stacklevel=3,
    )


def moved_key(key: str, value: str | None) -> tuple[str, ...]:
    """Where ``retrieval.<key>``, set to ``value`` in the environment, is read: the key itself, or
    the section key an earlier release's flat key became (warned; a plain value for ``context`` or
    ``conversation`` is its ``mode``). Moved here rather than by the validator, so that a former
    name in the environment still overrides the config file's new one."""
    if key in FORMER_MODES and not (value or "{").lstrip().startswith("{"):
        moved = (key, "mode")
    elif key in FORMER_KEYS:
        moved = FORMER_KEYS[key]
    else:
        return (key,)
    warn_moved(key, *moved)
    return moved


def placed_in_sections(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (the ``[retrieval]`` table of a config file) with each former flat key moved to
    its section, warned; a key given both ways keeps the section's value."""
    placed = dict(data)
    moves = [(key, key, "mode") for key in FORMER_MODES if isinstance(data.get(key), str)]
    moves += [(key, *FORMER_KEYS[key]) for key in data if key in FORMER_KEYS]
    for former, section, key in moves:
        value = placed.pop(former)
        warn_moved(former, section, key)
        table = placed.get(section)
        if isinstance(table, Section):
            table = table.model_dump(exclude_unset=True)
        table = dict(table or {})
        table.setdefault(key, value)
        placed[section] = table
    return placed


class RetrievalSettings(Section):
    top_k: PositiveInt = Field(15, description="candidates each retriever returns")
    rrf_k: NonNegativeInt = Field(2, description="Reciprocal Rank Fusion's k: a candidate scores 1/(k + rank) per list")
    cluster_threshold: float = Field(
        0.85, ge=0.0, le=1.0, description="cosine of a candidate to a cluster's leader at which it joins the cluster"
    )
    quorum: PositiveInt = Field(2, description="distinct retrievers a cluster needs to count as evidence")
    min_similarity: float = Field(0.2, ge=-1.0, le=1.0, description="cosine floor for dense hits")
    hnsw_ef: PositiveInt | None = Field(
        128,
        description="HNSW search breadth of dense retrievers; None: the engine's default (benchmarks/hnsw_recall.py)",
    )
    weight_rrf: float = Field(0.7, ge=0.0, description="ranking: weight of a cluster's normalised fused rank")
    weight_support: float = Field(0.6, ge=0.0, description="ranking: weight of its support (retrievers / all)")
    max_question_chars: PositiveInt = Field(4000, description="a longer question is refused (bad_question)")
    min_confidence: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="the evidence gate: abstain below this confidence that the context "
        "holds the answer; None: the gate model's own threshold, chosen on its development split; 0: no gate",
    )
    gate_model: Path | None = Field(
        None,
        description="gate weights from `qrag-qdrant gate train`; default: "
        "the namespace's own from `gate calibrate`, else the shipped model",
    )
    exclude_sources: tuple[str, ...] = Field(
        (),
        description="sources (as ingested) no search returns and the gate "
        "counts as outside the corpus; `gate calibrate` holds documents out so",
    )
    expansions: tuple[str, ...] = Field(
        (),
        description="query expansions every retriever also searches (a retriever's own `expansions` "
        'overrides): "multi_query:3" (three rewrites of the question), "hyde" (a hypothetical answer); '
        "each costs a model call per question. Off by default: neither beat plain quorum (docs/benchmarks.md)",
    )
    expansion_timeout: PositiveFloat = Field(
        60.0, description="seconds to wait for the model's expansions; past it, the question is searched alone"
    )
    context: ContextSettings = Field(
        ContextSettings(), description="what of the ranked clusters reaches the model: [retrieval.context]"
    )
    parts: PartsSettings = Field(
        PartsSettings(), description="a question of several parts, each searched in its documents: [retrieval.parts]"
    )
    conversation: ConversationSettings = Field(
        ConversationSettings(),
        description="a follow-up made stand-alone, and the history's bounds: [retrieval.conversation]",
    )

    def updated(self, changes: Mapping[str, Any]) -> RetrievalSettings:
        """These settings with ``changes`` (``{"quorum": 3, "context.words": 300}``), validated."""
        data = self.model_dump()
        for name, value in changes.items():
            *sections, key = name.split(".")
            table = data
            for section in sections:
                table = table[section]
            table[key] = value
        return RetrievalSettings.model_validate(data)

    @model_validator(mode="before")
    @classmethod
    def _former_flat_keys(cls, data: Any) -> Any:
        return placed_in_sections(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _known_expansion_syntax(self) -> RetrievalSettings:
        check_expansions(self.expansions)
        return self
