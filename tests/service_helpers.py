"""What the service's tests share: a question team a's documents answer, a free port, and readers of
the service's replies (sources, Server-Sent Events, a finished job)."""

from __future__ import annotations

import json
import socket

from .waiting import wait_until

BEES = "How do honeybee foragers tell their sisters where the flowers are?"
TEAM_B_DOC = (
    "The Antikythera mechanism is an ancient Greek hand-powered orrery, recovered from a shipwreck "
    "in 1901, that modelled the motions of the Sun and Moon with bronze gears. "
) * 3


def sources(evidence: dict) -> set[str]:
    return {p["source"] for cluster in evidence["clusters"] for p in cluster["passages"]}


def events(response) -> list[tuple[str, dict]]:
    """Server-Sent Events as (event, data) pairs."""
    parsed = []
    for block in response.text.strip().split("\n\n"):
        if all(line.startswith(":") for line in block.splitlines()):  # a keep-alive comment
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        parsed.append((fields["event"], json.loads(fields["data"])))
    return parsed


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def finished(client, job: dict, headers: dict) -> dict:
    """The job once it has ended: polled until its state says so (``waiting.DEADLINE_SECONDS`` at most)."""

    def ended() -> dict | None:
        now = client.get(f"/v1/jobs/{job['id']}", headers=headers).json()
        return None if now["state"] in ("queued", "running") else now

    return job if job["state"] not in ("queued", "running") else wait_until(ended, f"job {job['id']} ended")


def metric_value(exposition: str, name: str, **labels: str) -> float | None:
    """A sample of ``/metrics`` read with prometheus_client's own parser (None when it is not there)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return float(sample.value)
    return None
