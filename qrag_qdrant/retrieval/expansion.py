"""Query expansions: texts the language model writes from the question, searched beside it.

Two built-ins, registered exactly as a plug-in's are: an entry point in the group
``qrag_qdrant.expansions`` naming an ``ExpansionKind`` (see pyproject.toml); in-process code may
also call ``register_expansion``:
- ``multi_query``: several rewrites of the question in one model call (the RRF article's
  multi-query fusion);
- ``hyde``: one hypothetical answer passage, whose embedding finds text that looks like an
  answer rather than like a question (HyDE).

Each expansion's ranked lists join RRF, but support keeps counting **distinct retrievers**:
``dense-c50`` searching three rewrites adds ranks, never votes. Otherwise a retriever could
manufacture a quorum on its own, and a single model call that misread the question would
outvote every retriever that read it right.

Failure is never fatal: no model, a model slower than ``retrieval.expansion_timeout``, or a
reply that holds no usable text leaves the question searched alone, and the report says why.
The model is reached through a ``Completer`` (a generation backend that can complete one
prompt); the coordinator is handed one and never imports the generation stage.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from ..config.settings import Settings
from ..config.values import parse_expansion
from ..errors import ConfigError, QragError
from ..generation.base import Completer
from ..plugins import Registry
from ..results import QueryExpansion

log = logging.getLogger(__name__)

#: an expansion longer than this many characters is cut there (a runaway reply)
MAX_EXPANSION_CHARS = 1500
REFUSAL = re.compile(r"^(?:i'?m sorry|i am sorry|sorry|i cannot|i can'?t|as an ai)\b", re.IGNORECASE)
#: a list item's mark or label ("- ", "2.", "Query 1:", "Question 2:"), taken off the line it starts
BULLET = re.compile(
    r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*:|rewrite\s*\d*:|(?:question|part)\s*\d+\s*[:.)])\s*", re.IGNORECASE
)


class ExpansionFailed(Exception):
    """The model's reply held nothing to search; the message says why, in one line."""


def no_completer() -> Completer:
    raise ExpansionFailed("no language model was given to write expansions")


def opened_completer(opener: Callable[[], object], failure: type[Exception] = ExpansionFailed) -> Completer:
    """The model ``opener`` opens, if it can complete a prompt; ``failure``, saying so, if not."""
    completer = opener()
    if not isinstance(completer, Completer):
        raise failure(f"the generation backend {type(completer).__name__} cannot complete a prompt")
    return completer


@dataclass(frozen=True)
class ExpansionKind:
    """How one expansion asks the model and reads its reply."""

    name: str
    system: str
    #: ``(reply, count, question) -> texts``; raises ExpansionFailed on a reply with nothing usable
    parse: Callable[[str, int, str], list[str]]
    #: texts asked for when the config names no count
    default_count: int = 1
    #: the most texts one call can give (``hyde`` writes one passage)
    max_count: int = 1
    #: tokens the model may write, per text asked for
    tokens_per_text: int = 48

    def label(self, index: int, count: int) -> str:
        """``hyde`` for a single text, ``multi_query 2`` for the second of several."""
        return self.name if count == 1 and self.max_count == 1 else f"{self.name} {index + 1}"


EXPANSIONS: Registry[ExpansionKind] = Registry(
    "qrag_qdrant.expansions", "query expansion", setting="retrieval.expansions"
)


def register_expansion(kind: ExpansionKind) -> None:
    EXPANSIONS.register(kind.name, kind)


def parse_rewrites(reply: str, count: int, question: str) -> list[str]:
    """One rewrite per line, bullets and numbering removed; the question itself and repeats dropped."""
    seen = {question.strip().lower()}
    rewrites = []
    for line in reply.splitlines():
        text = BULLET.sub("", line).strip().strip('"').strip()
        if len(text.split()) >= 2 and text.lower() not in seen:
            seen.add(text.lower())
            rewrites.append(text[:MAX_EXPANSION_CHARS])
    if not rewrites:
        raise ExpansionFailed("the model's reply held no rewrite of the question")
    return rewrites[:count]


def parse_passage(reply: str, count: int, question: str) -> list[str]:
    """The reply as one passage; too short a reply, or a refusal, is not one."""
    text = " ".join(reply.split())
    if REFUSAL.match(text):
        raise ExpansionFailed(f"the model declined to write a hypothetical answer: {text[:80]!r}")
    if len(text.split()) < 4:
        raise ExpansionFailed(f"the model's hypothetical answer is too short to search: {text!r}")
    return [text[:MAX_EXPANSION_CHARS]]


MULTI_QUERY = ExpansionKind(
    "multi_query",
    "You write search queries. Give {count} different search queries for the user's question, each on its "
    'own line starting with "- ". Use other words and synonyms than the question. Output only the '
    "{count} lines.",
    parse_rewrites,
    default_count=3,
    max_count=10,
    tokens_per_text=32,
)
HYDE = ExpansionKind(
    "hyde",
    "Write a short encyclopedia passage (two or three sentences) that answers the user's question. If you "
    "are not sure, write a plausible answer anyway. No preamble.",
    parse_passage,
    tokens_per_text=96,
)


