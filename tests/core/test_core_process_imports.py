"""What each kind of process loads: the web never loads the worker's machinery, a worker always does.

Each check runs in a fresh interpreter, so what earlier tests imported does not count.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Modules the web process must not import: the worker's bootsteps and job runner, Celery's worker
#: machinery beyond the app itself, the rating fit's numerics and the sandboxes.
NOT_IN_THE_WEB = (
    "core.worker",
    "core.jobs.runner",
    "core.jobs.heartbeat",
    "celery.apps.worker",
    "celery.worker.consumer",
    "scipy",
    "run_duel.sandbox",
)


def _run(code: str) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "core.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_web_process_does_not_load_the_worker_or_scipy_or_the_sandboxes():
    loaded = _run(
        "import json, sys\n"
        "import core.wsgi  # django.setup(), as gunicorn does\n"
        "import web.urls  # every view module\n"
        "tops = {'core', 'celery', 'scipy', 'run_duel'}\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in tops)))\n"
    )
    unexpected = [m for m in loaded if any(m == bad or m.startswith(bad + ".") for bad in NOT_IN_THE_WEB)]
    assert unexpected == []
    assert "core.celery" in loaded  # the app itself, to send hints


def test_a_worker_registers_its_monitor_step_when_celery_starts_it():
    """``celery -A core worker`` imports the app's ``imports`` before it builds its consumer."""
    steps = _run(
        "import json, django\n"
        "django.setup()\n"
        "from core.celery import app\n"
        "before = [getattr(s, '__name__', str(s)) for s in app.steps['consumer']]\n"
        "app.loader.init_worker()  # what WorkController.__init__ does first\n"
        "after = [getattr(s, '__name__', str(s)) for s in app.steps['consumer']]\n"
        "print(json.dumps({'before': before, 'after': after}))\n"
    )
    assert steps["before"] == [] and steps["after"] == ["MonitorStep"]


def _core_imports() -> dict[str, set[str]]:
    """Module -> the ``core`` modules it imports anywhere in its body (deferred imports included), and the
    packages whose ``__init__`` such an import runs."""
    modules = {}
    for path in (REPO / "core").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        name = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
        modules[name] = path
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets.add(node.module)
                targets.update(f"{node.module}.{alias.name}" for alias in node.names)
        edges = set()
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            while target and target != name and not name.startswith(target + "."):
                edges.add(target)  # the module, then each package __init__ that importing it runs
                target = target.rpartition(".")[0]
        graph[name] = edges
    return graph


def test_core_has_no_import_cycle_not_even_through_deferred_imports():
    graph = _core_imports()
    cycles = []
    for start in graph:  # a path from a module back to itself
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for nxt in graph[node]:
                if nxt == start:
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
        if cycles:
            break
    assert cycles == []
    assert graph["core.celery"] == set()  # the app imports nothing of core (the worker wiring: core.worker)
