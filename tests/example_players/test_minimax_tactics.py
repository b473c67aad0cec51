"""The minimax example player's tactics in crafted positions (built with the real rules)."""

import numpy as np
import pytest
from _play import hands_opponent_a_win, position

from environments import get_game


@pytest.mark.parametrize(
    ("actions", "expected", "why"),
    [
        ([0, 3, 1, 4], 2, "completes the top row"),
        ([0, 4, 1], 2, "blocks the top row"),
        ([4, 0, 8, 1], 2, "wins on the top row rather than blocking nothing"),
    ],
)
def test_tic_tac_toe_takes_the_win_or_blocks(minimax_module, actions, expected, why):
    obs, valid, _ = position("tic-tac-toe", actions)
    assert minimax_module.Player(False).start(obs, valid) == expected, why


@pytest.mark.parametrize(
    ("actions", "expected", "why"),
    [
        ([3, 0, 3, 0, 3, 1], 3, "completes a vertical four"),
        ([3, 0, 3, 0, 3], 3, "blocks a vertical four"),
        ([0, 0, 1, 1, 2], 3, "blocks a horizontal four on the bottom row"),
        ([0, 6, 1, 6, 2, 6], 3, "wins instead of blocking the opponent's column"),
    ],
)
def test_connect_four_takes_the_win_or_blocks(minimax_module, actions, expected, why):
    obs, valid, _ = position("connect-four", actions)
    assert minimax_module.Player(False).start(obs, valid) == expected, why


def test_connect_four_opens_in_the_centre(minimax_module):
    obs, valid, _ = position("connect-four", [])
    assert minimax_module.Player(False).start(obs, valid) == 3


def test_connect_four_does_not_play_under_an_opponent_threat(minimax_module):
    # Seat 0 owns columns 0-2 of the second row from the bottom and needs column 3 there; column 3 is
    # empty, so seat 1 must not put the first piece in it.
    actions = [1, 0, 0, 2, 2, 6, 1]
    game = get_game("connect-four")
    obs, valid, state = position("connect-four", actions)
    action = minimax_module.Player(False).start(obs, valid)
    after = game.apply(state, action)
    winning_replies = [r for r in game.legal_actions(after) if game.winner(game.apply(after, r)) is not None]
    assert action != 3
    assert winning_replies == []


def test_quarto_opening_turn_only_chooses_a_piece(minimax_module):
    obs, valid, _ = position("quarto", [])
    action = minimax_module.Player(False).start(obs, valid)
    assert action in valid and action // 17 == 16


def test_quarto_places_the_piece_in_hand_where_it_wins(minimax_module):
    # Row 0 gets pieces 1, 3, 5 (all tall, all solid); the player then holds 7, which is tall.
    obs, valid, _ = position("quarto", [272 + 1, 17 * 0 + 3, 17 * 1 + 5, 17 * 2 + 7])
    action = minimax_module.Player(False).step(obs, valid, 0.0)
    assert action // 17 == 3


def test_quarto_never_gives_a_winning_piece_when_a_safe_one_exists(minimax_module):
    # Row 0 holds 1 and 3; whatever the player does with piece 5, most pieces it could give are deadly.
    obs, valid, state = position("quarto", [272 + 1, 17 * 0 + 3, 17 * 1 + 5])
    player = minimax_module.Player(False)
    for _ in range(5):
        assert not hands_opponent_a_win(state, player.step(obs, valid, 0.0))


def test_quarto_avoids_handing_over_a_win_throughout_games_against_random(minimax_module, random_module):
    game = get_game("quarto")
    player, rng_player = minimax_module.Player(False), random_module.Player(False)
    checked = 0
    for match in range(2):
        state = game.initial_state()
        while not game.is_over(state):
            seat = game.to_move(state)
            obs = game.observation(state, seat)
            valid = np.asarray(game.legal_actions(state), dtype=np.int64)
            if seat == match % 2:
                action = player.step(obs, valid, 0.0)
                avoidable = any(not hands_opponent_a_win(state, int(a)) for a in valid)
                if avoidable:
                    assert not hands_opponent_a_win(state, action)
                    checked += 1
            else:
                action = rng_player.step(obs, valid, 0.0)
            state = game.apply(state, action)
    assert checked >= 4