@dataclass(frozen=True)
class ExpansionPlan:
    """What the settings ask for: each expansion kind, how many texts, and which retrievers search them."""

    kind: ExpansionKind
    count: int
    #: retriever name -> how many of the texts it searches
    retrievers: dict[str, int]

    def searchers(self, index: int) -> frozenset[str]:
        """The retrievers that search the expansion's text number ``index`` (from 0)."""
        return frozenset(r for r, count in self.retrievers.items() if index < count)

    @classmethod
    def from_settings(cls, settings: Settings) -> list[ExpansionPlan]:
        """One plan per expansion named anywhere; an unknown name is one ConfigError."""
        known: dict[str, ExpansionKind] = {}
        counts: dict[str, dict[str, int]] = {}
        for retriever in settings.retrievers:
            for item in settings.expansions_of(retriever):
                name, count = parse_expansion(item)
                kind = known[name] = known.get(name) or EXPANSIONS.get(name)
                count = count or kind.default_count
                if count > kind.max_count:
                    raise ConfigError(f"expansion {item!r}: {name} writes at most {kind.max_count} text(s) per call")
                counts.setdefault(name, {})[retriever.name] = count
        return [cls(known[name], max(per.values()), per) for name, per in counts.items()]


@dataclass(frozen=True)
class ExpandedText:
    """One text to search: its label (``multi_query 2``, ``hyde``) and the retrievers that search it."""

    label: str
    text: str
    retrievers: frozenset[str]


class Expander:
    """Asks the model for every planned expansion of a question on a worker thread, so the
    question's own search runs meanwhile; ``collect`` waits at most until the deadline."""

    def __init__(self, plans: Sequence[ExpansionPlan], completer: Callable[[], object], timeout: float):
        self.plans, self._completer, self.timeout = list(plans), completer, timeout
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="qrag-expand")

    def start(self, question: str) -> PendingExpansions:
        """Opens the model here (the first time, loading it can take longer than writing), then
        asks on the worker; the timeout counts from when the model is ready."""
        cancelled = threading.Event()
        try:
            completer = opened_completer(self._completer)
        except Exception as exc:  # no model installed, no server configured: search on without it
            log.warning("expansions: no model to write them; the question is searched alone", exc_info=True)
            return PendingExpansions(self.plans, [], cancelled, 0.0, self.timeout, one_line(exc))
        futures = [self._pool.submit(self._ask, completer, plan, question, cancelled) for plan in self.plans]
        return PendingExpansions(self.plans, futures, cancelled, time.monotonic() + self.timeout, self.timeout)

    @staticmethod
    def _ask(
        completer: Completer, plan: ExpansionPlan, question: str, cancelled: threading.Event
    ) -> tuple[list[str], float]:
        if cancelled.is_set():  # an earlier expansion used up the time
            raise ExpansionFailed("cancelled")
        started = time.perf_counter()
        reply = completer.complete(
            plan.kind.system.format(count=plan.count), question, plan.kind.tokens_per_text * plan.count, cancelled
        )
        if cancelled.is_set():
            raise ExpansionFailed("cancelled")
        return plan.kind.parse(reply, plan.count, question), time.perf_counter() - started

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


@dataclass
class PendingExpansions:
    plans: list[ExpansionPlan]
    futures: list[Future[tuple[list[str], float]]]
    cancelled: threading.Event
    deadline: float
    timeout: float
    #: why no expansion could be asked for at all (the model could not be opened)
    unavailable: str | None = None

    def collect(self) -> tuple[list[ExpandedText], list[QueryExpansion]]:
        """The texts to search, and a report per expansion: its texts, or why there are none.
        Past the deadline the model is told to stop and the rest are reported as timed out."""
        texts: list[ExpandedText] = []
        if self.unavailable is not None:
            return texts, [QueryExpansion(kind=plan.kind.name, error=self.unavailable) for plan in self.plans]
        reports: list[QueryExpansion] = []
        for plan, future in zip(self.plans, self.futures):
            try:
                found, seconds = future.result(timeout=max(0.0, self.deadline - time.monotonic()))
            except FutureTimeout:
                self.cancelled.set()
                future.cancel()
                reports.append(
                    QueryExpansion(
                        kind=plan.kind.name,
                        error=f"the model took longer than {self.timeout:g} s (retrieval.expansion_timeout)",
                    )
                )
                continue
            except Exception as exc:  # a missing model, a broken server, a garbage reply: search on without it
                log.warning("expansion %s failed; searched without it", plan.kind.name, exc_info=True)
                reports.append(QueryExpansion(kind=plan.kind.name, error=one_line(exc)))
                continue
            labels = [plan.kind.label(index, len(found)) for index in range(len(found))]
            for index, (label, text) in enumerate(zip(labels, found)):
                texts.append(ExpandedText(label, text, plan.searchers(index)))
            reports.append(
                QueryExpansion(
                    kind=plan.kind.name,
                    texts=found,
                    labels=labels,
                    retrievers=sorted(plan.retrievers),
                    seconds=round(seconds, 3),
                )
            )
        return texts, reports


def one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if isinstance(error, (ExpansionFailed, QragError)) else f"{type(error).__name__}: {text}"
