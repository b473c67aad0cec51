"""The write rule: only action modules change the database.

Every state change is one function in an action module that owns its transaction (zulip's
``zerver/actions/`` is the model). The modules allowed to write are named once, here
(:data:`ACTION_MODULES`), and in ``core/README.md`` ("The write rule"). This scan reads the source of the
product packages (no import, no database) and fails on any ORM or SQL write elsewhere:

- ``.save()``, ``.bulk_create()``, ``.bulk_update()``, ``.get_or_create()``, ``.update_or_create()``,
  ``.select_for_update()`` on anything;
- ``.create()``, ``.update()``, ``.delete()`` on a manager or query set (a chain through ``.objects``, a
  related manager's ``.all()``, or a query method such as ``.filter()``), and ``.delete()`` on an instance;
- ``cursor.execute()`` / ``executemany()`` / ``copy()`` of SQL that writes or locks (``INSERT``,
  ``UPDATE``, ``DELETE``, ``TRUNCATE``, ``COPY ... FROM``, ``FOR UPDATE``), given as a literal or a
  module-level constant.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: The packages scanned: every package that uses Django (the others never import it).
PRODUCT_PACKAGES = (
    "agent_uploads",
    "autoscaler",
    "builder",
    "core",
    "duel_runner",
    "ops",
    "publisher",
    "tournament_manager",
    "web",
)

#: The action modules: the only product code that writes (a folder: every module in it).
ACTION_MODULES = (
    "core/actions/",  # everything core owns: uploads, jobs, duels, accounts, seasons, workers, retention
    "core/blobs.py",  # the upload store's own rows (Blob, BlobChunk), inside the actions' transactions
    "publisher/actions.py",  # a revision's publish state
    "tournament_manager/actions.py",  # ratings, ladder matchmaking, tournament editions
    "tournament_manager/seasons.py",  # season finals: start_finals / advance_finals
)

#: Not product code at run time: schema history and the model layer's own managers.
NOT_SCANNED = ("/migrations/", "core/models/")

_ALWAYS_WRITES = {
    "save",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "select_for_update",
}
_QUERY_WRITES = {"create", "update", "delete"}
_QUERY_METHODS = {
    "objects",
    "all",
    "filter",
    "exclude",
    "only",
    "defer",
    "order_by",
    "annotate",
    "select_related",
    "prefetch_related",
    "using",
    "none",
    "distinct",
}
_WRITE_SQL = re.compile(
    r"^\s*(INSERT|UPDATE|DELETE|TRUNCATE|MERGE)\b|\bCOPY\b[^;]*\bFROM\b|\bFOR\s+(NO\s+KEY\s+)?UPDATE\b",
    re.IGNORECASE,
)


def _chain(node: ast.AST) -> list[str]:
    """Attribute and call names along a receiver chain, innermost first (``a.b.c()`` -> a, b, c)."""
    names: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            return names[::-1]
        else:
            return names[::-1]


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "..."`` strings (SQL kept in constants)."""
    found: dict[str, str] = {}
    for stmt in tree.body:
        value = stmt.value if isinstance(stmt, ast.Assign) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    found[target.id] = value.value
    return found


def _sql_text(arg: ast.AST, constants: dict[str, str]) -> str:
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    if isinstance(arg, ast.JoinedStr):
        return "".join(
            v.value for v in arg.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    if isinstance(arg, ast.Name):
        return constants.get(arg.id, "")
    return ""


def writes_in(source: str) -> list[tuple[int, str]]:
    """The database writes of one module's source: (line, what)."""
    tree = ast.parse(source)
    constants = _constants(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        receiver = _chain(node.func.value)
        if method in _ALWAYS_WRITES:
            found.append((node.lineno, f".{method}()"))
        elif method in _QUERY_WRITES and (set(receiver) & _QUERY_METHODS):
            found.append((node.lineno, f"{'.'.join(receiver)}.{method}()"))
        elif method == "delete" and not node.args and not node.keywords and receiver[-1:] != ["cache"]:
            found.append((node.lineno, f"{'.'.join(receiver)}.delete()"))
        elif (
            method in {"execute", "executemany", "copy"}
            and node.args
            and _WRITE_SQL.search(_sql_text(node.args[0], constants))
        ):
            found.append((node.lineno, f"{method}() of writing SQL"))
    return sorted(found)


def _product_modules() -> list[Path]:
    modules = []
    for package in PRODUCT_PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if not any(part in f"/{rel}" for part in NOT_SCANNED):
                modules.append(path)
    return modules


def _allowed(rel: str) -> bool:
    return any(rel == m or (m.endswith("/") and rel.startswith(m)) for m in ACTION_MODULES)


def outside_the_rule(root: Path = REPO) -> list[str]:
    """Every write outside the action modules, as ``path:line: what``."""
    bad = []
    for path in _product_modules():
        rel = path.relative_to(REPO).as_posix()
        if _allowed(rel):
            continue
        source = (root / rel).read_text(encoding="utf-8")
        bad += [f"{rel}:{line}: {what}" for line, what in writes_in(source)]
    return bad


def test_only_the_action_modules_write():
    assert outside_the_rule() == [], "state changes belong in an action module (core/README.md)"


def test_every_named_action_module_exists():
    for module in ACTION_MODULES:
        assert (REPO / module).exists(), module


@pytest.mark.parametrize(
    "line",
    [
        "Duel.objects.filter(pk=1).update(rated=True)",
        "Notification.objects.create(user=user)",
        "revision.save(update_fields=['state'])",
        "season.finalist_rows.all().delete()",
        "blob.delete()",
        "Rating.objects.bulk_update(rows, ['mu'])",
        "Competitor.objects.select_for_update().get(pk=1)",
        "cursor.execute('UPDATE core_duel SET rated = true')",
        "cursor.execute(SQL)",
        "cursor.execute(f'DELETE FROM {table} WHERE id = %s', [1])",
    ],
)
def test_the_scan_sees_each_kind_of_write(line):
    source = (
        "SQL = 'INSERT INTO core_match VALUES (1)'\n\n"
        f"def change(cursor, user, revision, season, blob, rows, table):\n    {line}\n"
    )
    assert writes_in(source), line


@pytest.mark.parametrize(
    "line",
    [
        "cache.delete('key')",
        "digest.update(chunk)",
        "env.update(extra or {})",
        "cursor.execute('SELECT 1')",
        "Duel.objects.filter(pk=1).exists()",
        "app.conf.update(task_serializer='json')",
    ],
)
def test_the_scan_leaves_reads_and_other_updates_alone(line):
    assert writes_in(f"def read(cache, digest, env, cursor, extra, app):\n    {line}\n") == [], line


def test_a_write_added_outside_the_action_modules_fails_the_rule(tmp_path):
    """The rule's own check, on a copy of the product packages with one write added to a view."""
    for package in PRODUCT_PACKAGES:
        if (REPO / package).is_dir():
            subprocess.run(["cp", "-r", str(REPO / package), str(tmp_path / package)], check=True)
    view = tmp_path / "web" / "views" / "pages.py"
    view.write_text(
        view.read_text(encoding="utf-8")
        + textwrap.dedent(
            """

            def _sneaky(pk):
                from core.models import Duel

                Duel.objects.filter(pk=pk).update(rated=True)
            """
        ),
        encoding="utf-8",
    )
    bad = outside_the_rule(tmp_path)
    assert len(bad) == 1 and bad[0].startswith("web/views/pages.py:") and "update()" in bad[0], bad
    assert sys.modules[__name__].outside_the_rule() == []  # the checkout itself stays clean
