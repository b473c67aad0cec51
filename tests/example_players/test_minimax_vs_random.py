"""Acceptance of the minimax example player against the random one, in process with the real rules.

The platform re-checks this through the real referee; here the series are short (20 matches, starts
alternating) and use the player exactly as uploaded (its default per-move budget).
"""

import pytest
from _play import play_series


@pytest.fixture
def minimax_and_random(minimax_module, random_module):
    return minimax_module.Player(train_mode=False), random_module.Player(train_mode=False)


def test_minimax_never_loses_tic_tac_toe_to_random(minimax_and_random):
    tally = play_series("tic-tac-toe", *minimax_and_random, matches=20)
    assert tally.losses == 0
    assert tally.wins >= 10  # random blunders into lost positions most of the time


def test_minimax_against_itself_always_draws_tic_tac_toe(minimax_module):
    tally = play_series("tic-tac-toe", minimax_module.Player(False), minimax_module.Player(False), matches=6)
    assert tally.draws == 6


@pytest.mark.slow
def test_minimax_wins_at_least_90_percent_of_connect_four_against_random(minimax_and_random):
    tally = play_series("connect-four", *minimax_and_random, matches=20)
    assert tally.wins >= 18, tally


@pytest.mark.slow
def test_minimax_never_loses_quarto_to_random(minimax_and_random):
    tally = play_series("quarto", *minimax_and_random, matches=20)
    assert tally.losses == 0, tally
