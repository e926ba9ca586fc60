"""``qrag-qdrant chat`` driven through a pseudo-terminal, as a person types: a two-turn exchange
whose follow-up is searched as its rewrite, ``/evidence``, ``/new``, line editing, and Ctrl-D."""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .cli_helpers import run
from .conversation_cases import FIRST, FOLLOW_UP, STAND_ALONE
from .ollama_standin import ollama_standin

pytestmark = pytest.mark.slow  # (-m "not slow": CONTRIBUTING.md)

if sys.platform == "win32":
    pytest.skip("pseudo-terminals are POSIX", allow_module_level=True)

CLI = str(Path(sys.executable).parent / "qrag-qdrant")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r")
#: the longest any step may take on a slow shared box; each wait ends as soon as its text is seen
PATIENCE_S = 180


class Terminal:
    """A process on a pseudo-terminal: what it printed, read as it arrives."""

    def __init__(self, args: list[str], env: dict[str, str]):
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.seen = ""

    def expect(self, text: str) -> str:
        """Everything printed up to and including ``text``, once it appears; the rest is kept."""
        deadline = time.monotonic() + PATIENCE_S
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never printed {text!r}; got {self.seen[-2000:]!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal
                    chunk = b""
                assert chunk, f"the process ended before printing {text!r}; got {self.seen[-2000:]!r}"
                self.seen += ANSI.sub("", chunk.decode(errors="replace"))
        end = self.seen.index(text) + len(text)
        printed, self.seen = self.seen[:end], self.seen[end:]
        return printed

    def type(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def exit_code(self) -> int:
        """The process's exit status once it has ended, reading what it prints meanwhile: a
        terminal nobody reads fills up and stops its writer."""
        deadline = time.monotonic() + PATIENCE_S
        while self.process.poll() is None:
            left = deadline - time.monotonic()
            assert left > 0, f"the process did not end; it printed {self.seen[-2000:]!r}"
            ready, _, _ = select.select([self.master], [], [], min(left, 1.0))
            if ready:
                try:
                    chunk = os.read(self.master, 65536)
                except OSError:  # the process closed the terminal: it is ending
                    chunk = b""
                self.seen += ANSI.sub("", chunk.decode(errors="replace"))
                if not chunk:
                    break
        return self.process.wait(PATIENCE_S)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        os.close(self.master)


def test_a_conversation_in_the_terminal(corpus, tmp_path):
    store = tmp_path / "store"
    assert run("ingest", str(corpus), "--store", str(store)).exit_code == 0
    with ollama_standin(tokens=["a hot spot ", "[1]"], rewrites={FOLLOW_UP: STAND_ALONE}) as ollama:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "TERM": "xterm",
            "NO_COLOR": "1",
            "QRAG_CACHE_DIR": os.environ["QRAG_CACHE_DIR"],
            "QRAG_OLLAMA_HOST": ollama.host,
            "QRAG_GENERATION_BACKEND": "ollama",
            "QRAG_GENERATION_JUDGE": "false",
        }
        terminal = Terminal([CLI, "chat", "--store", str(store)], env)
        try:
            terminal.expect("you> ")
            terminal.type(FIRST + "\r")
            first = terminal.expect("you> ")
            # a follow-up typed with line editing: its end first, then Ctrl-A and its start
            terminal.type("grow over?\x01What did it \r")
            second = terminal.expect("you> ")
            terminal.type("/evidence\r")
            evidence = terminal.expect("you> ")
            terminal.type("/new\r")
            terminal.expect("(new conversation)")
            terminal.type(FOLLOW_UP + "\r")
            fresh = terminal.expect("you> ")
            terminal.type("\x04")  # Ctrl-D leaves
            assert terminal.exit_code() == 0
        finally:
            terminal.close()
    assert "a hot spot [1]" in first and "searched for" not in first
    assert f"searched for: {STAND_ALONE}" in second and "a hot spot [1]" in second
    assert "volcanoes.md" in evidence
    assert "searched for" not in fresh  # a new conversation: its first question is searched as typed
    rewrites = [r for r in ollama.requests if "<conversation>" in r["messages"][-1]["content"]]
    assert len(rewrites) == 1 and FIRST in rewrites[0]["messages"][-1]["content"]
