"""An MCP server, so agents can use quorum evidence as a tool: over stdio for a local agent
(``qrag-qdrant mcp``), and over streamable HTTP on the service (``/v1/mcp``, the same team keys).

Built on the official ``mcp`` SDK (its ``MCPServer``). The tools call the same pipeline as the
CLI and the service: ``search_evidence`` (no model call but a follow-up's rewrite), ``ask`` (the
checked answer, or the abstention and its reason), ``list_documents`` and ``list_collections``. ``search_evidence``
and ``ask`` take the conversation's earlier turns as ``history``.
"""

# No ``from __future__ import annotations``: the SDK reads the tools' annotations (``Context``,
# imported where the tools are built) as objects when it registers them.
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol

from typing_extensions import TypedDict  # pydantic reads it on Python < 3.12

from .errors import ConfigError, QragError
from .plugins import install_hint

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context, MCPServer

    from .api import CollectionInfo, QuorumRAG
    from .ingest.documents import DocumentPage
    from .results import Answer, Evidence

INSTALL_HINT = install_hint("mcp")
INSTRUCTIONS = (
    "Search a team's own documents with quorum retrieval: several independent retrievers (dense and BM25 "
    "search, each over more than one chunking of the documents) must agree before a passage counts as evidence. "
    "Use search_evidence to get the agreed passages with their sources, locations, support and a confidence; use "
    "ask for a short cited answer written from them, marked supported or not; list_documents and "
    "list_collections say what the namespace holds. An abstention is an answer: it means the documents do not "
    "hold reliable evidence for the question, so do not guess or retry with the same words."
)


SEARCH_EVIDENCE = (
    "Find the passages of the team's documents that several independent retrievers agree answer the "
    "question, best first, with each passage's source, location and citation number, each cluster's support "
    "(how many retrievers found it) and the evidence gate's confidence. No answer is written. If abstained "
    "is true, the documents hold no reliable evidence (abstain_reason says why). In a conversation, pass the "
    "earlier turns as history: a follow-up is searched as the stand-alone question searched_for shows. filter "
    "narrows the documents searched by publisher, author, publication date (after, before) or path prefix."
)
ASK = (
    "Answer the question from the team's documents with a short answer and [n] citations of the agreed "
    "passages, or abstain. abstained true means no reliable answer is in the documents (abstain_reason: "
    "no_quorum, low_confidence, model_declined or unsupported_answer): report that rather than guessing. In a "
    "conversation, pass the earlier turns as history; filter narrows the documents as for search_evidence."
)


class Namespace(Protocol):
    """What the tools need of one team's namespace: the CLI's ``QuorumRAG`` or the service's."""

    def retrieve(
        self, question: str, history: "Iterable[Any]" = (), where: "dict[str, Any] | None" = None
    ) -> "Evidence": ...

    def answer(self, evidence: "Evidence", cancelled: "threading.Event | None" = None) -> "Answer": ...

    def collections(self) -> "list[CollectionInfo]": ...

    def documents(self, offset: int, limit: int) -> "DocumentPage": ...


class Turn(TypedDict):
    """One earlier message of the conversation, oldest first."""

    role: Literal["user", "assistant"]
    content: str


class Filter(TypedDict, total=False):
    """Only the documents that pass: each field narrows."""

    #: a name, or a list of names any of which passes
    publisher: str | list[str]
    author: str | list[str]
    #: ISO 8601: published at or after
    after: str
    #: ISO 8601: published before
    before: str
    #: a path prefix of the documents' sources
    path: str


#: the namespace a tool call runs in, from its context (stdio: the configured one; HTTP: the key's)
Resolver = Callable[["Context"], Namespace]


def build_server(resolve: Resolver) -> "MCPServer":
    try:
        from mcp.server.mcpserver import Context, MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        raise ConfigError(f"the MCP server needs the mcp SDK: {INSTALL_HINT}") from None
    server = MCPServer("qrag-qdrant", instructions=INSTRUCTIONS)

    @contextmanager
    def told(ctx: Context) -> Iterator[Namespace]:
        """The caller's namespace; an error of ours reaches the agent as its one line."""
        try:
            yield resolve(ctx)
        except QragError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(description=SEARCH_EVIDENCE)
    async def search_evidence(
        question: str,
        ctx: Context,
        clusters: int | None = None,
        history: list[Turn] | None = None,
        filter: Filter | None = None,
    ) -> dict[str, Any]:
        import anyio

        with told(ctx) as namespace:
            found = await anyio.to_thread.run_sync(
                lambda: namespace.retrieve(question, history or (), dict(filter) if filter else None)
            )
            shown = found.model_dump(mode="json")
        if clusters is not None:
            shown["clusters"] = shown["clusters"][: max(clusters, 1)]
        return shown

    @server.tool(description=ASK)
    async def ask(
        question: str,
        ctx: Context,
        history: list[Turn] | None = None,
        filter: Filter | None = None,
    ) -> dict[str, Any]:
        import anyio

        cancelled = threading.Event()  # set when the call is cancelled (its client left): the model stops
        with told(ctx) as namespace:
            try:
                answer = await anyio.to_thread.run_sync(
                    lambda: namespace.answer(
                        namespace.retrieve(question, history or (), dict(filter) if filter else None), cancelled
                    ),
                    abandon_on_cancel=True,
                )
            except anyio.get_cancelled_exc_class():
                cancelled.set()
                raise
        return answer.model_dump(mode="json")

    @server.tool(
        description="The team's documents, sorted by source, a page at a time: each with its size, chunks per "
        "collection, content hash, and when and by which key it was ingested; total is how many there are."
    )
    def list_documents(ctx: Context, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        with told(ctx) as namespace:
            return namespace.documents(offset, limit).model_dump(mode="json")

    @server.tool(description="The team's collections: one per chunking, with their point counts and retrievers.")
    def list_collections(ctx: Context) -> list[dict[str, Any]]:
        with told(ctx) as namespace:
            return [info.model_dump(mode="json") for info in namespace.collections()]

    return server


class LocalNamespace:
    """A ``QuorumRAG`` as the tools' namespace (``qrag-qdrant mcp`` over stdio)."""

    def __init__(self, rag: "QuorumRAG", readers: "tuple[str, ...] | None" = None):
        """``readers``: the groups the tools read as (``--as-groups``); None: every document."""
        self.rag, self.readers = rag, readers

    def retrieve(
        self, question: str, history: "Iterable[Any]" = (), where: "dict[str, Any] | None" = None
    ) -> "Evidence":
        return self.rag.retrieve(question, history, self.readers, where)

    def answer(self, evidence: "Evidence", cancelled: "threading.Event | None" = None) -> "Answer":
        return self.rag.answer(evidence.question, evidence=evidence, cancelled=cancelled)

    def collections(self) -> "list[CollectionInfo]":
        return self.rag.collections(readers=self.readers)

    def documents(self, offset: int, limit: int) -> "DocumentPage":
        return self.rag.documents(self.readers).page(offset, limit)
