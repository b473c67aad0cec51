"""``python -m run_duel``: output, progress, and exit code 2 with one line for bad arguments."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest
from run_duel_helpers import RANDOM, REPO

from run_duel.duel_result import validate_duel_json


def run_cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "run_duel", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        check=False,
    )


def test_a_duel_prints_valid_compact_json_from_any_working_directory(tmp_path):
    done = run_cli(
        "--env",
        "tic-tac-toe",
        "--player-1",
        str(RANDOM),
        "--player-2",
        str(RANDOM),
        "--matches",
        "2",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    duel = json.loads(done.stdout)
    validate_duel_json(duel)
    assert duel["num_matches"] == 2
    assert done.stdout.startswith('{"result"') and done.stdout.count("\n") == 1  # compact, one line
    assert done.stderr.count("match ") == 2  # one progress line per match when stderr is not a terminal


def test_output_file_no_states_and_a_zipped_agent(tmp_path):
    archive = tmp_path / "agent.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(RANDOM / "player.py", "player.py")
    out = tmp_path / "duel.json"
    done = run_cli(
        "--env",
        "tic-tac-toe",
        "--player-1",
        str(archive),
        "--player-2",
        str(RANDOM),
        "--matches",
        "1",
        "--output",
        str(out),
        "--no-states",
        "--indent",
        "--seed",
        "3",
        "--no-pin",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert out.read_text().startswith('{\n  "result"')  # --indent
    duel = json.loads(out.read_text())
    assert duel["matches"][0]["states"] == [] and duel["player_1_errors"] == 0
    assert duel["cpus"] is None  # --no-pin: the kernel placed the duel


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env", "chess"], "chess"),
        (["--env", "tic-tac-toe", "--matches", "0"], "--matches"),
        (["--env", "tic-tac-toe", "--sandbox", "vm"], "unknown sandbox"),
        (["--env", "tic-tac-toe", "--player-1", str(REPO / "run_duel")], "no player.py"),
        (["--env", "tic-tac-toe", "--player-1", "/no/such/dir"], "no such folder"),
        (["--env", "tic-tac-toe", "--matches", "two"], "invalid int"),
        (["--player-1", str(RANDOM)], "--env"),
    ],
    ids=[
        "unknown-game",
        "zero-matches",
        "unknown-sandbox",
        "no-player-py",
        "missing-folder",
        "bad-int",
        "no-env",
    ],
)
def test_bad_arguments_exit_2_with_a_one_line_error(args, message):
    base = {"--player-1": str(RANDOM), "--player-2": str(RANDOM)}
    full = list(args)
    for flag, value in base.items():
        if flag not in full:
            full += [flag, value]
    done = run_cli(*full)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("run_duel: error:")
    assert message in lines[0]
