"""Tic-tac-toe rules: known positions, wins on every line, draws and illegal moves."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from environments import IllegalActionError, InvalidStateError, get_game
from environments.tic_tac_toe.rules import LINES

GAME = get_game("tic-tac-toe")


def play(actions: list[int]) -> dict:
    """The state after playing ``actions`` from the start."""
    state = GAME.initial_state()
    for action in actions:
        state = GAME.apply(state, action)
    return state


def sequence_winning_line(line: tuple[int, int, int], winner: int) -> list[int]:
    """Moves in which ``winner`` fills ``line`` with its last move and the loser never makes a line."""
    others = [c for c in range(9) if c not in line]
    loser_cells = next(
        combo for combo in itertools.combinations(others, 3) if tuple(sorted(combo)) not in LINES
    )
    if winner == 0:  # X: line[0], O, line[1], O, line[2]
        return [line[0], loser_cells[0], line[1], loser_cells[1], line[2]]
    return [loser_cells[0], line[0], loser_cells[1], line[1], loser_cells[2], line[2]]


def test_initial_state_is_an_empty_board_with_x_to_move():
    state = GAME.initial_state()
    assert state == {"board": [0] * 9, "to_move": 0, "winner": None, "done": False, "last_action": None}
    assert GAME.legal_actions(state) == list(range(9))


def test_a_move_marks_the_cell_and_passes_the_turn():
    state = GAME.apply(GAME.initial_state(), 4)
    assert state["board"] == [0, 0, 0, 0, 1, 0, 0, 0, 0]
    assert state["to_move"] == 1
    assert state["last_action"] == 4
    assert GAME.legal_actions(state) == [0, 1, 2, 3, 5, 6, 7, 8]


@pytest.mark.parametrize("winner", [0, 1], ids=["X", "O"])
@pytest.mark.parametrize("line", LINES, ids=[f"line-{'-'.join(map(str, ln))}" for ln in LINES])
def test_completing_any_line_wins(line, winner):
    moves = sequence_winning_line(line, winner)
    before = play(moves[:-1])
    assert not GAME.is_over(before)
    state = GAME.apply(before, moves[-1])
    assert GAME.is_over(state)
    assert GAME.winner(state) == winner
    assert GAME.legal_actions(state) == []
    assert GAME.rewards(state) == ((1.0, -1.0) if winner == 0 else (-1.0, 1.0))
    GAME.validate_state(state)


def test_a_full_board_without_a_line_is_a_draw():
    state = play([0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert state["board"] == [1, 2, 1, 1, 2, 2, 2, 1, 1]
    assert GAME.is_over(state)
    assert GAME.winner(state) is None
    assert GAME.rewards(state) == (0.0, 0.0)


def test_winning_on_the_last_cell_is_a_win_not_a_draw():
    state = play([0, 1, 2, 3, 5, 4, 7, 6])
    assert not GAME.is_over(state)
    state = GAME.apply(state, 8)  # X completes 2-5-8 on the ninth move
    assert GAME.winner(state) == 0


def test_playing_an_occupied_cell_is_illegal():
    state = play([4])
    with pytest.raises(IllegalActionError, match=r"cell 4 \(row 2, column 2\) is occupied"):
        GAME.apply(state, 4)


@pytest.mark.parametrize("action", [-1, 9, 100])
def test_actions_out_of_range_are_illegal(action):
    with pytest.raises(IllegalActionError, match="out of range"):
        GAME.apply(GAME.initial_state(), action)


@pytest.mark.parametrize("action", [True, 1.0, "4", None, [4]])
def test_non_integer_actions_are_illegal(action):
    with pytest.raises(IllegalActionError, match="must be an integer"):
        GAME.apply(GAME.initial_state(), action)


def test_numpy_integers_are_accepted_as_actions():
    assert GAME.apply(GAME.initial_state(), np.int64(4)) == GAME.apply(GAME.initial_state(), 4)


def test_moving_after_the_game_is_over_is_illegal():
    state = play(sequence_winning_line((0, 1, 2), 0))
    with pytest.raises(IllegalActionError, match="the game is over"):
        GAME.apply(state, 8)


def test_observation_shows_my_marks_as_one_and_the_opponents_as_minus_one():
    state = play([0, 4])
    expected_x = np.array([[1, 0, 0], [0, -1, 0], [0, 0, 0]], dtype=np.int8)
    np.testing.assert_array_equal(GAME.observation(state, 0), expected_x)
    np.testing.assert_array_equal(GAME.observation(state, 1), -expected_x)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"board": [1, 1, 0, 0, 0, 0, 0, 0, 0]}, "X has 2 marks and O has 0"),
        ({"to_move": 0}, "to_move must be 1"),
        ({"board": [3] + [0] * 8}, "board must be a list of 9 ints"),
        ({"winner": 0}, "winner must be None"),
        ({"done": True}, "done does not match"),
        ({"last_action": 5}, "last_action must hold the last mover's mark"),
    ],
)
def test_validate_state_rejects_inconsistent_states(change, message):
    state = {**play([0]), **change}
    with pytest.raises(InvalidStateError, match=message):
        GAME.validate_state(state)


def test_describe_action_names_the_mark_and_the_cell():
    assert GAME.describe_action(GAME.initial_state(), 2) == "X on row 1, column 3"
    assert GAME.describe_action(play([2]), 6) == "O on row 3, column 1"
