"""The bodies the service's routes read, apart from the routes: the service's state and several
routes share them. Strict: a field takes its own JSON type only (``"generate": "yes"`` is a 422,
not an answer), and an unknown field is refused."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..store.filters import DocumentFilter


class HistoryTurn(BaseModel):
    """One earlier message of the conversation; an assistant turn is what the client says was
    answered (unverified: it is only read to make the question stand-alone)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    role: Literal["user", "assistant"]
    content: str


class QueryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    question: str
    history: list[HistoryTurn] = Field(
        default_factory=list,
        description="the conversation's earlier turns, oldest first: a follow-up is searched as a stand-alone "
        "question made from them (retrieval.conversation.mode; bounded by retrieval.conversation.max_history_*)",
    )
    generate: bool = Field(True, description="answer with the generation backend; false: the evidence only")
    stream: bool = Field(False, description="Server-Sent Events: evidence, then answer tokens, then done")
    filter: DocumentFilter | None = Field(
        None,
        strict=False,
        description="only documents that pass: publisher, author (each a name or a list), after, before (ISO 8601), "
        "path (a prefix); none passing is a 404 no_document_passes_filter",
    )


class IngestPathRequest(BaseModel):
    """An admin's ingest of a folder on the server's own disk."""

    model_config = ConfigDict(extra="forbid", strict=True)

    path: str = Field(max_length=4096, pattern=r"^[^\x00]*$", description="a folder or file on the server")
    prune: bool = Field(False, description="remove the chunks of files that are gone from the folder")
    rebuild: bool = Field(False, description="build fresh collections, then switch to them at once")
    readers: list[str] | None = Field(
        None,
        description="the groups that may read every document ingested; unset: a document keeps the readers it has, "
        "a new one is read by everyone in the namespace",
    )


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    query_id: str = Field(max_length=64)
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=2000, pattern=r"^[^\x00]*$", description="no NUL characters")


#: POST /v1/ingest reads its body itself (files, or a path as JSON); this documents both
INGEST_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["files"],
                    "properties": {
                        "files": {
                            "type": "array",
                            "items": {"type": "string", "format": "binary"},
                            "description": "documents; each file name (may hold folders) becomes its source",
                        },
                        "readers": {
                            "type": "string",
                            "description": "the groups that may read the uploaded documents, comma-separated "
                            "(hr,legal); unset: a document keeps the readers it has, a new one is read by everyone "
                            "in the namespace",
                        },
                    },
                }
            },
            "application/json": {"schema": IngestPathRequest.model_json_schema()},
        },
    }
}


class ReadersRequest(BaseModel):
    """Who may read a document from now on."""

    model_config = ConfigDict(extra="forbid", strict=True)

    readers: list[str] = Field(
        max_length=64, description="the groups that may read it; an empty list: everyone in the namespace"
    )
