"""The question as retrieval searches it: checked first, so every interface refuses the same input."""

from __future__ import annotations

import unicodedata

from ..errors import QuestionError

#: line breaks and tabs are text; every other control character (NUL, escape, ...) is not
TEXT_CONTROLS = frozenset("\t\n\r")


def checked_question(question: str, max_chars: int) -> str:
    """``question`` stripped, or QuestionError: empty, not valid text (a control character, a lone
    surrogate), or over ``max_chars`` (``retrieval.max_question_chars``)."""
    question = question.strip()
    if not question:
        raise QuestionError("the question is empty")
    if any(unicodedata.category(c) == "Cc" and c not in TEXT_CONTROLS for c in question):
        raise QuestionError("the question is not valid text: it holds a control character (such as NUL)")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise QuestionError("the question is not valid text: it holds a lone UTF-16 surrogate") from None
    if len(question) > max_chars:
        raise QuestionError(
            f"the question is {len(question)} characters long; the limit is {max_chars} (retrieval.max_question_chars)"
        )
    return question
