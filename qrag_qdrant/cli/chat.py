"""``qrag-qdrant chat``: a conversation in the terminal, on the path every interface uses:
each question is searched after the earlier turns (``QuorumRAG.retrieve(question, history)``)
and answered as it streams.

Line editing and history come from the standard library's ``readline`` where the platform has
it. ``/new`` starts over, ``/evidence`` shows the last answer's evidence, ``/help`` lists the
commands, and ``/quit`` or end of input (Ctrl-D) leaves.
"""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer

from ..api import QuorumRAG
from ..errors import QuestionError
from ..results import Answer
from ..retrieval.conversation import Turn
from ..store.filters import DocumentFilter
from .options import (
    AfterOption,
    AsGroupsOption,
    BeforeOption,
    ConfigOption,
    NamespaceOption,
    StoreOption,
    WhereOption,
    as_groups,
    document_filter,
    open_rag,
)
from .render import AnswerStream, friendly_errors, out, print_answer_checks, print_evidence

PROMPT = "you> "
HELP = "/new starts a new conversation, /evidence shows the last answer's evidence, /quit leaves (or Ctrl-D)"


class Chat:
    """One terminal conversation: its turns, and the last answer for ``/evidence``."""

    def __init__(
        self,
        rag: QuorumRAG,
        generate: bool,
        readers: tuple[str, ...] | None = None,
        documents: DocumentFilter | None = None,
    ):
        self.rag, self.generate, self.readers, self.documents = rag, generate, readers, documents
        self.turns: list[Turn] = []
        self.last: Answer | None = None

    def command(self, line: str) -> bool:
        """Runs a ``/`` command; False when the chat should end."""
        name = line.split()[0].lower()
        if name in ("/quit", "/exit"):
            return False
        if name == "/new":
            self.turns, self.last = [], None
            out.print("(new conversation)")
        elif name == "/evidence":
            if self.last is None:
                out.print("(no answer yet)")
            else:
                print_evidence(self.last, self.rag.settings.retrieval.quorum)
        else:
            out.print(HELP, markup=False)
        return True

    def ask(self, question: str) -> None:
        """Searches and answers ``question`` after the conversation so far, then adds both turns."""
        try:
            evidence = self.rag.retrieve(question, self.turns, self.readers, self.documents)
        except QuestionError as exc:
            out.print(f"error: {exc}", markup=False, style="red")
            return
        if evidence.searched != evidence.question:
            out.print(f"searched for: {evidence.searched}", markup=False, style="dim")
        if self.generate and not evidence.abstained and (note := self.rag.loading_note(evidence)):
            out.print(f"{note} ...", markup=False, style="dim")
        stream = AnswerStream()
        answer = (
            self.rag.answer(question, evidence=evidence, on_token=stream)
            if self.generate and not evidence.abstained
            else Answer.from_evidence(evidence)
        )
        if stream.started:
            out.print()
        if not self.generate or answer.mark in ("no evidence", "clarifying question"):
            print_evidence(answer, self.rag.settings.retrieval.quorum)
        print_answer_checks(answer)
        if answer.error:
            out.print(f"[red]error:[/red] {answer.error}", markup=False)
        self.last = answer
        # what the assistant said: the answer, the question it asked back, or that there is none
        reply = (
            answer.clarification.question
            if answer.clarification is not None
            else answer.answer
            if answer.answer and not answer.abstained
            else "No answer."
        )
        self.turns += [Turn("user", question), Turn("assistant", reply)]


@friendly_errors
def chat(
    no_generate: Annotated[bool, typer.Option("--no-generate", help="show the evidence only")] = False,
    groups: AsGroupsOption = None,
    where: WhereOption = None,
    after: AfterOption = None,
    before: BeforeOption = None,
    config: ConfigOption = None,
    store: StoreOption = None,
    namespace: NamespaceOption = None,
) -> None:
    """Hold a conversation: follow-up questions are searched with the earlier turns."""
    readers, documents = as_groups(groups), document_filter(where, after, before)
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 (input() edits lines and recalls earlier ones once it is loaded)
    with open_rag(config, store, namespace) as rag:
        session = Chat(rag, generate=not no_generate, readers=readers, documents=documents)
        out.print(f"Chatting with namespace {rag.settings.namespace!r}. {HELP}", markup=False)
        while True:
            try:
                line = input(PROMPT).strip()
            except (EOFError, KeyboardInterrupt):
                out.print()
                return
            if not line:
                continue
            if line.startswith("/"):
                if not session.command(line):
                    return
                continue
            session.ask(line)
