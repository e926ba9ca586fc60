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


def test_the_docs_check_finds_a_variable_the_code_reads_and_no_doc_names(tmp_path, monkeypatch):
    """A ``QRAG_*`` the package reads itself is no setting: a page may name it, and some page must."""
    module = _docs_check()
    (tmp_path / "qrag_qdrant").mkdir()
    (tmp_path / "qrag_qdrant" / "switch.py").write_text('import os\nON = os.environ.get("QRAG_SECRET_SWITCH")\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("# qrag\n")
    monkeypatch.setattr(module, "REPO", tmp_path)
    assert [str(p) for p in module.check()] == [
        "qrag_qdrant/switch.py:2: QRAG_SECRET_SWITCH is read here and named in no doc"
    ]
    (tmp_path / "docs" / "faq.md").write_text("Set `QRAG_SECRET_SWITCH=1` for a switch.\n")
    assert module.check() == []


def test_the_docs_check_holds_the_package_map_to_the_package(tmp_path):
    module = _docs_check()
    package = tmp_path / "pkg"
    (package / "stage").mkdir(parents=True)
    for name in ("__init__.py", "api.py", "stage/__init__.py", "stage/steps.py"):
        (package / name).write_text("")
    page = "# Design\n\n## Map of the package\n\n```\npkg/\n  api.py\n  stage/  steps.py, gone.py\n```\n"
    assert [str(p) for p in module.check_map(page, package)] == [
        "docs/design.md:8: the package map names gone.py, which the package does not have"
    ]
    (package / "stage" / "new.py").write_text("")
    assert "the package map does not name new.py" in [p.message for p in module.check_map(page, package)]
    assert module.check_map(page.replace("gone.py", "new.py"), package) == []


def test_the_docs_check_type_checks_each_python_block_and_names_its_line():
    module = _docs_check()
    page = (
        "# Example\n\n```python\nfrom qrag_qdrant import QuorumRAG\n\n"
        'rag = QuorumRAG.from_config(store=KEY)\ncount: int = rag.retrieve("q?")\n```\n'
    )
    problems = module.check_python({"docs/example.md": page})
    assert [(p.file, p.line) for p in problems] == [("docs/example.md", 7)], problems
    assert 'Incompatible types in assignment (expression has type "Evidence"' in problems[0].message
    fixed = page.replace("count: int = ", "evidence = ")
    assert module.check_python({"docs/example.md": fixed}) == []  # KEY, left to the reader, is declared


def prose_pages() -> list[Path]:
    """Every page a reader may open: the docs site (references included) and the repository's own."""
    return [
        *sorted((REPO / "docs").rglob("*.md")),
        *(REPO / name for name in ("README.md", "CONTRIBUTING.md", "SECURITY.md")),
    ]


def test_every_test_a_page_cites_exists():
    """The docs' promises are held by named tests (the security page's each, the reliability
    page's failure table): a renamed or removed test leaves a promise unbacked, and fails here."""
    import ast

    pages = prose_pages()
    cited = {
        (page.name, module, name)
        for page in pages
        for module, name in re.findall(r"\b(test_[a-z0-9_]+)(?:\.py)?::(test_[a-z0-9_]+)", page.read_text())
    }
    assert len({c for c in cited if c[0] == "security.md"}) >= 15
    assert len({c for c in cited if c[0] == "reliability.md"}) >= 10
    missing = []
    for page, module, name in sorted(cited):
        path = REPO / "tests" / f"{module}.py"
        tree = ast.parse(path.read_text()) if path.is_file() else ast.Module(body=[], type_ignores=[])
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        if name not in defined:
            missing.append(f"{page}: {module}::{name}")
    assert not missing, missing


def test_every_path_a_page_names_exists():
    """A module, folder, script or benchmark a page names by its path in the repository is there:
    a moved module leaves the page pointing at nothing, and fails here."""
    pages = prose_pages()
    named = {
        (page.name, path.rstrip("/."))
        for page in pages
        for path in re.findall(
            r"`((?:qrag_qdrant|tests|benchmarks|scripts|examples|deploy)/[\w./-]*)`", page.read_text()
        )
    }
    assert len(named) >= 20
    yours = (".gguf",)  # a model file the reader brings (deploy/models/model.gguf), not one the repository holds
    missing = sorted(
        f"{page}: {path}"
        for page, path in named
        if "*" not in path and not path.endswith(yours) and not (REPO / path).exists()
    )
    assert not missing, missing


def test_the_pages_that_list_the_abstain_reasons_list_every_one():
    """The abstention table and the ``--json`` field list name each ``AbstainReason``, and no other."""
    from typing import get_args

    from qrag_qdrant.results import AbstainReason

    reasons = set(get_args(AbstainReason))
    concepts = (REPO / "docs" / "concepts.md").read_text()
    table = concepts[concepts.index("## Abstention") : concepts.index("## The answer's checks")]
    assert set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE)) - {"abstain_reason"} == reasons
    started = (REPO / "docs" / "getting-started.md").read_text()
    listed = started[started.index("`abstain_reason` (") :].split(")", 1)[0]
    assert set(re.findall(r"`([a-z_]+)`", listed)) - {"abstain_reason"} == reasons


def test_contributing_lists_the_checks_ci_runs():
    """Each check ``.ci/run`` runs (a ``.venv/bin/`` command after the install) is in
    CONTRIBUTING's list, by its command and first argument."""
    run = (REPO / ".ci" / "run").read_text()
    commands = [
        line.split() for line in run.splitlines() if line.startswith(".venv/bin/") and "pip install" not in line
    ]
    checks = {" ".join(words[: 3 if words[1:2] == ["-m"] else 2]).removeprefix(".venv/bin/") for words in commands}
    assert len(checks) >= 8
    contributing = (REPO / "CONTRIBUTING.md").read_text()
    listed = contributing[contributing.index("## Check") :].split("\n## ", 1)[0]
    missing = sorted(check for check in checks if check not in listed)
    assert not missing, missing
