"""What the shared model did, for ``/metrics``: answers and tokens per model and server.

Labels are the service's own backend (one model, one server), never a namespace: no figure here
tells one team of another's use, and the label set stays as small as the backends configured.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass

from ..generation.scheduler import QueueStats
from ..results import Answer

#: counter name -> help text
COUNTERS = {
    "answers": "answers the model wrote (abstentions before the model not counted)",
    "prompt_tokens": "prompt tokens the model read, as its backend counted them",
    "completion_tokens": "tokens the model wrote, as its backend counted them",
}


@dataclass
class GenerationCounts:
    answers: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class GenerationCounters:
    """Thread-safe counters, fed by every answer the service's pipelines finish."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], GenerationCounts] = defaultdict(GenerationCounts)

    def record(self, answer: Answer) -> None:
        if answer.model is None or answer.error is not None:  # not asked (retrieval abstained), or failed
            return
        with self._lock:
            counts = self._counts[(answer.model, answer.model_server or "")]
            counts.answers += 1
            if answer.usage is not None:
                counts.prompt_tokens += answer.usage.prompt_tokens
                counts.completion_tokens += answer.usage.completion_tokens

    def exposition(self) -> str:
        """The counters in Prometheus' text format."""
        with self._lock:
            counts = dict(self._counts)
        lines = []
        for name, help_text in COUNTERS.items():
            lines += [
                f"# HELP qrag_generation_{name}_total {help_text}",
                f"# TYPE qrag_generation_{name}_total counter",
            ]
            for (model, server), count in sorted(counts.items()):
                labels = f'model="{_label(model)}",server="{_label(server)}"'
                lines.append(f"qrag_generation_{name}_total{{{labels}}} {getattr(count, name)}")
        return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def queue_exposition(stats: QueueStats) -> str:
    """The model's queue in Prometheus' text format: answers waiting now, and those served, dropped
    (their client left while they waited), refused (503), and the seconds the served ones waited."""
    lines = [
        "# HELP qrag_generation_queue_waiting answers waiting for the model now, all teams together",
        "# TYPE qrag_generation_queue_waiting gauge",
        f"qrag_generation_queue_waiting {stats.waiting}",
    ]
    for name, value, help_text in (
        ("served", stats.served, "answers that reached the model after their turn came"),
        ("dropped", stats.dropped, "answers whose client left while they waited: they never reached the model"),
        ("refused", stats.refused, "answers refused with 503 because the queue was full"),
        ("wait_seconds", round(stats.wait_seconds, 3), "seconds the served answers waited for the model, together"),
    ):
        metric = f"qrag_generation_queue_{name}_total"
        lines += [f"# HELP {metric} {help_text}", f"# TYPE {metric} counter", f"{metric} {value}"]
    return "\n".join(lines) + "\n"
