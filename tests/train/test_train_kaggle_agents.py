"""Kaggle-style agents (``agent(observation, configuration)`` in main.py) join duels unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import KAGGLE, NEGAMAX, RANDOM, zip_files

from agent_uploads.zip_validation import validate_zip
from builder import build_submission
from run_duel.api import LaunchSpec, get_sandbox, play_duel, validate_duel_json

KAGGLE_TIC_TAC_TOE = textwrap.dedent(
    """
    def agent(obs, config):
        assert obs["mark"] == obs.mark and obs.mark in (1, 2)
        assert len(obs.board) == 9
        return [i for i, v in enumerate(obs.board) if v == 0][0]
    """
)


@pytest.fixture(autouse=True)
def _readable_tmp_path(tmp_path: Path) -> None:
    """Agents written into ``tmp_path`` (0700) must be readable by the local sandbox's agent user."""
    tmp_path.chmod(0o755)


def duel(game: str, agent_1: Path | str, agent_2: Path | str, matches: int, sandbox: str = "local") -> dict:
    result = play_duel(
        game, get_sandbox(sandbox), LaunchSpec(str(agent_1)), LaunchSpec(str(agent_2)), matches=matches
    )
    validate_duel_json(result)
    return result


def no_errors(result: dict) -> bool:
    return result["player_1_errors"] == result["player_2_errors"] == result["other_errors"] == 0


def test_kaggle_connectx_main_py_plays_legal_connect_four_through_the_referee():
    result = duel("connect-four", KAGGLE, RANDOM, matches=6)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]
    assert result["player_1_wins"] >= 5  # win/block tactics beat random


def test_kaggle_agent_sees_its_own_mark_whoever_starts(tmp_path):
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """
            def agent(observation, configuration):
                board = observation.board
                mine = board.count(observation.mark)
                theirs = board.count(3 - observation.mark)
                assert mine == theirs if observation.mark == 1 else theirs == mine + 1, board
                assert (configuration.rows, configuration.columns, configuration.inarow) == (6, 7, 4)
                return next(c for c in range(7) if board[c] == 0)
            """
        )
    )
    result = duel("connect-four", tmp_path, RANDOM, matches=4)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]


def test_kaggle_style_tic_tac_toe_agent_in_player_py_without_a_player_class(tmp_path):
    (tmp_path / "player.py").write_text(KAGGLE_TIC_TAC_TOE)
    result = duel("tic-tac-toe", tmp_path, RANDOM, matches=4)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]


def test_a_module_with_neither_player_nor_any_function_fails_to_start_with_a_clear_message(tmp_path):
    (tmp_path / "main.py").write_text("DEPTH = 4\nWEIGHTS = [1, 2, 3]\n")
    result = duel("connect-four", tmp_path, RANDOM, matches=2)
    assert result["player_1_errors"] == 2
    assert "neither a Player class nor a Kaggle-style agent" in result["matches"][0]["error_msg"]


def test_kaggle_environments_negamax_pasted_as_main_py_plays_unchanged():
    """Kaggle's own negamax ConnectX agent, its last function ``negamax_agent`` (not named ``agent``)."""
    result = duel("connect-four", NEGAMAX, RANDOM, matches=4)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]
    assert result["player_1_wins"] >= 3  # a 4-ply search beats random


def test_the_agent_is_the_last_callable_of_the_file_as_kaggle_loads_it(tmp_path):
    # ``agent`` comes first and would play an illegal column; Kaggle runs the file's last callable (``act``),
    # with as many arguments as it declares (here the observation only)
    (tmp_path / "submission.py").write_text(
        textwrap.dedent(
            """
            import random


            def agent(observation, configuration):
                return 99


            def act(observation):
                assert not hasattr(observation, "columns")
                return random.choice([c for c in range(7) if observation.board[c] == 0])
            """
        )
    )
    result = duel("connect-four", tmp_path, RANDOM, matches=2)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]


def test_builder_accepts_a_main_py_only_zip(tmp_path):
    archive = zip_files(tmp_path / "kaggle.zip", {"bot/main.py": (KAGGLE / "main.py").read_bytes()})
    validated = validate_zip(archive)
    assert [e.path for e in validated.entries] == ["main.py"]
    built = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert built.ok, built.error
    assert (Path(built.agent_ref) / "main.py").is_file()


def test_builder_accepts_a_submission_py_only_zip_and_it_plays(tmp_path):
    archive = zip_files(tmp_path / "kaggle.zip", {"submission.py": (NEGAMAX / "main.py").read_bytes()})
    built = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert built.ok, built.error
    result = duel("connect-four", built.agent_ref, RANDOM, matches=2)
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]


def test_builder_message_mentions_the_kaggle_entry_when_nothing_is_found(tmp_path):
    archive = zip_files(tmp_path / "none.zip", {"agent.py": b"def agent(o, c):\n    return 0\n"})
    built = build_submission(archive, backend="local", work_dir=tmp_path / "work")
    assert not built.ok
    assert built.error.startswith("player.py is missing") and "main.py" in built.error


@pytest.mark.docker
def test_an_image_built_from_a_kaggle_zip_plays_a_short_duel(agent_base_image, tmp_path):
    archive = zip_files(tmp_path / "kaggle.zip", {"main.py": (KAGGLE / "main.py").read_bytes()})
    built = build_submission(archive, backend="docker", work_dir=tmp_path / "work")
    assert built.ok, f"{built.error}\n{built.log[-2000:]}"
    result = duel("connect-four", built.agent_ref, built.agent_ref, matches=2, sandbox="docker")
    assert no_errors(result), [m["error_msg"] for m in result["matches"] if m["error_kind"]]
    assert all(m["num_moves"] >= 7 for m in result["matches"])


def _run_duel_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "run_duel", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )


def test_the_run_duel_cli_takes_a_main_py_folder_and_a_main_py_zip(tmp_path):
    archive = zip_files(tmp_path / "kaggle.zip", {"main.py": (KAGGLE / "main.py").read_bytes()})
    for agent in (KAGGLE, archive):
        done = _run_duel_cli(
            "--env", "connect-four", "--player-1", str(agent), "--player-2", str(RANDOM), "--matches", "2"
        )
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        validate_duel_json(result)
        assert result["player_1_errors"] == result["player_2_errors"] == 0


def test_the_run_duel_cli_names_both_entry_files_when_a_folder_has_neither(tmp_path):
    (tmp_path / "agent.py").write_text("def agent(o, c):\n    return 0\n")
    done = _run_duel_cli("--env", "connect-four", "--player-1", str(tmp_path), "--player-2", str(RANDOM))
    assert done.returncode == 2
    assert "no player.py (or Kaggle-style main.py)" in done.stderr
