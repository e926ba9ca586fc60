"""The README's output blocks are what its commands print on a fresh store (scripts/readme_output.py)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from qrag_qdrant.config.settings import load_settings
from qrag_qdrant.generation import embedded_available

from .cli_helpers import load_script

REPO = Path(__file__).resolve().parent.parent


def readme_output():
    return load_script("readme_output")


def test_a_changed_output_block_is_found():
    module = readme_output()
    text = "<!-- output: query -->\n```text\n$ qrag-qdrant query x\nold\n```\n<!-- /output -->\n"
    assert module.with_outputs(text, {"query": "$ qrag-qdrant query x\nold\n"}) == text
    assert "new" in module.with_outputs(text, {"query": "$ qrag-qdrant query x\nnew\n"})


@pytest.mark.slow
@pytest.mark.skipif(not embedded_available(load_settings()), reason="needs the packaged model (local-llm extra)")
def test_the_readme_shows_what_its_commands_print():
    module = readme_output()
    readme = module.README.read_text()
    current = module.with_outputs(readme, module.run_all())
    diff = "".join(difflib.unified_diff(readme.splitlines(True), current.splitlines(True), "README.md", "a real run"))
    assert current == readme, f"run python scripts/readme_output.py:\n{diff}"
