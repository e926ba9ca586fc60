"""Running the CLI and the repository's scripts in-process, checking their errors, and holding a
store from another process."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from qrag_qdrant.cli.app import app

#: a question the sample corpus answers (the honeybees' waggle dance)
QUESTION = "How does a honeybee forager tell her sisters the direction and distance of flowers?"


REPO = Path(__file__).resolve().parent.parent


def load_script(name: str):
    """``scripts/<name>.py`` as a module, to call its functions."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env=env)


def assert_clean_error(result, code: int, *fragments: str) -> None:
    """Exit code, no traceback, exactly one ``error:`` line holding every fragment."""
    assert result.exit_code == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


@contextmanager
def namespace_held_elsewhere(store: Path, namespace: str = "default") -> Iterator[None]:
    """Another process that opens the store's namespace and keeps it."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time; from qrag_qdrant.store.edge import EdgeStore; "
            f"s = EdgeStore({str(store)!r}, {namespace!r}); print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        yield
    finally:
        holder.kill()
        holder.wait()
