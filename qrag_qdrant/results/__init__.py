"""The typed results of a query: what ``--json`` prints and what the Python API returns.

- ``evidence``: retrieval's ``Evidence`` (clusters of numbered ``Passage``s, the gate's confidence,
  a question's parts) and the stage timings it carries;
- ``answer``: the ``Answer`` with its ``Claim``s, what the checks found of each, and its mark;
- ``marks``: the mark and the checks' findings in words, the same in every interface.
"""

from .answer import Answer, AnswerAgreement, Claim, TokenUsage
from .evidence import (
    AbstainReason,
    Clarification,
    ConversationStep,
    Evidence,
    EvidenceCluster,
    Passage,
    QueryExpansion,
    QuestionPartEvidence,
    ValueRelation,
    file_name_words,
    timed,
    uncited_part,
)
from .marks import Mark

__all__ = [
    "AbstainReason",
    "Answer",
    "AnswerAgreement",
    "Claim",
    "Clarification",
    "ConversationStep",
    "Evidence",
    "EvidenceCluster",
    "Mark",
    "Passage",
    "QueryExpansion",
    "QuestionPartEvidence",
    "TokenUsage",
    "ValueRelation",
    "file_name_words",
    "timed",
    "uncited_part",
]
