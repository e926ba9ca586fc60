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


def test_a_circle_between_two_stages_or_two_modules_is_found(tmp_path, monkeypatch):
    package = tmp_path / "circular"
    for stage in ("low", "high"):
        (package / stage).mkdir(parents=True)
        (package / stage / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "low" / "a.py").write_text("from ..high import x\n")
    (package / "high" / "x.py").write_text("X = 1\n")
    (package / "high" / "y.py").write_text("from ..low import b\n")
    (package / "low" / "b.py").write_text("B = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph()
    found = graph.shape("circular")
    assert found.module_circle == [] and set(found.stage_circle) == {"high", "low"}
    (package / "high" / "x.py").write_text("from ..low import a\n")
    found = graph.shape("circular")
    assert set(found.module_circle) == {"circular.high.x", "circular.low.a"}


def test_an_import_from_the_wrong_stage_is_found(tmp_path, monkeypatch):
    package = tmp_path / "layered"
    for stage in ("text", "ingest", "retrieval", "config"):
        (package / stage).mkdir(parents=True)
        (package / stage / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "errors.py").write_text("E = 1\n")
    (package / "config" / "c.py").write_text("C = 1\n")
    (package / "ingest" / "chunks.py").write_text("from ..text.words import W\n")
    (package / "text" / "words.py").write_text("from ..errors import E\nW = 1\n")
    (package / "retrieval" / "context.py").write_text("from ..text.words import W\n")
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
