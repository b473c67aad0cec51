"""The command line with the Docker sandbox, end to end: ``python -m builder.cli_images`` builds folders and
zips into images and plays them (``python -m run_duel --sandbox docker`` takes image names only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dockertest_support import RANDOM_PLAYER, REPO, zip_folder

pytestmark = pytest.mark.docker


def run_cli(*args: str, module: str = "builder.cli_images") -> subprocess.CompletedProcess[str]:
    sandbox = ["--sandbox", "docker"] if module == "run_duel" else []
    return subprocess.run(
        [sys.executable, "-m", module, "--env", "tic-tac-toe", *sandbox, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_cli_plays_a_folder_against_a_nested_zip(base_image: str, tmp_path: Path) -> None:
    archive = zip_folder(RANDOM_PLAYER, tmp_path / "bot.zip", top="bot")
    done = run_cli("--player-1", str(RANDOM_PLAYER), "--player-2", str(archive), "--matches", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    duel = json.loads(done.stdout)
    assert duel["sandbox"] == "docker"
    assert duel["num_matches"] == 2
    assert duel["result"] in ("PLAYER_1_WIN", "PLAYER_2_WIN", "DRAW")
    assert duel["player_1_errors"] == duel["player_2_errors"] == duel["other_errors"] == 0


def test_both_clis_accept_an_image_name(random_image: str) -> None:
    for module in ("run_duel", "builder.cli_images"):
        done = run_cli(
            "--player-1",
            random_image,
            "--player-2",
            random_image,
            "--matches",
            "1",
            "--no-states",
            module=module,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert json.loads(done.stdout)["num_matches"] == 1


def test_the_referee_cli_sends_folders_to_the_builder(tmp_path: Path) -> None:
    done = run_cli("--player-1", str(RANDOM_PLAYER), "--player-2", str(RANDOM_PLAYER), module="run_duel")
    assert done.returncode == 2
    assert "python -m builder.cli_images" in done.stderr


def test_cli_reports_a_submission_that_does_not_build(base_image: str, tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "bot.py").write_text("x = 1\n")
    archive = zip_folder(folder, tmp_path / "bad.zip")
    done = run_cli("--player-1", str(archive), "--player-2", str(RANDOM_PLAYER))
    assert done.returncode != 0
    assert "player.py is missing" in done.stderr
