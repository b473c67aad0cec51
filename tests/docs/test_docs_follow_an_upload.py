"""docs/FOLLOW_AN_UPLOAD.md names real functions: a newcomer's reading path leads to no name that is gone.

Two forms are checked: a dotted name (``core.actions.submit_revision``, ``run_duel.api.play_duel``), whose
longest module prefix must be a module or package of ours defining (or importing) the rest's first name,
unless it is a Celery task's registered name (``builder.build_revision``); and a file followed by a name
(`` `web/views/upload.py` `upload` ``), which that file must define.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "FOLLOW_AN_UPLOAD.md"
PACKAGES = (
    "agent_uploads",
    "builder",
    "core",
    "duel_runner",
    "environments",
    "run_duel",
    "tournament_manager",
    "web",
)
DOTTED = re.compile(r"`((?:{})(?:\.\w+)+)".format("|".join(PACKAGES)))
FILE_THEN_NAME = re.compile(r"`([\w/]+\.py)` `(\w+)`")


def defines(source: Path, name: str) -> bool:
    """``source`` defines ``name`` (a function, method or class, an assignment) or imports it."""
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
    return False


def is_task_name(name: str) -> bool:
    """``name`` is registered as a Celery task's name somewhere in its package."""
    package = ROOT / name.split(".")[0]
    return any(f'"{name}"' in source.read_text(encoding="utf-8") for source in package.rglob("*.py"))


def module_source(parts: list[str]) -> Path | None:
    path = ROOT.joinpath(*parts)
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def unresolved_dotted(name: str) -> bool:
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        source = module_source(parts[:cut])
        if source is not None:
            return cut < len(parts) and not defines(source, parts[cut])
    return True


def test_every_dotted_name_in_the_reading_path_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    names = sorted(set(DOTTED.findall(text)))
    assert len(names) > 20
    assert [name for name in names if unresolved_dotted(name) and not is_task_name(name)] == []


def test_every_function_named_after_its_file_exists() -> None:
    pairs = FILE_THEN_NAME.findall(DOC.read_text(encoding="utf-8"))
    assert len(pairs) > 5
    assert [(path, name) for path, name in pairs if not defines(ROOT / path, name)] == []


def test_the_check_refuses_a_name_that_is_gone() -> None:
    assert unresolved_dotted("core.actions.duels.mark_duels_rated")
    assert unresolved_dotted("tournament_manager.rating_runs.run")
    assert not unresolved_dotted("core.rating_outbox.trigger_on_commit")
