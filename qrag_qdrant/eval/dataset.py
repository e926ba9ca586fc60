"""Evaluation data sets in the two layouts of ``../shared/data``.

QA: ``questions.jsonl`` with ``question``, ``answers`` and optionally ``unanswerable``.
Relevance: ``queries.jsonl`` with ``question`` and ``relevant_docs`` (corpus file names).
Both keep the documents under ``corpus/``.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..errors import QragError


class DatasetError(QragError):
    """The evaluation data set is missing or malformed."""


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answers: tuple[str, ...] = ()
    unanswerable: bool = False
    relevant_docs: tuple[str, ...] = ()

    @property
    def answerable(self) -> bool:
        return bool(self.answers) and not self.unanswerable


@dataclass(frozen=True)
class Dataset:
    name: str
    root: Path
    kind: Literal["qa", "relevance"]
    questions: list[EvalQuestion]

    @property
    def corpus(self) -> Path:
        return self.root / "corpus"

    @property
    def namespace(self) -> str:
        """The data set's own namespace, e.g. ``eval-squad-dev``."""
        return "eval-" + re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-")


def load_dataset(root: Path, sample: int | None = None, seed: int = 0) -> Dataset:
    """Read a data set; ``sample`` questions are drawn with ``random.Random(seed)``."""
    root = Path(root)
    if not (root / "corpus").is_dir():
        raise DatasetError(f"{root} has no corpus/ folder")
    for file_name, kind in (("questions.jsonl", "qa"), ("queries.jsonl", "relevance")):
        path = root / file_name
        if path.is_file():
            questions = [_question(path, number, line, kind)
                         for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
                         if line.strip()]
            break
    else:
        raise DatasetError(f"{root} has neither questions.jsonl (QA) nor queries.jsonl (relevance)")
    if not questions:
        raise DatasetError(f"{path} holds no questions")
    if sample is not None and sample < len(questions):
        questions = random.Random(seed).sample(questions, sample)
    return Dataset(root.resolve().name, root, kind, questions)  # type: ignore[arg-type]


def _question(path: Path, number: int, line: str, kind: str) -> EvalQuestion:
    try:
        row = json.loads(line)
        if kind == "qa":
            return EvalQuestion(str(row.get("id", number)), row["question"], tuple(row.get("answers", ())),
                                bool(row.get("unanswerable", False)))
        return EvalQuestion(str(row.get("id", number)), row["question"], relevant_docs=tuple(row["relevant_docs"]))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path}:{number}: not a {kind} question ({type(exc).__name__}: {exc})") from None
