"""The project's import graph, read with ``ast`` (nothing is imported): the Space (``app.py``, and ``space/`` where
it exists), ``pipeline/``, ``models/`` and any other top-level package of the repository.

Every import is an edge, wherever it is written: at the top, inside a function, under ``TYPE_CHECKING``. The rules:
no circle among the project's modules; ``pipeline/`` imports nothing of ``models/`` or the Space (it promises no
torch, and the Space is built on it, not the reverse); no Python file outside ``tests/`` over 600 lines; ``app.py``
at most 250 lines (layout and wiring). The size rules are tests of their own, so a failure says which rule broke.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 600
MAX_APP_LINES = 250
SPACE = ("app", "space")
"""The Space's own modules: ``app.py`` and its package (if any)."""


def _packages(root: Path) -> list[Path]:
    """The repository's top-level packages (folders with an ``__init__.py``), ``tests`` and ``bench`` aside."""
    return sorted(p.parent for p in root.glob("*/__init__.py") if p.parent.name not in ("tests", "bench"))


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name → file, for ``app.py`` and every module of the top-level packages."""
    files = [root / "app.py"] if (root / "app.py").exists() else []
    for package in _packages(root):
        files += sorted(package.rglob("*.py"))
    modules = {}
    for file in files:
        parts = list(file.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = file
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the project's modules it imports (``from a import b`` names ``a.b`` where that is a module)."""
    graph = {}
    for name, file in modules.items():
        package = name if file.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"), str(file))):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, one level up per dot past the first
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                wanted = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in wanted:
                while target and target not in modules:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles: strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def _in(module: str, *roots: str) -> bool:
    return any(module == root or module.startswith(f"{root}.") for root in roots)


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """``pipeline`` modules importing ``models`` or the Space: ``pipeline.cli -> models.captioner``."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if _in(module, "pipeline")
        for target in targets
        if _in(target, "models", *SPACE)
    )


def oversized(root: Path = ROOT, limit: int = MAX_LINES) -> list[str]:
    """Python files outside ``tests/`` (and virtual environments, caches) over ``limit`` lines."""
    skipped = {"tests", ".venv", "venv", ".git", "__pycache__", "node_modules", "shared"}
    files = [p for p in root.rglob("*.py") if not skipped & set(p.relative_to(root).parts)]
    counts = {p.relative_to(root).as_posix(): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    return sorted(f"{name}: {n} lines" for name, n in counts.items() if n > limit)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(project_modules())


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """Top-level, relative, function-local and ``TYPE_CHECKING`` imports are all edges; a circle through any of them
    is found, and so is ``pipeline`` reaching up to ``models``."""
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "models").mkdir()
    files = {
        "pipeline/__init__.py": "",
        "pipeline/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pipeline.b import B\n",
        "pipeline/b.py": "def f():\n    from . import a\n",
        "pipeline/c.py": "import numpy\nfrom pipeline import d\n",
        "pipeline/d.py": "def g():\n    import models.e\n",
        "models/__init__.py": "",
        "models/e.py": "from pipeline.c import x\n",
        "app.py": "import pipeline.a\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = import_graph(project_modules(tmp_path))
    assert found["pipeline.a"] == {"pipeline.b"} and found["pipeline.b"] == {"pipeline.a"}
    assert found["pipeline.c"] == {"pipeline.d"}, "a submodule named in from-import is that module; numpy is not ours"
    assert circles(found) == [["models.e", "pipeline.c", "pipeline.d"], ["pipeline.a", "pipeline.b"]]
    assert upward_imports(found) == ["pipeline.d -> models.e"]
    (tmp_path / "pipeline" / "big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_big.py").write_text("x = 1\n" * (MAX_LINES + 1))
    assert oversized(tmp_path) == [f"pipeline/big.py: {MAX_LINES + 1} lines"], "tests/ may be long"


def test_the_graph_covers_the_space_pipeline_and_models(graph: dict[str, set[str]]) -> None:
    expected = {"app", "space.job", "pipeline.cli", "pipeline.layout", "models.captioner", "models.train.run"}
    assert expected <= graph.keys()
    space = set().union(*(targets for module, targets in graph.items() if module == "app" or _in(module, "space")))
    assert any(_in(t, "pipeline") for t in space) and any(_in(t, "models") for t in space)


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    found = circles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(circle) for circle in found)


def test_pipeline_imports_nothing_of_models_or_the_space(graph: dict[str, set[str]]) -> None:
    found = upward_imports(graph)
    assert not found, "pipeline/ reaching up: " + "; ".join(found)


def test_no_python_file_outside_tests_over_600_lines() -> None:
    """Expected to fail until ``app.py`` and ``pipeline/judges/structure.py`` are split (issue 57's other parts)."""
    found = oversized()
    assert not found, f"over {MAX_LINES} lines: " + "; ".join(found)


def test_app_is_layout_and_wiring_in_at_most_250_lines() -> None:
    """Expected to fail until ``app.py``'s handlers move to the Space's own package (issue 57)."""
    lines = len((ROOT / "app.py").read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_APP_LINES, f"app.py: {lines} lines"
