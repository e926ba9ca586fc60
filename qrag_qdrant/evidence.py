"""The typed results of a query: what ``--json`` prints and what the Python API returns."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Passage(BaseModel):
    """A contiguous piece of one source; ``start``/``end`` are character offsets into it."""

    citation: int = Field(description="the [n] the prompt and the answer use")
    source: str
    start: int
    end: int
    text: str


class EvidenceCluster(BaseModel):
    rank: int
    score: float
    support: int = Field(description="distinct retrievers that found this evidence")
    retrievers: list[str]
    passages: list[Passage]


class Evidence(BaseModel):
    question: str
    abstained: bool
    retrievers: int = Field(description="retrievers consulted; support is out of this many")
    clusters: list[EvidenceCluster]
    timings_ms: dict[str, float]

    @property
    def passages(self) -> list[Passage]:
        return [passage for cluster in self.clusters for passage in cluster.passages]


class Answer(Evidence):
    answer: str | None = None
    complete: bool = Field(True, description="false when the answer stream was cut off")
    error: str | None = None
