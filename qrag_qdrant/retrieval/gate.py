"""The evidence gate: answer, or abstain because the agreed evidence is too weak.

Quorum alone is too blunt: retrievers often agree on the nearest paragraph of a corpus that
does not hold the answer at all. The gate turns what retrieval already returned (no extra
search) into named features, and a small logistic model turns those into a confidence in
[0, 1] that the context holds the answer. Below ``retrieval.min_confidence`` the pipeline
abstains with reason ``low_confidence`` (with the shipped gate, not in a namespace of a few files
where every retriever backs a best cluster that holds the question's names:
``held_by_every_retriever``); with no cluster at quorum the reason is ``no_quorum``.

Features are ratios, ranks and normalised scores, never raw counts, so a model fitted on one
corpus carries over to a larger or smaller one. The rare-term features read the corpus's own
document frequencies (``text/term_stats.py``). The trained weights ship as a versioned JSON
file beside this module: ``gate-v2.json``, fitted on three data sets at once
(benchmarks/gate_cross_corpus.py). ``qrag-qdrant gate train`` fits new ones from ``eval --rows-out``
rows, and ``gate calibrate`` fits the threshold to a namespace's own corpus (``calibration/``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..errors import ConfigError
from ..text.term_stats import TermStats, unheld_common_terms, with_abbreviations, with_spellings
from ..text.terms import question_terms_in, terms, word_terms
from .fusion import RankedList
from .ranking import ScoredCluster

#: The shipped model: fitted on squad-dev, squad2-dev and SciFact indexes together (docs/benchmarks.md).
DEFAULT_MODEL = Path(__file__).with_name("gate-v2.json")
GateReason = Literal["no_quorum", "low_confidence"]

#: Every feature of the quorum gate, in one place: name -> what it measures.
QUORUM_FEATURES: dict[str, str] = {
    "top_support": "support of the best cluster / retrievers",
    "support_margin": "(support of cluster 1 - support of cluster 2) / retrievers; cluster 1's alone if none",
    "top_score": "ranking score of the best cluster (weighted RRF and support, fixed scale)",
    "score_gap": "ranking score of cluster 1 minus that of cluster 2 (cluster 1's if alone)",
    "clusters_at_quorum": "clusters that reached quorum / the most there could be (retrieval.context.clusters, or "
    "fewer when the candidates formed fewer clusters), capped at 1",
    "top_cosine": "best cosine between the question and a member chunk of the best cluster",
    "dense_top": "best cosine of any dense retriever's first hit",
    "dense_gap": "mean over dense retrievers of cosine(rank 1) - cosine(rank 2)",
    "bm25_top": "best BM25 score / (query terms x ln(1 + chunks)): near 1 when every term is rare and matched",
    "bm25_ratio": "mean over BM25 retrievers of score(rank 2) / score(rank 1)",
    "top_sources": "distinct sources among the best three clusters / the most there could be (3, or fewer when "
    "fewer sources were found)",
    "term_coverage": "share of the question's terms (stemmed, no stopwords, no common word that no chunk holds: "
    "term_stats.unheld_common_terms) found in the best cluster's text",
    "rare_coverage": "share of the question's capitalised or numeric terms found there (term_coverage if none)",
    "context_coverage": "share of the question's terms found anywhere in the context",
    "question_terms": "question terms / 20, capped at 1",
    "idf_top_share": "share of the question's IDF mass (the corpus's document frequencies) found in the best cluster",
    "idf_context_share": "share of the question's IDF mass found anywhere in the context",
    "rarest_in_corpus": "1 if the question's rarest term occurs in some chunk of the corpus, else 0",
    "names_in_corpus": "share of the question's capitalised or numeric terms that occur in the corpus (1 if none)",
}
#: The features of a plain ranked list (``qdrant-hybrid``, ``rrf-all``, single retrievers), for a fair comparison.
LIST_FEATURES: dict[str, str] = {
    "top_score": "the list's first score (its own scale: cosine, BM25 or RRF)",
    "score_gap": "first score minus second score",
}
RARE_WORD = re.compile(r"^(?:[A-Z]\w*|\w*\d\w*)$")
WORD = re.compile(r"[\w'-]+")


@dataclass(frozen=True)
class GateInput:
    """What retrieval returned for one question, as the gate reads it."""

    question: str
    dense: Sequence[float]
    lists: Sequence[RankedList]
    #: retriever name -> the vector it searches: "dense" ([embedding]'s), "bm25", or "dense-<name>" (a
    #: model of [embeddings]), which the dense features leave out: its cosines are on a scale of its own,
    #: and the gate counts it as a voter alone (support, clusters), so it reads any set of retrievers
    kinds: Mapping[str, str]
    #: clusters that reached quorum, best first
    ranked: Sequence[ScoredCluster]
    #: the passages' text of each context cluster, best first
    context: Sequence[str]
    retrievers: int
    context_clusters: int
    #: collection name -> point count, for BM25's normaliser
    points: Mapping[str, int]
    #: the corpus's document frequencies; without them every term counts as seen, with IDF 1
    term_stats: TermStats | None = None
    #: clusters the candidates formed before the quorum (None: as many as the context takes)
    clusters_formed: int | None = None


def quorum_features(given: GateInput) -> dict[str, float]:
    ranked, retrievers = given.ranked, given.retrievers
    first = ranked[0] if ranked else None
    second = ranked[1] if len(ranked) > 1 else None
    support = [s.cluster.support / retrievers for s in ranked[:2]]
    scores = [s.score for s in ranked[:2]]
    question = np.asarray(given.dense, dtype=np.float32)
    top_cosine = (
        max((float(question @ m.vector) for m in first.cluster.members if len(m.vector)), default=0.0) if first else 0.0
    )

    # a small corpus cannot fill the context: counts are shares of what it could hold
    found = {hit.id: hit for lst in given.lists for hit in lst.hits}
    dense = [lst.hits for lst in given.lists if given.kinds.get(lst.retriever) == "dense"]
    bm25 = [lst for lst in given.lists if given.kinds.get(lst.retriever) == "bm25"]
    if given.term_stats is None:
        asked = given.question
        query_terms = terms(asked)
    else:  # the namespace's own words: "EU" where it never spells out "European Union", a word typed
        # with a slip as the evidence spells it, and no common word a small namespace happens not to
        # use (it says nothing of whether the documents answer)
        asked = with_spellings(with_abbreviations(given.question, given.term_stats), given.context, given.term_stats)
        query_terms = terms(asked) - unheld_common_terms(asked, given.term_stats)
    bm25_top = 0.0
    for ranked_list in bm25:
        if ranked_list.hits:
            scale = max(len(query_terms), 1) * math.log1p(max(given.points.get(ranked_list.collection, 1), 1))
            bm25_top = max(bm25_top, ranked_list.hits[0].score / scale)

    cluster_terms = [question_terms_in(text, asked) for text in given.context]
    top_terms = cluster_terms[0] if cluster_terms else set()
    context_terms = set().union(*cluster_terms)
    rare = set().union(*(word_terms(word) for word in WORD.findall(asked)[1:] if RARE_WORD.match(word)))
    coverage = _share(query_terms, top_terms)
    return {
        "top_support": support[0] if support else 0.0,
        "support_margin": support[0] - (support[1] if second else 0.0) if support else 0.0,
        "top_score": scores[0] if scores else 0.0,
        "score_gap": scores[0] - (scores[1] if second else 0.0) if scores else 0.0,
        "clusters_at_quorum": min(
            len(ranked) / max(min(given.context_clusters, given.clusters_formed or given.context_clusters), 1), 1.0
        ),
        "top_cosine": top_cosine,
        "dense_top": max((hits[0].score for hits in dense if hits), default=0.0),
        "dense_gap": _mean([hits[0].score - hits[1].score for hits in dense if len(hits) > 1]),
        "bm25_top": bm25_top,
        "bm25_ratio": _mean(
            [lst.hits[1].score / lst.hits[0].score for lst in bm25 if len(lst.hits) > 1 and lst.hits[0].score > 0]
        ),
        "top_sources": len({m.source for s in ranked[:3] for m in s.cluster.members[:1]})
        / max(min(3, len({hit.payload.source for hit in found.values()})), 1),
        "term_coverage": coverage,
        "rare_coverage": _share(rare, top_terms) if rare else coverage,
        "context_coverage": _share(query_terms, context_terms),
        "question_terms": min(len(query_terms) / 20, 1.0),
    } | _rarity_features(query_terms, rare, top_terms, context_terms, given.term_stats)


def _rarity_features(
    query_terms: set[int], names: set[int], top_terms: set[int], context_terms: set[int], stats: TermStats | None
) -> dict[str, float]:
    """The features that need the corpus's document frequencies: ratios, so they carry across corpus sizes."""
    if stats is None:
        idf, seen = dict.fromkeys(query_terms, 1.0), query_terms | names
    else:
        wanted = list(query_terms | names)
        counts = dict(zip(wanted, stats.frequencies(wanted).tolist()))  # one lookup serves both
        idf = {term: stats.idf_of(counts[term]) for term in query_terms}
        seen = {term for term, df in counts.items() if df > 0}
    mass = sum(idf.values())
    rarest = max(query_terms, key=lambda term: idf[term], default=None)
    return {
        "idf_top_share": sum(idf[t] for t in query_terms & top_terms) / mass if mass else 0.0,
        "idf_context_share": sum(idf[t] for t in query_terms & context_terms) / mass if mass else 0.0,
        "rarest_in_corpus": float(rarest is None or rarest in seen),
        "names_in_corpus": _share(names, seen) if names else 1.0,
    }


