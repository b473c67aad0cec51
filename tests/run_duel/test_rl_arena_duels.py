"""The original rl-arena's example players, unchanged, play our games in the local sandbox (rl-arena
format), against our own agents, through the real referee and harness."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_duel_helpers import EXAMPLES, RANDOM

from run_duel.cli import main as cli_main
from run_duel.duel_result import validate_duel_json
from run_duel.referee import play_duel
from run_duel.sandbox.base import LaunchSpec

RL_ARENA = EXAMPLES / "rl_arena"


def errors(duel: dict) -> list[str]:
    return [f"{m['error_kind']}: {m['error_msg']}" for m in duel["matches"] if m["error_kind"]]


def test_their_minimax_beats_our_random_at_connect_four_through_the_cli(tmp_path):
    """Detected from its environment.yml next to player.py: no option needed."""
    out = tmp_path / "duel.json"
    args = ["--env", "connect-four", "--player-1", str(RL_ARENA / "minimax"), "--player-2", str(RANDOM)]
    assert cli_main([*args, "--matches", "10", "--no-states", "--output", str(out)]) == 0
    duel = json.loads(out.read_text())
    validate_duel_json(duel)
    assert not errors(duel), errors(duel)
    assert duel["player_1_wins"] >= 8, duel["player_1_wins"]


def test_in_the_native_format_their_minimax_crashes_on_our_state(tmp_path):
    out = tmp_path / "duel.json"
    args = ["--env", "connect-four", "--player-1", str(RL_ARENA / "minimax"), "--player-2", str(RANDOM)]
    assert cli_main([*args, "--format-1", "native", "--matches", "2", "--output", str(out)]) == 0
    duel = json.loads(out.read_text())
    assert duel["player_1_errors"] == 2
    assert {m["error_kind"] for m in duel["matches"]} == {"CRASH"}


@pytest.mark.parametrize("game", ["tic-tac-toe", "connect-four", "quarto"])
@pytest.mark.parametrize("agent", ["random", "dummy"])
def test_their_players_play_legal_games_against_ours(sandbox, game, agent):
    duel = play_duel(
        game,
        sandbox,
        LaunchSpec(str(RL_ARENA / agent), agent_format="rl-arena"),
        LaunchSpec(str(RANDOM)),
        matches=6,
        record_states=False,
    )
    validate_duel_json(duel)
    assert not errors(duel), errors(duel)
    assert duel["player_1_wins"] + duel["player_2_wins"] + duel["draws"] == 6


def test_their_tic_tac_toe_rules_accept_every_state_we_send(sandbox, tmp_path):
    """Their minimax imports their Connect Four rules only (so it plays Connect Four only, as in that
    project). A copy importing their bundled tic-tac-toe rules instead searches with them from the states
    the adapter builds: their rules assert on any state or action they would not produce."""
    folder = tmp_path / "minimax_ttt"
    shutil.copytree(RL_ARENA / "minimax", folder)
    source = (folder / "player.py").read_text()
    (folder / "player.py").write_text(
        source.replace("from connect_four import Environment", "from tic_tac_toe import Environment")
    )
    duel = play_duel(
        "tic-tac-toe",
        sandbox,
        LaunchSpec(str(folder), agent_format="rl-arena"),
        LaunchSpec(str(RANDOM)),
        matches=10,
        record_states=False,
    )
    assert not errors(duel), errors(duel)
    assert duel["player_1_wins"] > duel["player_2_wins"]


def test_the_format_reaches_the_harness_from_the_launch_spec(sandbox, make_agent):
    """ARENA_AGENT_FORMAT and ARENA_GAME are in the agent's environment (LaunchSpec.agent_format, and
    the game set by play_duel)."""
    agent = make_agent(
        """
        import os, sys

        class Player:
            def __init__(self, train_mode):
                print("format", os.environ.get("ARENA_AGENT_FORMAT"), os.environ.get("ARENA_GAME"),
                      file=sys.stderr)

            def start(self, state, valid_actions):
                return int(valid_actions[0])

            def step(self, state, valid_actions, prev_reward):
                return int(valid_actions[0])

            def end(self, state, prev_reward):
                pass
        """
    )
    duel = play_duel(
        "quarto",
        sandbox,
        LaunchSpec(str(agent), agent_format="rl-arena"),
        LaunchSpec(str(Path(agent)), agent_format="native"),
        matches=2,
    )
    assert not errors(duel), errors(duel)
    assert "format rl-arena quarto" in duel["player_1_log"]
    assert "format native quarto" in duel["player_2_log"]


def test_the_kaggle_format_runs_the_kaggle_function_even_beside_a_player_class(sandbox, make_agent):
    agent = make_agent(
        """
        class Player:
            def __init__(self, train_mode):
                raise RuntimeError("the kaggle format must not build the Player")


        def agent(observation, configuration):
            return [c for c in range(configuration.columns) if observation.board[c] == 0][0]
        """
    )
    duel = play_duel(
        "connect-four",
        sandbox,
        LaunchSpec(str(agent), agent_format="kaggle"),
        LaunchSpec(str(RANDOM)),
        matches=2,
        record_states=False,
    )
    assert not errors(duel), errors(duel)
