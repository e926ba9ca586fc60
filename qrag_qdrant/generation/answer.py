"""One answer from passages: fit them to the model's window, stream, then check the result.

The query path and ``eval --generate`` both answer through here, so what is measured is
what a user gets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..config import Settings
from ..errors import GenerationError
from ..evidence import Answer, Passage
from .base import GenerationBackend, Judge
from .prompt import fit_passages
from .verify import check_answer


def generate_answer(result: Answer, passages: Sequence[Passage], backend: Callable[[], GenerationBackend],
                    settings: Settings, on_token: Callable[[str], None] | None = None) -> None:
    """Fill ``result`` with the answer, its claims and warnings, or the error.

    ``backend`` is called once, inside the error handling, so a backend that cannot open
    becomes ``result.error`` like a failure mid-stream (then ``complete`` is false).
    """
    parts: list[str] = []
    sent: list[Passage] = list(passages)
    opened: GenerationBackend | None = None
    try:
        opened = backend()
        sent, dropped = fit_passages(result.question, passages, getattr(opened, "context_tokens", None),
                                     settings.llm.max_tokens)
        if dropped:
            result.warnings.append(f"the context was trimmed to fit the model's window: passages "
                                   f"{', '.join(f'[{p.citation}]' for p in dropped)} were not sent")
        for token in opened.stream(result.question, sent):
            parts.append(token)
            if on_token:
                on_token(token)
    except GenerationError as exc:
        result.error, result.complete = str(exc), False
    result.decline_probability = getattr(opened, "last_decline_probability", None)
    result.answer = "".join(parts) if parts else None
    if result.error is None and not (result.answer or "").strip():
        result.error, result.answer = "the model returned an empty answer", None
    if result.error is None:
        judge = opened if settings.generation.judge and isinstance(opened, Judge) else None
        check_answer(result, sent, judge, settings.generation.unsupported)
