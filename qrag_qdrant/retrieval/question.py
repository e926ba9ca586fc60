"""The question as retrieval searches it: checked first, so every interface refuses the same input."""

from __future__ import annotations

from ..errors import QuestionError


def checked_question(question: str, max_chars: int) -> str:
    """``question`` stripped, or QuestionError: empty, not valid text, or over ``max_chars``
    (``retrieval.max_question_chars``)."""
    question = question.strip()
    if not question:
        raise QuestionError("the question is empty")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError:
        raise QuestionError("the question is not valid text: it holds a lone UTF-16 surrogate") from None
    if len(question) > max_chars:
        raise QuestionError(
            f"the question is {len(question)} characters long; the limit is {max_chars} (retrieval.max_question_chars)"
        )
    return question
