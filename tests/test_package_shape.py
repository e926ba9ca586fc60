"""The package reads as the pipeline: few entries at its top level, no import circle between its
modules, and no stage that imports a stage importing it (scripts/import_graph.py)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import qrag_qdrant

REPO = Path(__file__).resolve().parent.parent
PACKAGE = Path(qrag_qdrant.__file__).parent
MAX_TOP_LEVEL_ENTRIES = 20


def import_graph():
    spec = importlib.util.spec_from_file_location("import_graph", REPO / "scripts" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_top_level_holds_at_most_20_entries():
    # a folder left holding only bytecode (a checkout after a move) is no entry
    entries = sorted(
        p.name
        for p in PACKAGE.iterdir()
        if p.name != "__pycache__" and (p.is_file() or any(p.glob("[!_]*")) or any(p.glob("*.py")))
    )
    assert len(entries) <= MAX_TOP_LEVEL_ENTRIES, entries


def test_no_import_circle_between_modules_or_stages_and_the_design_page_shows_the_graph():
    assert import_graph().main(["--check"]) == 0


def package_of(root: Path, name: str, modules: dict[str, str]) -> Path:
    """A package ``name`` under ``root`` holding ``modules`` (path -> source), a sub-package per folder."""
    package = root / name
    for path, source in modules.items():
        module = package / path
        module.parent.mkdir(parents=True, exist_ok=True)
        (module.parent / "__init__.py").touch()
        module.write_text(source)
    (package / "__init__.py").touch()
    return package


def test_a_circle_between_two_stages_or_two_modules_is_found(tmp_path, monkeypatch):
    modules = {"low/a.py": "from ..high import x\n", "high/x.py": "X = 1\n", "high/y.py": "from ..low import b\n"}
    package = package_of(tmp_path, "circular", {**modules, "low/b.py": "B = 1\n"})
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph()
    found = graph.shape("circular")
    assert found.module_circle == [] and set(found.stage_circle) == {"high", "low"}
    (package / "high" / "x.py").write_text("from ..low import a\n")
    found = graph.shape("circular")
    assert set(found.module_circle) == {"circular.high.x", "circular.low.a"}


def test_an_import_from_the_wrong_stage_is_found(tmp_path, monkeypatch):
    text = "from ..text.words import W\n"
    modules = {"errors.py": "E = 1\n", "config/c.py": "C = 1\n", "ingest/chunks.py": text}
    package = package_of(
        tmp_path,
        "layered",
        {**modules, "text/words.py": "from ..errors import E\nW = 1\n", "retrieval/context.py": text},
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph()
    assert graph.wrong_arrows(graph.shape("layered"), "layered") == []
    # the base stage reading another stage, and a query's code loading ingest's
    (package / "text" / "words.py").write_text("from ..config.c import C\nW = 1\n")
    (package / "retrieval" / "context.py").write_text("from ..ingest.chunks import W\n")
    assert graph.wrong_arrows(graph.shape("layered"), "layered") == [
        "layered.retrieval.context -> layered.ingest.chunks",
        "layered.text.words -> layered.config.c",
    ]
