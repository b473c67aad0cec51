"""environments.pettingzoo for the games with chance, private cards and simultaneous turns.

The board games' PettingZoo tests are in tests/train/test_train_pettingzoo_envs.py; these cover Leduc
Hold'em and Goofspiel: PettingZoo's own ``api_test``, seeded deals, action masks and what each agent sees.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
from pettingzoo.test import api_test

from environments import get_game
from environments.pettingzoo import goofspiel_env, leduc_holdem_env

FACTORIES = {"leduc-holdem": leduc_holdem_env, "goofspiel": goofspiel_env}


@pytest.mark.parametrize("slug", sorted(FACTORIES))
def test_pettingzoo_api_test_passes(slug):
    api_test(FACTORIES[slug](), num_cycles=300)


def play(aec, seed: int, rng: np.random.Generator):
    """Random legal moves from ``reset(seed)``: (arena states after each move, final rewards, masks)."""
    aec.reset(seed=seed)
    states, final, masks = [aec.state_json], {}, []
    for agent in aec.agent_iter():
        obs, reward, termination, truncation, _ = aec.last()
        if termination or truncation:
            final[agent] = reward
            aec.step(None)
            continue
        masks.append((aec.state_json, agent, obs["action_mask"]))
        aec.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        states.append(aec.state_json)
    return states, final, masks


@pytest.mark.parametrize("slug", sorted(FACTORIES))
def test_a_seed_replays_the_same_deal_and_masks_are_the_legal_actions(slug):
    game, aec = get_game(slug), FACTORIES[slug]()
    first, final, masks = play(aec, 11, np.random.default_rng(3))
    again, final_again, _ = play(aec, 11, np.random.default_rng(3))
    assert first == again and final == final_again
    other, _, _ = play(aec, 12, np.random.default_rng(3))
    assert other[0] != first[0], "another seed deals differently"
    game.validate_state(first[-1])
    assert game.is_over(first[-1])
    r0, r1 = game.rewards(first[-1])
    assert final == {"player_0": r0, "player_1": r1}
    for state, agent, mask in masks:
        assert np.flatnonzero(mask).tolist() == game.legal_actions(state)
        assert agent == f"player_{game.to_move(state)}"


def test_leduc_agents_never_see_the_opponents_card():
    aec = leduc_holdem_env()
    aec.reset(seed=5)
    cards = aec.state_json["cards"]
    other = next(c for c in range(6) if c // 2 != cards[1] // 2 and c != cards[0])
    swapped = {**aec.state_json, "cards": [cards[0], other]}  # player_1 holds another rank
    before = aec.observe("player_0")["observation"].copy()
    aec.state_json = swapped
    np.testing.assert_array_equal(aec.observe("player_0")["observation"], before)
    assert aec.observe("player_1")["observation"][0] == swapped["cards"][1] // 2


def test_goofspiel_player_1_bids_without_seeing_player_0s_bid():
    aec = goofspiel_env()
    aec.reset(seed=2)
    before = aec.observe("player_1")
    aec.step(12)  # player_0 bids its king
    assert aec.agent_selection == "player_1"
    after = aec.observe("player_1")
    np.testing.assert_array_equal(after["observation"], before["observation"])
    np.testing.assert_array_equal(after["action_mask"], np.ones(13, dtype=np.int8))
    aec.step(0)  # player_1 bids its ace: both bids are revealed, player_0 takes the prize
    prize = aec.state_json["prizes"][0]
    assert aec.state_json["points"] == [prize, 0]
    assert aec.observe("player_1")["observation"][17 + 12] == 0  # the king has left player_0's hand
