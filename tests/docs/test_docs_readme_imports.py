"""Each package's README states its contract, and its imports paragraph names every package it imports.

The floors themselves (no package imports one above it) are import-linter's contracts in
``pyproject.toml``; this test holds the sentence a newcomer reads: a package of the project that a
package imports (at the top of a module or lazily inside a function) is named, in backticks, in the
``**Imports:**`` (or ``**May import**``) paragraph of that package's README.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The project's packages, as import-linter's root packages: (the folder holding the code, its README).
PACKAGES = {
    "envsettings": ("envsettings", "envsettings/README.md"),
    "environments": ("environments", "environments/README.md"),
    "run_duel": ("run_duel", "run_duel/README.md"),
    "agent_uploads": ("agent_uploads", "agent_uploads/README.md"),
    "core": ("core", "core/README.md"),
    "builder": ("builder", "builder/README.md"),
    "duel_runner": ("duel_runner", "duel_runner/README.md"),
    "tournament_manager": ("tournament_manager", "tournament_manager/README.md"),
    "publisher": ("publisher", "publisher/README.md"),
    "ops": ("ops", "ops/README.md"),
    "autoscaler": ("autoscaler", "autoscaler/README.md"),
    "web": ("web", "web/README.md"),
    "rl_arena_client": ("client/rl_arena_client", "client/README.md"),
}

IMPORTS = re.compile(r"\*\*(?:Imports|May import)[:*\s]*(.*?)(?:\n\s*\n|\n\*\*|\n- \*\*)", re.S)


def imported_packages(package: str) -> set[str]:
    folder, _ = PACKAGES[package]
    found: set[str] = set()
    for source in (ROOT / folder).rglob("*.py"):
        if "migrations" in source.parts:
            continue
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found.update(name.split(".")[0] for name in names)
    return (found & set(PACKAGES)) - {package}


def readme(package: str) -> str:
    return (ROOT / PACKAGES[package][1]).read_text(encoding="utf-8")


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_readme_states_what_the_package_owns_imports_and_keeps_true(package: str) -> None:
    text = readme(package)
    assert re.search(r"\*\*Owns", text), "no **Owns** paragraph"
    assert IMPORTS.search(text), "no **Imports:** (or **May import**) paragraph"
    assert re.search(r"\*\*Invariants|^## Invariants", text, re.M), "no invariants"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_readme_names_every_package_the_package_imports(package: str) -> None:
    match = IMPORTS.search(readme(package))
    assert match, "no **Imports:** paragraph"
    named = {word.split(".")[0] for word in re.findall(r"`([\w.]+)", match.group(1))}
    assert sorted(imported_packages(package) - named) == []


def test_the_scan_sees_lazy_imports() -> None:
    # core imports run_duel.api only inside functions, and agent_uploads at the top of submissions.py.
    assert {"run_duel", "agent_uploads", "envsettings"} <= imported_packages("core")
