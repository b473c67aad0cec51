"""The minimax example player's searches stop within their configured budget.

No wall-clock thresholds: the node counter proves the search obeys its node limit, and a zero time
budget proves the clock is read (the search stops at the first clock check, not at a fixed depth).
"""

import numpy as np
import pytest
from _play import hands_opponent_a_win, position

SEARCHES = [
    ("connect_four_ai", "ConnectFourAI", "connect-four", [3, 3, 2]),
    ("quarto_ai", "QuartoAI", "quarto", [272 + 1, 17 * 5 + 2, 17 * 10 + 9]),
]


@pytest.mark.parametrize(("module", "cls", "slug", "actions"), SEARCHES)
def test_search_stops_at_its_node_limit_and_still_answers_legally(engine_module, module, cls, slug, actions):
    engine = getattr(engine_module(module), cls)(time_budget=60.0, node_limit=300)
    obs, valid, _ = position(slug, actions)
    action = engine.choose(obs, [int(a) for a in valid])
    assert action in valid
    assert engine.last_stats.stopped_early
    assert engine.last_stats.nodes <= 301
    assert engine.last_stats.depth >= 1


@pytest.mark.parametrize(("module", "cls", "slug", "actions"), SEARCHES)
def test_search_with_no_time_left_stops_at_the_first_clock_check(engine_module, module, cls, slug, actions):
    loaded = engine_module(module)
    engine = getattr(loaded, cls)(time_budget=0.0)
    obs, valid, _ = position(slug, actions)
    action = engine.choose(obs, [int(a) for a in valid])
    assert action in valid
    assert engine.last_stats.stopped_early
    assert engine.last_stats.nodes <= loaded.TIME_CHECK_INTERVAL


def test_quarto_with_no_time_left_still_never_hands_over_a_win(engine_module):
    engine = engine_module("quarto_ai").QuartoAI(time_budget=0.0)
    obs, valid, state = position("quarto", [272 + 1, 17 * 0 + 3, 17 * 1 + 5])  # most gives are deadly
    for _ in range(10):
        assert not hands_opponent_a_win(state, engine.choose(obs, [int(a) for a in valid]))


@pytest.mark.parametrize(("module", "cls", "slug", "actions"), SEARCHES)
def test_a_larger_node_limit_searches_deeper(engine_module, module, cls, slug, actions):
    obs, valid, _ = position(slug, actions)
    depths = []
    for limit in (100, 20_000):
        engine = getattr(engine_module(module), cls)(time_budget=60.0, node_limit=limit)
        engine.choose(obs, [int(a) for a in valid])
        depths.append(engine.last_stats.depth)
    assert depths[1] > depths[0]


def test_connect_four_stops_deepening_once_the_win_is_proven(engine_module):
    loaded = engine_module("connect_four_ai")
    engine = loaded.ConnectFourAI(time_budget=60.0, node_limit=200_000)
    # Seat 0 owns columns 2 and 3 of the bottom row; playing 4 makes two threats (1 and 5) at once.
    obs, valid, _ = position("connect-four", [3, 0, 2, 0])
    assert engine.choose(obs, [int(a) for a in valid]) == 4
    assert engine.last_stats.value >= loaded.WIN - 42
    assert not engine.last_stats.stopped_early


def test_quarto_endgame_is_solved_exactly(engine_module):
    engine = engine_module("quarto_ai").QuartoAI(time_budget=60.0, node_limit=200_000)
    actions = [272 + 0, 17 * 0 + 15, 17 * 5 + 3, 17 * 10 + 12, 17 * 15 + 6, 17 * 1 + 9, 17 * 6 + 10]
    actions += [17 * 11 + 5, 17 * 2 + 4, 17 * 7 + 11]
    obs, valid, _ = position("quarto", actions)
    engine.choose(obs, [int(a) for a in valid])
    assert not engine.last_stats.stopped_early


def test_tic_tac_toe_expands_each_position_at_most_once(engine_module):
    engine = engine_module("tictactoe_ai").TicTacToeAI()
    empty = np.zeros((3, 3), dtype=np.int8)
    engine.choose(empty, list(range(9)))
    assert 0 < engine.last_stats.nodes < 6_000  # fewer than tic-tac-toe's legal positions
    engine.choose(empty, list(range(9)))
    assert engine.last_stats.nodes == 0  # everything is memoised


def test_player_answers_unknown_observation_shapes_with_a_valid_random_action(minimax_module):
    player = minimax_module.Player(False)
    valid = np.array([2, 5], dtype=np.int64)
    assert player.start(np.zeros((5,)), valid) in (2, 5)


@pytest.mark.parametrize(
    ("slug", "actions"), [("tic-tac-toe", [4]), ("connect-four", [3]), ("quarto", [272])]
)
def test_player_returns_a_python_int(minimax_module, slug, actions):
    obs, valid, _ = position(slug, actions)
    assert type(minimax_module.Player(False).step(obs, valid, 0.0)) is int
