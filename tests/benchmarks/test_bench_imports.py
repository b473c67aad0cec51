"""Every name a benchmark imports from the project still exists.

Benchmarks run by hand, so a refactor that moves a function can break one silently (it happened:
``bench_ladder_loop.py`` imported ``reap_orphans`` from the module it had left). Each ``from X import Y``
in ``benchmarks/`` whose ``X`` is one of the project's packages (imports inside functions included) is
resolved here, as the benchmark would resolve it when it runs.
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "benchmarks"
PACKAGES = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["root_packages"])


def _project_imports() -> list[tuple[str, int, str, str]]:
    """(file, line, module, name) of every ``from <project package>... import name`` in the benchmarks."""
    found = []
    for path in sorted(BENCHMARKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
                continue
            if node.module.split(".")[0] in PACKAGES:
                rel = str(path.relative_to(REPO))
                found += [(rel, node.lineno, node.module, alias.name) for alias in node.names]
    return found


IMPORTS = _project_imports()


def test_the_benchmarks_import_from_the_project():
    assert len(IMPORTS) > 50  # the walk found the benchmarks' imports (a broken walk would pass vacuously)


@pytest.mark.parametrize("module", sorted({module for _, _, module, _ in IMPORTS}))
def test_each_name_a_benchmark_imports_exists(module):
    imported = importlib.import_module(module)
    missing = []
    for path, line, mod, name in IMPORTS:
        if mod != module or name == "*" or hasattr(imported, name):
            continue
        try:
            importlib.import_module(f"{module}.{name}")  # a submodule imported by name
        except ImportError:
            missing.append(f"{path}:{line}: from {module} import {name}")
    assert not missing, "names the benchmarks import that the project no longer has:\n" + "\n".join(missing)
