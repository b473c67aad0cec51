"""The light client from a clean virtual environment: ``pip install ./client`` brings the ``rl-arena``
command and the arena's referee, and no server part (no Django); a local tournament of three example
players runs. The same package served by an arena (``/downloads/rl-arena-client.zip``) installs too.

Slow: ``pip`` builds the package and fetches numpy, PyYAML, orjson and trueskill (from its cache after
the first run).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
PIP_TIMEOUT_S = 900


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return path / "bin"


def _pip_install(bin_dir: Path, target: str) -> None:
    result = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--disable-pip-version-check", "-q", target],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


def _has_module(bin_dir: Path, name: str) -> bool:
    """Whether the environment can import ``name`` (run away from the checkout, whose folders would
    otherwise be importable from the working directory)."""
    probe = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({name!r}) else 1)"
    run = subprocess.run(
        [str(bin_dir / "python"), "-c", probe], cwd=bin_dir, check=False, timeout=60, capture_output=True
    )
    return run.returncode == 0


@pytest.fixture
def clean_client_folder():
    """pip builds a local folder in place: remove what the build leaves in ``client/`` afterwards."""
    leftovers = [REPO / "client" / "build", REPO / "client" / "rl_arena_client.egg-info"]
    existed = {path for path in leftovers if path.exists()}
    yield
    for path in leftovers:
        if path not in existed:
            shutil.rmtree(path, ignore_errors=True)


def test_pip_install_client_gives_a_working_rl_arena_without_the_server(tmp_path, clean_client_folder):
    bin_dir = _venv(tmp_path / "venv")
    _pip_install(bin_dir, str(REPO / "client"))
    for server_part in ("django", "celery", "psycopg", "redis", "rest_framework", "core", "web"):
        assert not _has_module(bin_dir, server_part), f"{server_part} got installed with the client"
    for shared in ("run_duel", "environments", "tournament_manager", "trueskill"):
        assert _has_module(bin_dir, shared)
    starter = REPO / "example_players" / "starter_kits" / "tic_tac_toe"
    output = tmp_path / "tournament.json"
    work = tmp_path / "elsewhere"  # not the checkout: nothing may be imported from it
    work.mkdir()
    result = subprocess.run(
        [
            *(str(bin_dir / "rl-arena"), "tournament", "--env", "tic-tac-toe"),
            *(str(starter), "random", "minimax", "--matches", "4", "--output", str(output)),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 agents, 3 duels (round robin)" in result.stdout
    table = json.loads(output.read_text())["table"]
    assert {row["name"] for row in table} == {"tic_tac_toe", "random", "minimax"}
    assert table[-1]["name"] == "random"
    referee = subprocess.run(
        [str(bin_dir / "python"), "-c", "import run_duel.referee as r; print(r.__file__)"],
        cwd=work,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert str(tmp_path / "venv") in referee  # the installed copy, not the checkout


def test_the_client_an_arena_serves_installs_with_pip(tmp_path, live_server):
    bin_dir = _venv(tmp_path / "venv")
    _pip_install(bin_dir, f"{live_server.url}/downloads/rl-arena-client.zip")
    result = subprocess.run(
        [str(bin_dir / "rl-arena"), "games"], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    assert "connect-four" in result.stdout and "quarto" in result.stdout
    assert not _has_module(bin_dir, "django")
