"""The package's import graph: its circles (there must be none), its layers, and a picture of the
stages for docs/design.md.

A stage is a sub-package of ``qrag_qdrant`` (``retrieval``, ``generation``, ...) or a module at its
top level (``api``, ``results``, ...). A stage never imports one that imports it, so the stages form
a graph without circles too. Imports under ``if TYPE_CHECKING:`` count: a type is a dependency.

    python scripts/import_graph.py            # print the figures, write the picture into docs/design.md
    python scripts/import_graph.py --check    # fail on a circle, an import from the wrong stage, a stale picture
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import grimp

REPO = Path(__file__).resolve().parent.parent
DESIGN = REPO / "docs" / "design.md"
BEGIN, END = "<!-- import-graph: begin -->", "<!-- import-graph: end -->"


@dataclass(frozen=True)
class Shape:
    modules: int
    #: one module circle and one stage circle (empty when there is none)
    module_circle: list[str]
    stage_circle: list[str]
    #: the longest chain of imports, counted in modules
    layers: int
    #: stage -> the stages it imports
    stages: dict[str, set[str]]
    #: module -> the modules of the package it imports
    imports: dict[str, set[str]]


def stage_of(module: str, package: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else package


def circle(graph: dict[str, set[str]]) -> list[str]:
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as found:
        return list(found.args[1])
    return []


def longest_chain(graph: dict[str, set[str]]) -> int:
    depth: dict[str, int] = {}
    for module in TopologicalSorter(graph).static_order():  # what a module imports comes first
        depth[module] = 1 + max((depth[d] for d in graph.get(module, ()) if d in depth), default=0)
    return max(depth.values(), default=0)


def shape(package: str = "qrag_qdrant") -> Shape:
    graph = grimp.build_graph(package, exclude_type_checking_imports=False, cache_dir=None)
    modules = {m: graph.find_modules_directly_imported_by(m) for m in graph.modules}
    stages: dict[str, set[str]] = {}
    for module, imported in modules.items():
        own = stage_of(module, package)
        stages.setdefault(own, set()).update(s for s in (stage_of(i, package) for i in imported) if s != own)
    stages.pop(package, None)  # the package's __init__ re-exports the facade: it is the top, not a stage
    for imported in stages.values():
        imported.discard(package)
    found = circle(modules)
    return Shape(
        modules=len(modules),
        module_circle=found,
        stage_circle=circle(stages),
        layers=0 if found else longest_chain(modules),
        stages=stages,
        imports=modules,
    )


#: modules nearly every stage imports (errors, the registry, the result types): their arrows would hide the rest
FOUNDATION = {"errors", "plugins", "results", "version"}
#: stages every other may import that import no stage themselves but the foundation modules
BASE_STAGES = {"text"}
#: modules (by prefix) that must never import others (by prefix), though their stages may meet
#: elsewhere: a query never loads ingest's code; the answer checks read text, not vectors
NEVER_IMPORTS = {
    "retrieval": {"ingest"},
    "generation.checks": {"embedding", "store"},
}


def within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def wrong_arrows(found: Shape, package: str = "qrag_qdrant") -> list[str]:
    """Each import that breaks ``BASE_STAGES`` or ``NEVER_IMPORTS``, as "importer -> imported"."""
    wrong = []
    for module, imported in sorted(found.imports.items()):
        for target in sorted(imported):
            own, theirs = stage_of(module, package), stage_of(target, package)
            base_broken = own in BASE_STAGES and theirs not in FOUNDATION | {own, package}
            never = any(
                within(module, f"{package}.{importer}") and any(within(target, f"{package}.{t}") for t in targets)
                for importer, targets in NEVER_IMPORTS.items()
            )
            if base_broken or never:
                wrong.append(f"{module} -> {target}")
    return wrong


def picture(found: Shape) -> str:
    """A Mermaid picture of the stages, each arrow pointing at what a stage imports; the arrows to
    the foundation modules are left out."""
    lines = ["```mermaid", "flowchart TD"]
    for stage in sorted(set(found.stages) - FOUNDATION):
        lines += [f"  {stage} --> {imported}" for imported in sorted(found.stages[stage] - FOUNDATION)]
    lines.append("```")
    counts = (
        f"{found.modules} modules in {len(found.stages)} stages; the longest chain of imports is {found.layers} "
        f"modules; circles: {len(found.module_circle)} between modules, {len(found.stage_circle)} between stages. "
        f"Arrows point at what a stage imports; those to {', '.join(sorted(FOUNDATION))} are left out."
    )
    return "\n".join([BEGIN, counts, "", *lines, END])


def with_picture(text: str, new: str) -> str:
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + new + text[end:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail on a circle or a stale picture")
    args = parser.parse_args(argv)
    found = shape()
    print(
        f"{found.modules} modules, {len(found.stages)} stages, {found.layers} layers; "
        f"module circle: {found.module_circle or 'none'}; stage circle: {found.stage_circle or 'none'}"
    )
    wrong = wrong_arrows(found)
    for arrow in wrong:
        print(f"an import from the wrong stage: {arrow}", file=sys.stderr)
    text = DESIGN.read_text()
    current = with_picture(text, picture(found))
    if args.check:
        if found.module_circle or found.stage_circle or wrong:
            return 1
        if current != text:
            print("docs/design.md's import graph is stale: run python scripts/import_graph.py", file=sys.stderr)
            return 1
        return 0
    DESIGN.write_text(current)
    return 1 if found.module_circle or found.stage_circle or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
