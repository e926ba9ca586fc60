"""qrag-qdrant: answers only from evidence that several independent retrievers agree on."""

from .api import CollectionInfo, QuorumRAG
from .config.settings import Settings, load_settings
from .errors import QragError
from .results import Answer, Evidence, EvidenceCluster, Passage
from .retrieval.conversation import Turn
from .version import __version__

__all__ = [
    "Answer",
    "CollectionInfo",
    "Evidence",
    "EvidenceCluster",
    "Passage",
    "QragError",
    "QuorumRAG",
    "Settings",
    "Turn",
    "__version__",
    "load_settings",
]
