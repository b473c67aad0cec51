"""environments.pettingzoo: PettingZoo AEC envs that play exactly the arena's rules."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test

from environments import IllegalActionError, get_game
from environments.pettingzoo import connect_four_env, env, quarto_env, tic_tac_toe_env

FACTORIES = {"connect-four": connect_four_env, "tic-tac-toe": tic_tac_toe_env, "quarto": quarto_env}


@pytest.mark.parametrize("slug", sorted(FACTORIES))
def test_pettingzoo_api_test_passes(slug):
    api_test(FACTORIES[slug](), num_cycles=300)


def play_random_game(aec, rng):
    """Play uniformly random legal moves; return (arena states after each move, final rewards)."""
    aec.reset(seed=int(rng.integers(1000)))
    states, final = [], {}
    for agent in aec.agent_iter():
        obs, reward, termination, truncation, _ = aec.last()
        if termination or truncation:
            final[agent] = reward
            aec.step(None)
            continue
        aec.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        states.append(aec.state_json)
    return states, final


@pytest.mark.parametrize("slug", sorted(FACTORIES))
def test_random_games_follow_the_arena_rules_and_rewards(slug):
    game, aec, rng = get_game(slug), env(slug), np.random.default_rng(7)
    for _ in range(20):
        states, final = play_random_game(aec, rng)
        for state in states:
            game.validate_state(state)
        assert game.is_over(states[-1])
        r0, r1 = game.rewards(states[-1])
        assert final == {"player_0": r0, "player_1": r1}


def test_connect_four_observation_is_the_connect_four_v3_layout():
    game, aec = get_game("connect-four"), connect_four_env()
    aec.reset()
    aec.step(3)  # player_0 drops in column 3
    obs = aec.observe("player_1")
    expected = game.pettingzoo_observation(aec.state_json, 1)
    assert obs["observation"].shape == (6, 7, 2) and obs["observation"].dtype == np.int8
    assert np.array_equal(obs["observation"], expected["observation"])
    assert obs["observation"][5, 3, 1] == 1  # plane 1 = the opponent's pieces, row 0 = top
    assert obs["action_mask"].tolist() == [1] * 7


def test_only_the_agent_to_move_gets_a_non_empty_action_mask():
    aec = connect_four_env()
    aec.reset()
    assert aec.observe("player_0")["action_mask"].sum() == 7
    assert aec.observe("player_1")["action_mask"].sum() == 0


def test_an_illegal_move_loses_by_default():
    aec = tic_tac_toe_env()
    aec.reset()
    aec.step(4)
    aec.step(4)  # player_1 plays on an occupied cell
    assert aec.terminations == {"player_0": True, "player_1": True}
    assert aec.rewards == {"player_0": 1, "player_1": -1}
    assert "occupied" in aec.infos["player_1"]["illegal_action"]


def test_illegal_action_raise_policy_raises_and_keeps_the_game():
    aec = tic_tac_toe_env(illegal_action="raise")
    aec.reset()
    aec.step(4)
    with pytest.raises(IllegalActionError):
        aec.step(4)
    assert aec.agent_selection == "player_1" and not any(aec.terminations.values())


def test_environments_import_without_pettingzoo():
    code = (
        "import sys; sys.modules['pettingzoo'] = None; sys.modules['gymnasium'] = None\n"
        "import environments, environments.pettingzoo as pz\n"
        "assert environments.get_game('connect-four')\n"
        "try:\n    pz.connect_four_env()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install" in done.stdout