def list_features(scores: Sequence[float]) -> dict[str, float]:
    """The features of a ranked list's scores, best first."""
    top = scores[0] if scores else 0.0
    return {"top_score": top, "score_gap": top - scores[1] if len(scores) > 1 else top}


def _share(wanted: set[int], found: set[int]) -> float:
    return len(wanted & found) / len(wanted) if wanted else 0.0


def _mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


@dataclass(frozen=True)
class LogisticGate:
    """``sigmoid(coef . (x - mean) / scale + intercept)`` over named features."""

    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    #: the confidence below which this system abstains, chosen on the training split
    threshold: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LogisticGate:
        return cls(
            tuple(data["features"]),
            np.asarray(data["mean"], dtype=float),
            np.asarray(data["scale"], dtype=float),
            np.asarray(data["coef"], dtype=float),
            float(data["intercept"]),
            float(data.get("threshold", 0.5)),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "coef": self.coef.tolist(),
            "intercept": self.intercept,
            "threshold": self.threshold,
        }

    def confidence(self, features: Mapping[str, float]) -> float:
        x = np.array([features[name] for name in self.features], dtype=float)
        return sigmoid(float(self.coef @ ((x - self.mean) / self.scale)) + self.intercept)


def sigmoid(z: float) -> float:
    """A confidence from its log-odds."""
    return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


