"""qrag-qdrant: answers only from evidence that several independent retrievers agree on."""

from .api import CollectionInfo, QuorumRAG
from .config import Settings, load_settings
from .coordinator.conversation import Turn
from .errors import QragError
from .evidence import Answer, Evidence, EvidenceCluster, Passage
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
