"""Document frequencies per analysed term: how rare each of a question's words is in the corpus.

The evidence gate needs them to tell a name the corpus never mentions (strong out-of-corpus
evidence) from a common word, and to weigh the question's terms by rarity. Qdrant keeps BM25's
IDF inside its sparse index and does not expose it, so each collection keeps its own counts.

Terms are those of Qdrant's English BM25 analyser (stems, no stopwords), the same the gate reads
from a question, over each chunk's text; a count is the number of chunks holding the term.

Crash safety: the counts are derived data, stamped with the collection's ``indexed`` stamp.
Ingest drops them before its first write and saves them after its last, with the new stamp, so
counts that do not match the manifest's stamp are stale and are counted again from the stored
texts. A clean run updates them with exactly its adds and removes.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np

from .spelling import misspelt
from .terms import (
    GENERIC_VERBS,
    general_rarity,
    initials,
    question_words,
    terms,
    with_initials,
    word_terms,
    words_of,
    zipf_frequency,
)

#: how much more a word the user typed in this turn counts than one the rewrite brought in
TYPED_WEIGHT = 2.0
#: a question word no document of the namespace holds, at least this rare in general English
#: ("sick", not "call"), says the question asks about something the documents do not cover
UNSEEN_RARITY = 0.3


def key_term_weights(question: str, stats: TermStats, typed: str | None = None) -> dict[str, float]:
    """Each content word of ``question`` (lower case) with how much it says what the question is
    about: its rarity in general language (so "call" or "get" weigh little and "sick" or "Norway"
    much), times its rarity in the namespace (a word every chunk holds, the company's name in its
    own handbook, tells no passage from another), times ``TYPED_WEIGHT`` for a word of ``typed``,
    the follow-up the user typed, when that is not the question itself (a rewrite's words weigh
    less than the user's own)."""
    words = question_words(question)
    if not words:
        return {}
    wanted = sorted({term for ids in words.values() for term in ids})
    df = dict(zip(wanted, stats.frequencies(wanted).tolist()))
    spread = math.log(stats.chunks + 1) or 1.0
    own = {term for word in re.findall(r"[\w'-]+", (typed or "").lower()) for term in word_terms(word)}
    weights = {}
    for word, ids in words.items():
        corpus = min(math.log((stats.chunks + 1) / (df[term] + 1)) / spread for term in ids)
        weight = general_rarity(word) * corpus
        weights[word] = round(weight * (TYPED_WEIGHT if typed and ids <= own else 1.0), 4)
    return weights


def with_abbreviations(question: str, stats: TermStats) -> str:
    """``question`` with each name the namespace writes only as its abbreviation so written: "How
    long is the warranty in the European Union?" over documents that say "EU" (and never
    "European" or "Union") reads "... in the EU?". A name the namespace spells out stays; a run
    that starts the question is no name ("Deleting Raptor ...")."""

    def written_short(run: str) -> bool:
        short = word_terms(initials(run))
        words = [ids for word in run.split() if word[0].isupper() and (ids := word_terms(word))]
        held = stats.held({term for ids in (*words, short) for term in ids})
        return bool(short) and short <= held and not any(ids & held for ids in words)

    return with_initials(question, written_short, from_start=False)


def with_spellings(question: str, evidence: Iterable[str], stats: TermStats) -> str:
    """``question`` with each word no chunk of the namespace holds written as the word of
    ``evidence`` (the retrieved passages' text) it misspells (``spelling.misspelt``): "What are two
    basic primary resources used to guage complexity?" over a passage on gauging complexity reads
    "... to gauge complexity?". A word the documents use stays as typed, and so does one general
    English uses ("start" is no slip for "state" where no document says "start"), and a code or an
    abbreviation (``coded``)."""
    unheld = [word.removesuffix("'s") for word in _unheld_words(words_of(question), stats)]
    unheld = [word for word in unheld if len(word) >= 5 and not zipf_frequency(word) and not coded(word, question)]
    unheld = unheld[:SLIPS_READ]
    if not unheld:
        return question
    spelled = {word for text in evidence for word in SPELLED.findall(text.lower())}
    for word in unheld:
        if (meant := misspelt(word, spelled)) is not None:
            question = re.sub(rf"\b{re.escape(word)}\b", lambda typed: as_cased(meant, typed[0]), question, flags=re.I)
    return question


def as_cased(word: str, typed: str) -> str:
    """``word`` capitalised as ``typed`` is: a name stays a name."""
    return word[:1].upper() + word[1:] if typed[:1].isupper() else word


def coded(word: str, question: str) -> bool:
    """Whether ``word`` is written as a code or an abbreviation in ``question`` (a digit, or two
    capitals: "miR7a", "ComYMV"), whose every letter is meant."""
    typed = re.search(rf"\b{re.escape(word)}", question, re.IGNORECASE)
    return any(c.isdigit() for c in word) or (typed is not None and sum(c.isupper() for c in typed.group()) > 1)


#: the most words of one question read as slips: a question of more words no document holds is
#: about something else (and the reading costs a comparison with each word of the passages)
SLIPS_READ = 8
#: a word of a passage a question's word may misspell: letters only, five or more
SPELLED = re.compile(r"\b[^\W\d_]{5,}\b")


def _unheld_words(words: dict[str, frozenset[int]], stats: TermStats) -> dict[str, frozenset[int]]:
    """Those of ``words`` no chunk of the namespace holds (none of their terms)."""
    held = stats.held({term for ids in words.values() for term in ids})
    return {word: ids for word, ids in words.items() if not ids & held}


def unseen_words(question: str, stats: TermStats) -> list[str]:
    """The question's words that no document of the namespace holds and general English uses
    rarely enough (``UNSEEN_RARITY``) to say what the question is about: the documents do not
    cover it, whatever passage an answer cites ("sick" over a handbook that never mentions it)."""
    unheld = _unheld_words(question_words(with_abbreviations(question, stats)), stats)
    return [word for word in unheld if general_rarity(word) >= UNSEEN_RARITY]


def unheld_common_terms(question: str, stats: TermStats) -> frozenset[int]:
    """The terms of the question's common words (a generic verb, or too common in general English to
    say what it asks about: "long" in "How long", "say") that no chunk of the namespace holds.

    A namespace of a few documents leaves most of English unused, so that such a word is missing
    says nothing of whether the documents answer; BM25 still gives it the highest weight there is.
    A corpus of thousands of chunks uses nearly every common word, so the gate's features, fitted on
    such corpora, leave these words out without changing there."""
    unheld = _unheld_words(words_of(question), stats)
    common = [ids for word, ids in unheld.items() if word in GENERIC_VERBS or general_rarity(word) < UNSEEN_RARITY]
    return frozenset().union(*common)


def count_terms(texts: Iterable[str]) -> Counter[int]:
    """In how many of ``texts`` each term occurs."""
    counts: Counter[int] = Counter()
    for text in texts:
        counts.update(terms(text))
    return counts


@dataclass(frozen=True)
class TermStats:
    """A collection's chunk count and, per term id (sorted), the chunks that hold it."""

    chunks: int
    ids: np.ndarray
    counts: np.ndarray
    #: the collection manifest's ``indexed`` stamp these counts belong to
    indexed: int = 0

    @classmethod
    def of(cls, counts: Counter[int], chunks: int, indexed: int = 0) -> TermStats:
        kept = sorted((term, n) for term, n in counts.items() if n > 0)
        return cls(
            chunks,
            np.array([t for t, _ in kept], dtype=np.int64),
            np.array([n for _, n in kept], dtype=np.int64),
            indexed,
        )

    def updated(self, added: Counter[int], removed: Counter[int], chunks: int, indexed: int) -> TermStats:
        """These counts with one ingest's added and removed chunks' terms."""
        counts = Counter(dict(zip(self.ids.tolist(), self.counts.tolist())))
        counts.update(added)
        counts.subtract(removed)
        return TermStats.of(counts, chunks, indexed)

    def frequencies(self, term_ids: Iterable[int]) -> np.ndarray:
        """The document frequency of each term; 0 for a term no chunk holds."""
        wanted = np.fromiter(term_ids, dtype=np.int64)
        if not len(self.ids):
            return np.zeros(len(wanted), dtype=np.int64)
        at = np.minimum(np.searchsorted(self.ids, wanted), len(self.ids) - 1)
        return np.where(self.ids[at] == wanted, self.counts[at], 0)

    def held(self, term_ids: Iterable[int]) -> set[int]:
        """Those of ``term_ids`` some chunk holds."""
        wanted = sorted(set(term_ids))
        return {term for term, n in zip(wanted, self.frequencies(wanted).tolist()) if n > 0}

    def idf_of(self, df: int) -> float:
        """BM25's IDF, ln(1 + (N - df + 0.5) / (df + 0.5)): the highest for a term no chunk holds."""
        return math.log1p((self.chunks - df + 0.5) / (df + 0.5))

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        np.savez_compressed(buffer, ids=self.ids, counts=self.counts, chunks=self.chunks, indexed=self.indexed)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> TermStats:
        with np.load(io.BytesIO(data)) as arrays:
            return cls(int(arrays["chunks"]), arrays["ids"], arrays["counts"], int(arrays["indexed"]))

    @classmethod
    def current(cls, data: bytes | None, indexed: int) -> TermStats | None:
        """Saved counts if they belong to the collection as stamped ``indexed``, else None (stale)."""
        if data is None:
            return None
        try:
            stats = cls.from_bytes(data)
        except (OSError, ValueError, KeyError):
            return None
        return stats if stats.indexed == indexed else None


@dataclass
class TermLedger:
    """One ingest's changes to a collection's counts: its added and removed chunks' terms."""

    #: the counts before this ingest; None when they were missing or stale, so they are counted again
    base: TermStats | None
    added: Counter[int] = field(default_factory=Counter)
    removed: Counter[int] = field(default_factory=Counter)

    def add(self, texts: Iterable[str]) -> None:
        if self.base is not None:
            self.added.update(count_terms(texts))

    @property
    def removing(self) -> Callable[[Iterable[str]], None] | None:
        """What reads the texts of points about to be deleted; None when they need not be read."""
        return self._remove if self.base is not None else None

    def _remove(self, texts: Iterable[str]) -> None:
        self.removed.update(count_terms(texts))

    def result(self, chunks: int, indexed: int, stored_texts: Callable[[], Iterable[str]]) -> TermStats:
        if self.base is None:
            return TermStats.of(count_terms(stored_texts()), chunks, indexed)
        return self.base.updated(self.added, self.removed, chunks, indexed)
