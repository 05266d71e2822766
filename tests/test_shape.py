"""The package's shape: layers a newcomer can see, and nothing that lets them tangle.

What each test guards is in docs/testing.md ("The shape tests").
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import REPO

PACKAGE = REPO / "ezpz_amsc"
SUBPACKAGES = ("cli", "flow", "run", "results", "records", "report", "compare", "fs")
MAX_ROOT_MODULES = 8


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports: at module level, in functions, and for
    type checking alike (a cycle through any of them is a tangle)."""
    modules = {_module_name(p, package): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    raise AssertionError(f"{path}: relative import; write ezpz_amsc.<module>")
                if node.module and node.module.split(".")[0] == package.name:
                    for alias in node.names:
                        full = f"{node.module}.{alias.name}"
                        deps.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.split(".")[0] == package.name}
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


# The floor plan: which rooms (subpackages, and the modules at the root) each room may import
# from, counting imports inside functions and for type checking. Bottom to top: text and
# errors; options and the results schema; the files (fs); the storage rooms (results,
# records) and the export's stages (run); the features built on them (report, compare) and
# the workflows (flow); the edges (cli, the hook), which only call workflows and print.
FLOORS: dict[str, set[str]] = {
    "text": set(),
    "errors": {"text"},
    "version": set(),
    "_ezpz": set(),
    "options": {"errors", "text", "results"},
    "fs": {"errors", "text"},
    "results": {"errors", "fs", "text"},
    "records": {"errors", "fs", "options", "results", "run", "text", "version"},
    "run": {"_ezpz", "errors", "fs", "options", "results", "text"},
    "report": {"errors", "fs", "results", "text", "version"},
    "compare": {"errors", "report", "results", "text"},
    "flow": {"errors", "fs", "options", "records", "results", "run", "text", "version"},
    "cli": {"compare", "errors", "flow", "options", "report", "results", "run", "text",
            "version"},
    "hook": {"_ezpz", "errors", "flow", "options", "text"},
    "__init__": {"hook", "version"},
    "__main__": {"cli"},
}
# Where a room may reach only one module of another: the row's shape and a run's story are
# data every floor may read; nothing else of those rooms.
NARROW: dict[tuple[str, str], set[str]] = {
    ("options", "results"): {"ezpz_amsc.results.schema"},
    ("cli", "results"): {"ezpz_amsc.results.schema"},
    ("cli", "run"): {"ezpz_amsc.run.details"},
    ("records", "run"): {"ezpz_amsc.run.layout", "ezpz_amsc.run.steps"},
    ("compare", "results"): {"ezpz_amsc.results.schema"},
}
STORAGE = ("results", "records", "fs")
WORKFLOWS = ("flow", "cli", "hook")


def room(module: str) -> str:
    """``ezpz_amsc.run.steps`` -> ``run``; a module at the root is its own room."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def room_imports(graph: dict[str, set[str]]) -> dict[tuple[str, str], set[str]]:
    """(room, room it imports) -> the modules imported, between different rooms."""
    out: dict[tuple[str, str], set[str]] = {}
    for module, deps in graph.items():
        for dep in deps:
            if room(module) != room(dep):
                out.setdefault((room(module), room(dep)), set()).add(dep)
    return out


def test_every_room_imports_only_what_the_floor_plan_allows():
    found = room_imports(import_graph())
    rooms = {r for pair in found for r in pair}
    assert rooms <= set(FLOORS), sorted(rooms - set(FLOORS))
    outside = sorted(f"{a} -> {b}" for a, b in found if b not in FLOORS[a])
    assert outside == []
    too_wide = sorted(f"{a} -> {sorted(mods - NARROW[a, b])}" for (a, b), mods in found.items()
                      if (a, b) in NARROW and mods - NARROW[a, b])
    assert too_wide == []
    between: dict[str, set[str]] = {}
    for a, b in found:
        between.setdefault(a, set()).add(b)
    assert find_cycle(between) is None  # no loop between rooms, whatever the plan says


def test_the_floor_plan_has_no_loop_and_no_storage_room_reaches_up():
    assert find_cycle(FLOORS) is None
    assert [(s, w) for s in STORAGE for w in WORKFLOWS if w in FLOORS[s]] == []


def test_a_room_reaching_outside_its_floor_is_caught(tmp_path):
    graph = {"ezpz_amsc.results.append": {"ezpz_amsc.flow.publish"},
             "ezpz_amsc.flow.publish": set()}
    found = room_imports(graph)
    assert [f"{a} -> {b}" for a, b in found if b not in FLOORS[a]] == ["results -> flow"]


def test_the_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "ezpz_amsc"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from ezpz_amsc.sub.b import f\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from ezpz_amsc import a\n")
    assert find_cycle(import_graph(pkg)) == ["ezpz_amsc.a", "ezpz_amsc.sub.b", "ezpz_amsc.a"]
    (pkg / "sub" / "b.py").write_text("def f():\n    pass\n")
    assert find_cycle(import_graph(pkg)) is None


def test_the_root_holds_at_most_eight_modules():
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_each_layer_is_a_subpackage_whose_init_imports_nothing():
    for sub in SUBPACKAGES:
        init = PACKAGE / sub / "__init__.py"
        tree = ast.parse(init.read_text())
        assert ast.get_docstring(tree), f"{init}: say what the layer holds"
        assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))], (
            f"{init} imports: loading a layer must cost nothing (--help stays fast)")
    found = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file())
    assert found == sorted(SUBPACKAGES)


def test_tests_mirror_the_package():
    for sub in SUBPACKAGES:
        assert list((REPO / "tests" / sub).glob("test_*.py")), f"tests/{sub}/ has no tests"


@pytest.mark.parametrize("folder", ["ezpz_amsc", "tests"])
def test_no_reference_to_a_document_outside_the_repository(folder):
    # The repository's docs stand alone: code and tests cite docs/, never the spec.
    hits = [f"{p.relative_to(REPO)}:{n}" for p in sorted((REPO / folder).rglob("*.py"))
            for n, line in enumerate(p.read_text().splitlines(), 1)
            if re.search(r"\bSPEC\b", line) and p.name != "test_shape.py"]
    assert hits == []


def test_the_docs_a_module_cites_exist():
    cited = {(p.relative_to(REPO), m) for p in sorted(PACKAGE.rglob("*.py"))
             for m in re.findall(r"docs/[\w./-]+\.md", p.read_text())}
    assert cited, "the package cites its docs"
    assert [(str(p), m) for p, m in cited if not (REPO / m).is_file()] == []
