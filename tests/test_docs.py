"""The docs speak of the product as it is: generated reference pages match the code, every config
key says what it does, the README stays short, and no development diary leaks into the repository."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel

from qrag_qdrant.config.settings import RetrieverSpec, Settings

from .cli_helpers import load_script

REPO = Path(__file__).resolve().parent.parent

#: a development diary's phrases: sessions by number or by when, issue numbers, dated diary headings.
#: "HTTP session", "session.py" and "a session's token" stay legal.
HISTORY = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[a-z]+teenth|"
    r"twentieth|\d+(?:st|nd|rd|th)|this|last|next|previous|earlier|later|that|same) session\b"
    r"|\bsessions? \d+\b"
    r"|\bissues? #?\d+\b|\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?) #\d+\b"
    r"|^#+ .*\(\d{4}-\d{2}-\d{2}[^)]*\)"
    # words that date the product: a rule or default "of today" against an earlier one, the research
    # tool it started from, a change "as before", the machine a figure was once measured on, a commit
    r"|\btoday'?s\b(?! usage)|\b(?:in |of )?the origin(?:'s)?\b|(?:#|//)\s*origin: |\bas before\b"
    r"|\bthis (?:\d+-core )?machine\b|\bcommit [0-9a-f]{7,40}\b|\bof that time\b"
    r"|\b(?:default|pipeline|rule|version) of the time\b",
    re.IGNORECASE | re.MULTILINE,
)
#: files whose job is history, that are not ours to word, or (this one) that hold the diary phrases the
#: pattern must catch
HISTORY_ALLOWED = {"CHANGELOG.md", "LICENSE", Path(__file__).name}
#: folders whose job is the past: the experiments the benchmarks compare with
HISTORY_FOLDERS = ("benchmarks/experiments/",)
TEXT_SUFFIXES = {
    ".md",
    ".py",
    ".toml",
    ".txt",
    ".yml",
    ".yaml",
    ".cfg",
    ".ini",
    ".json",
    ".html",
    ".js",
    ".css",
    ".dot",
    ".svg",
    ".sh",
    "",
}


def _reference_module():
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_pages_are_what_the_code_gives_now():
    assert _reference_module().stale_pages() == [], "run: python scripts/docs_reference.py"


def test_a_stale_reference_page_is_found(tmp_path, monkeypatch):
    module = _reference_module()
    for name, render in module.PAGES.items():
        (tmp_path / name).write_text(render())
    monkeypatch.setattr(module, "REFERENCE", tmp_path)
    assert module.stale_pages() == []
    (tmp_path / "config.md").write_text((tmp_path / "config.md").read_text() + "\nedited by hand\n")
    assert module.stale_pages() == ["config.md"]


def test_every_config_key_says_what_it_does():
    undescribed = [f"retrievers.{key}" for key, field in RetrieverSpec.model_fields.items() if not field.description]
    for name, field in Settings.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            undescribed += [f"{name}.{key}" for key, f in section.model_fields.items() if not f.description]
        elif not field.description:
            undescribed.append(name)
    assert undescribed == []


def test_the_readme_is_short_and_links_to_the_docs():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for page in ("getting-started.md", "concepts.md", "teams.md", "benchmarks.md", "reference/cli.md"):
        assert f"docs/{page}" in readme and (REPO / "docs" / page).is_file()


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [
        REPO / name
        for name in listed.splitlines()
        if Path(name).name not in HISTORY_ALLOWED
        and not name.startswith(HISTORY_FOLDERS)
        and Path(name).suffix in TEXT_SUFFIXES
        and (REPO / name).is_file()
    ]


def history_phrases(text: str) -> list[str]:
    return [match.group(0) for match in HISTORY.finditer(text)]


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs the git checkout to list the tracked files")
def test_no_tracked_file_speaks_of_the_development_history():
    found = {
        path.relative_to(REPO).as_posix(): phrases
        for path in tracked_text_files()
        if (phrases := history_phrases(path.read_text(encoding="utf-8", errors="replace")))
    }
    assert found == {}, "history belongs in CHANGELOG.md and commit messages"


@pytest.mark.parametrize(
    "diary",
    [
        "measured in the nineteenth session",
        "as this session found",
        "see issue 29",
        "fixed in issue #46",
        "### Two collections (2026-11-24, fourteenth session): kept",
        "## Results (2026-11-22)",
        "the 3rd session",
        "closes #12",
        "among the rules at least as precise as today's",
        "# The default pipeline: the origin's (QuorumRAG)",
        "rrf_k = 2  # origin: 60",
        "Not in the origin: the context is held to 500 words",
        "the service answers through Ollama as before",
        "measured on this 2-core machine",
        "where this machine ran it",
        "(commit 1148243 records its words)",
        "the default of that time",
        "fitted on the default pipeline of the time",
    ],
)
def test_the_history_pattern_catches_a_diary_phrase(diary):
    assert history_phrases(diary)


@pytest.mark.parametrize(
    "product",
    [
        "the HTTP session is closed",
        "embedding/session.py builds the ONNX session",
        "a session's token expires",
        "one session per request",
        "colour #fff and #a54a4a",
        "#1 score 1.069 · support 4/4 retrievers",
        "see [the gate](#the-evidence-gate)",
        "measured on 2026-11-24 on 2 cores",
        "adds today's usage per namespace",
        "the issuer's origin only",
        "a web origin",
        "the original tool",
        "the strongest engine of the time",
    ],
)
def test_the_history_pattern_leaves_the_product_alone(product):
    assert history_phrases(product) == []


def _docs_check():
    return load_script("docs_check")


def test_every_example_in_the_docs_checks_against_the_code():
    problems = _docs_check().check()
    assert problems == [], "\n".join(map(str, problems))


BROKEN = """
```toml
[retrieval]
quorum = 9
```

