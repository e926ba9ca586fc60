"""Evaluation data sets in the two layouts of ``../shared/data``.

QA: ``questions.jsonl`` with ``question``, ``answers`` and optionally ``unanswerable``,
``out_of_corpus`` and ``doc`` (the corpus file the question was written on).
Relevance: ``queries.jsonl`` with ``question`` and ``relevant_docs`` (corpus file names).
Both keep the documents under ``corpus/``.

Out-of-corpus questions come from a split by document (``hold_out``): a share of the corpus
files is not ingested, and the questions written on them can have no answer in the index.
Questions of another data set (``foreign``) are a second, easier kind.
"""

from __future__ import annotations

import dataclasses
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..calibration.fitting import Category
from ..calibration.splits import held_out_docs
from ..errors import QragError
from ..text.json_lines import BadLine, json_lines

#: The kinds of question, as abstain rates and gate rows name them.


class DatasetError(QragError):
    """The evaluation data set is missing or malformed."""


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: tuple[str, ...] = ()
    unanswerable: bool = False
    relevant_docs: tuple[str, ...] = ()
    doc: str | None = None
    #: nothing in the index can answer it: its document was held out, or it is from another data set
    out_of_corpus: bool = False
    #: the data set's own kind of question (MultiHop-RAG's ``comparison_query``, ...), if it names one
    question_kind: str | None = None

    @property
    def answerable(self) -> bool:
        return (bool(self.answers) or bool(self.relevant_docs)) and not self.unanswerable and not self.out_of_corpus

    @property
    def category(self) -> Category:
        if self.out_of_corpus:
            return "out_of_corpus"
        return "answerable" if self.answerable else "unanswerable"

    @property
    def group(self) -> str:
        """The article a split keeps whole: its document, or its first relevant one."""
        return self.doc or (self.relevant_docs[0] if self.relevant_docs else self.id)


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    kind: Literal["qa", "relevance"]
    questions: list[EvalQuestion]
    #: corpus files not ingested (``hold_out``)
    held_out: frozenset[str] = frozenset()
    split_seed: int = 0

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def metadata(self) -> Path | None:
        """The corpus's metadata sidecar (``corpus-metadata.jsonl``: titles, publishers, dates), if it has one."""
        path = self.root / "corpus-metadata.jsonl"
        return path if path.is_file() else None

    @property
    def namespace(self) -> str:
        """The data set's own namespace, e.g. ``eval-squad-dev``, or ``eval-squad-dev-held-50-s0``
        when some of its documents are held out."""
        name = "eval-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")
        return f"{name}-held-{len(self.held_out)}-s{self.split_seed}" if self.held_out else name


#: the share of a data set's documents whose questions choose prompts, thresholds and policies
#: (``--articles tune``); reports are made on the others (``--articles test``)
TUNING_SHARE = 0.25


def tuning_docs(docs: list[str]) -> frozenset[str]:
    """The fixed tuning documents: the same on any machine, independent of any ``--hold-out`` split."""
    return held_out_docs(docs, TUNING_SHARE, 0, salt="tuning:")


def load_dataset(
    root: Path,
    sample: int | None = None,
    seed: int = 0,
    hold_out: float = 0.0,
    split_seed: int = 0,
    foreign: Path | None = None,
    articles: str | None = None,
) -> Dataset:
    """Read a data set; ``sample`` questions are drawn with ``random.Random(seed)``.

    ``articles``: ``tune`` keeps only questions written on the tuning documents
    (``tuning_docs``), ``test`` only the others; the whole corpus is indexed either way.

    ``hold_out`` (0-1) of the corpus files are left out of the index, and their questions
    become out-of-corpus. ``foreign`` adds another data set's questions (as many as
    ``sample``, or all), out-of-corpus too, but none written on a document this corpus indexes.
    """
    root = Path(root)
    if not (root / "corpus").is_dir():
        raise DatasetError(f"{root} has no corpus/ folder")
    if not 0.0 <= hold_out < 1.0:
        raise DatasetError(f"--hold-out {hold_out}: use a share of the documents from 0 up to (not including) 1")
    questions, kind = _read_questions(root)
    docs = sorted(p.relative_to(root / "corpus").as_posix() for p in (root / "corpus").rglob("*") if p.is_file())
    if articles is not None:
        if articles not in ("tune", "test"):
            raise DatasetError(f"--articles {articles!r}: use tune or test")
        tuning = tuning_docs(docs)
        questions = [q for q in questions if _written_on(q, tuning) == (articles == "tune")]
    held: frozenset[str] = frozenset()
    if hold_out:
        held = held_out_docs(docs, hold_out, split_seed)
        questions = [dataclasses.replace(q, out_of_corpus=True) if _written_on(q, held) else q for q in questions]
    if sample is not None and sample < len(questions):
        questions = random.Random(seed).sample(questions, sample)
    if foreign is not None:
        # a question written on a document this corpus holds too (SQuAD 2.0's articles are SQuAD
        # 1.1's) is not out of corpus: it is left out
        indexed = frozenset(docs) - held
        extra = [q for q in _read_questions(Path(foreign))[0] if not _written_on(q, indexed)]
        if sample is not None and sample < len(extra):
            extra = random.Random(seed).sample(extra, sample)
        questions += [EvalQuestion(f"foreign:{q.id}", q.question, out_of_corpus=True) for q in extra]
    return Dataset(root.resolve().name, root, kind, questions, held, split_seed)  # type: ignore[arg-type]


def _written_on(question: EvalQuestion, held: frozenset[str]) -> bool:
    if question.doc is not None:
        return question.doc in held
    return bool(question.relevant_docs) and all(doc in held for doc in question.relevant_docs)


def _read_questions(root: Path) -> tuple[list[EvalQuestion], str]:
    for file_name, kind in (("questions.jsonl", "qa"), ("queries.jsonl", "relevance")):
        path = root / file_name
        if path.is_file():
            try:
                questions = [_question(path, number, row, kind) for number, row in json_lines(path)]
            except BadLine as exc:
                raise DatasetError(str(exc)) from None
            break
    else:
        raise DatasetError(f"{root} has neither questions.jsonl (QA) nor queries.jsonl (relevance)")
    if not questions:
        raise DatasetError(f"{path} holds no questions")
    return questions, kind


def _question(path: Path, number: int, row: dict[str, Any], kind: str) -> EvalQuestion:
    try:
        if kind == "qa":
            return EvalQuestion(
                str(row.get("id", number)),
                row["question"],
                tuple(row.get("answers", ())),
                bool(row.get("unanswerable", False)),
                doc=row.get("doc"),
                out_of_corpus=bool(row.get("out_of_corpus", False)),
                relevant_docs=tuple(row.get("relevant_docs", ())),
                question_kind=row.get("kind"),
            )
        return EvalQuestion(str(row.get("id", number)), row["question"], relevant_docs=tuple(row["relevant_docs"]))
    except (KeyError, TypeError) as exc:
        raise DatasetError(f"{path}:{number}: not a {kind} question ({type(exc).__name__}: {exc})") from None