def logit(p: float) -> float:
    """The log-odds of a confidence or threshold; a cut of 0 (nothing abstains) stays finite."""
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class GateModel:
    """One versioned weights file: a logistic gate per system, and where it came from."""

    systems: dict[str, LogisticGate]
    info: dict[str, Any]

    @classmethod
    def load(cls, path: Path | None = None) -> GateModel:
        path = Path(path or DEFAULT_MODEL)
        try:
            return cls.loads(path.read_bytes(), str(path))
        except FileNotFoundError:
            raise ConfigError(f"gate model not found: {path} (retrieval.gate_model)") from None

    @classmethod
    def loads(cls, text: str | bytes, origin: str) -> GateModel:
        try:
            data = json.loads(text)
            return cls(
                {name: LogisticGate.from_dict(system) for name, system in data["systems"].items()},
                {key: value for key, value in data.items() if key != "systems"},
            )
        except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConfigError(f"gate model {origin} is not a qrag-qdrant gate file: {exc}") from None

    def dumps(self) -> str:
        return json.dumps({**self.info, "systems": {n: g.as_dict() for n, g in self.systems.items()}}, indent=2) + "\n"

    def save(self, path: Path) -> None:
        path.write_text(self.dumps())

    def confidence(self, system: str, features: Mapping[str, float]) -> float | None:
        gate = self.systems.get(system)
        return None if gate is None else gate.confidence(features)


#: a namespace whose largest collection holds at most this many chunks: a few short files, where
#: the gate's statistics (fitted on corpora of thousands of chunks) say little
SMALL_NAMESPACE = 100


def held_by_every_retriever(features: Mapping[str, float] | None, points: Mapping[str, int]) -> bool:
    """Whether a small namespace (``SMALL_NAMESPACE``) has one answer the gate should not withhold:
    every retriever backs the best cluster, and it holds every name and number of the question
    (``rare_coverage``; every term, for a question with none). Over a few files a word no chunk
    uses weighs the most there is and BM25's scores are scaled by a handful of chunks, so the gate
    doubted such answers: on squad2-dev's articles cut to four paragraphs, 6 of the 12 answerable
    questions it withheld, against none of the 160 out-of-corpus ones (docs/benchmarks.md)."""
    if features is None or not points or max(points.values()) > SMALL_NAMESPACE:
        return False
    return features["top_support"] >= 1.0 and features["rare_coverage"] >= 1.0


def decide(
    clusters_at_quorum: int, confidence: float | None, min_confidence: float, held: bool = False
) -> GateReason | None:
    """Why to abstain, or None to answer; ``held``: the best cluster answers whatever the
    confidence (``held_by_every_retriever``)."""
    if not clusters_at_quorum:
        return "no_quorum"
    if min_confidence > 0 and confidence is not None and confidence < min_confidence and not held:
        return "low_confidence"
    return None