```bash
qrag-qdrant query "x" --no-such-flag
qrag-qdrant ingest ./docs --prune && qrag-qdrant querry "x"
QRAG_RETRIEVAL_QUORUM=3 qrag-qdrant query --json "fine"
```

Set `retrieval.min_confidnce`, or `QRAG_RETRIEVAL_QUORUMS`; ask `POST /v1/queries`.
Fine: `retrieval.min_confidence`, `QRAG_SERVICE_QUOTAS_TEAM_A`, `GET /v1/jobs/{id}`, `qdrant.env`,
`generation.register_backend`.
"""


def test_the_docs_check_finds_a_broken_toml_block_command_key_variable_and_path(tmp_path, monkeypatch):
    module = _docs_check()
    page = tmp_path / "docs" / "page.md"
    page.parent.mkdir()
    page.write_text(BROKEN)
    monkeypatch.setattr(module, "REPO", tmp_path)
    found = [(p.line, p.message.split(":")[0]) for p in module.check([page])]
    messages = " | ".join(p.message for p in module.check([page]))
    assert len(found) == 6, messages
    assert "TOML block does not load" in messages and "quorum" in messages
    assert "--no-such-flag" in messages and "querry" in messages
    assert "no config key retrieval.min_confidnce" in messages
    assert "no setting reads QRAG_RETRIEVAL_QUORUMS" in messages
    assert "the service has no route /v1/queries" in messages


def test_every_test_the_security_page_cites_exists():
    """The security page's promises are each held by a named test: a renamed or removed test
    leaves a promise unbacked, and fails here."""
    import ast

    cited = re.findall(r"`(test_[a-z_]+\.py)::(test_[a-z0-9_]+)`", (REPO / "docs" / "security.md").read_text())
    assert len(cited) >= 15
    missing = []
    for module, name in cited:
        tree = ast.parse((REPO / "tests" / module).read_text())
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        if name not in defined:
            missing.append(f"{module}::{name}")
    assert not missing, missing
