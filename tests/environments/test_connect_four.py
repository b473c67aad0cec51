"""Connect Four rules: gravity, wins in every direction and near every edge, draws, illegal moves."""

from __future__ import annotations

import numpy as np
import pytest

from environments import IllegalActionError, InvalidStateError, get_game

GAME = get_game("connect-four")
PIECES = {".": 0, "X": 1, "O": 2}

# A complete random game that filled the board without four in a line.
DRAWN_GAME = [3, 4, 4, 6, 0, 3, 5, 2, 6, 5, 0, 6, 5, 0, 3, 6, 5, 6, 1, 3, 1, 3, 6, 5, 2, 0, 5, 3, 4, 4,
              0, 1, 1, 1, 0, 1, 4, 2, 4, 2, 2, 2]  # fmt: skip


def play(actions: list[int]) -> dict:
    """The state after playing ``actions`` from the start."""
    state = GAME.initial_state()
    for action in actions:
        state = GAME.apply(state, action)
    return state


def position(picture: list[str]) -> dict:
    """A valid running state from a picture (row 0 at the top; X = seat 0, O = seat 1)."""
    board = [[PIECES[ch] for ch in row] for row in picture]
    xs = sum(row.count(1) for row in board)
    os_ = sum(row.count(2) for row in board)
    last_mover_piece = 1 if xs > os_ else 2
    last = None
    for col in range(7):
        top = next((board[r][col] for r in range(6) if board[r][col]), 0)
        if top == last_mover_piece:
            last = col
            break
    state = {"board": board, "to_move": xs - os_, "winner": None, "done": False, "last_action": last}
    GAME.validate_state(state)  # the pictures below are reachable positions
    return state


def mirror(picture: list[str]) -> list[str]:
    """The picture reflected left-right."""
    return [row[::-1] for row in picture]


# (name, position before the winning move, winning column, winner)
WINS = [
    (
        "horizontal, bottom row, completed at the end",
        [".......", ".......", ".......", ".......", "OOO....", "XXX...."],
        3,
        0,
    ),
    (
        "horizontal, bottom row at the right edge, completed in the middle",
        [".......", ".......", ".......", ".......", "...OO.O", "...XX.X"],
        5,
        0,
    ),
    (
        "vertical, bottom of the left column",
        [".......", ".......", ".......", "X......", "X.....O", "X....OO"],
        0,
        0,
    ),
    (
        "vertical, reaching the top row",
        [".......", "......O", "......O", "......O", "......X", "XX....X"],
        6,
        1,
    ),
    (
        "rising diagonal from the bottom-left corner",
        [".......", ".......", ".......", "..XO...", ".XXO...", "XOOX..O"],
        3,
        0,
    ),
    (
        "falling diagonal from the top-left corner, completed in the top row",
        [".......", "XO.....", "OXO....", "OXXO...", "XOOO...", "XOXX.XX"],
        0,
        1,
    ),
]


@pytest.mark.parametrize("mirrored", [False, True], ids=["as-drawn", "mirrored"])
@pytest.mark.parametrize(("name", "picture", "column", "winner"), WINS, ids=[w[0] for w in WINS])
def test_four_in_a_line_wins(name, picture, column, winner, mirrored):
    if mirrored:
        picture, column = mirror(picture), 6 - column
    state = position(picture)
    assert state["to_move"] == winner
    after = GAME.apply(state, column)
    assert GAME.is_over(after), name
    assert GAME.winner(after) == winner
    assert GAME.legal_actions(after) == []
    GAME.validate_state(after)


@pytest.mark.parametrize("mirrored", [False, True], ids=["as-drawn", "mirrored"])
@pytest.mark.parametrize(("name", "picture", "column", "winner"), WINS, ids=[w[0] for w in WINS])
def test_another_column_does_not_win(name, picture, column, winner, mirrored):
    if mirrored:
        picture, column = mirror(picture), 6 - column
    state = position(picture)
    other = next(c for c in GAME.legal_actions(state) if c != column)
    assert not GAME.is_over(GAME.apply(state, other)), name


def test_three_in_a_line_is_not_a_win():
    state = play([0, 0, 1, 1, 2])
    assert not GAME.is_over(state)
    assert GAME.winner(state) is None


def test_a_piece_falls_to_the_lowest_empty_row():
    state = play([3, 3])
    assert state["board"][5][3] == 1
    assert state["board"][4][3] == 2
    assert all(state["board"][r][3] == 0 for r in range(4))


def test_initial_state_is_empty_with_seat_0_to_move():
    state = GAME.initial_state()
    assert state["board"] == [[0] * 7 for _ in range(6)]
    assert state["to_move"] == 0
    assert GAME.legal_actions(state) == list(range(7))


def test_a_full_column_is_no_longer_legal():
    state = play([2, 2, 2, 2, 2, 2])
    assert GAME.legal_actions(state) == [0, 1, 3, 4, 5, 6]
    with pytest.raises(IllegalActionError, match=r"column 3 \(action 2\) is full"):
        GAME.apply(state, 2)


def test_a_full_board_without_four_in_a_line_is_a_draw():
    before = play(DRAWN_GAME[:-1])
    assert not GAME.is_over(before)
    state = GAME.apply(before, DRAWN_GAME[-1])
    assert GAME.is_over(state)
    assert GAME.winner(state) is None
    assert GAME.rewards(state) == (0.0, 0.0)
    assert all(cell != 0 for row in state["board"] for cell in row)


@pytest.mark.parametrize("action", [-1, 7])
def test_columns_out_of_range_are_illegal(action):
    with pytest.raises(IllegalActionError, match="out of range"):
        GAME.apply(GAME.initial_state(), action)


@pytest.mark.parametrize("action", [False, 3.0, "3", None])
def test_non_integer_actions_are_illegal(action):
    with pytest.raises(IllegalActionError, match="must be an integer"):
        GAME.apply(GAME.initial_state(), action)


def test_moving_after_a_win_is_illegal():
    state = play([0, 1, 0, 1, 0, 1, 0])
    assert GAME.winner(state) == 0
    with pytest.raises(IllegalActionError, match="the game is over"):
        GAME.apply(state, 3)


def test_observation_is_from_the_point_of_view_of_the_seat():
    state = play([3, 3])
    obs = GAME.observation(state, 0)
    assert obs.shape == (6, 7) and obs.dtype == np.int8
    assert obs[5, 3] == 1 and obs[4, 3] == -1
    np.testing.assert_array_equal(GAME.observation(state, 1), -obs)


def test_pettingzoo_observation_has_planes_mine_then_theirs_and_an_action_mask():
    state = play([2, 2, 2, 2, 2, 2, 4])
    pz = GAME.pettingzoo_observation(state, 1)
    assert pz["observation"].shape == (6, 7, 2) and pz["observation"].dtype == np.int8
    assert pz["observation"][4, 2, 0] == 1  # seat 1 played the second piece in column 2
    assert pz["observation"][5, 2, 1] == 1  # seat 0's first piece
    assert pz["observation"][5, 4, 1] == 1
    assert pz["observation"][:, :, 0].sum() == 3 and pz["observation"][:, :, 1].sum() == 4
    np.testing.assert_array_equal(pz["action_mask"], np.array([1, 1, 0, 1, 1, 1, 1], dtype=np.int8))
    assert pz["action_mask"].dtype == np.int8


def test_pettingzoo_action_mask_is_all_zero_once_the_game_is_over():
    state = play([0, 1, 0, 1, 0, 1, 0])
    assert GAME.pettingzoo_observation(state, 0)["action_mask"].sum() == 0


@pytest.mark.parametrize(
    ("picture", "message"),
    [
        ([".......", ".......", ".......", ".......", "X......", "......."], "piece above an empty cell"),
        ([".......", ".......", ".......", ".......", ".......", "XX....."], "seat 0 has 2 pieces"),
        ([".......", ".......", "X......", "XO.....", "XO....X", "XO....O"], "should have ended earlier"),
    ],
)
def test_validate_state_rejects_unreachable_positions(picture, message):
    board = [[PIECES[ch] for ch in row] for row in picture]
    xs = sum(row.count(1) for row in board)
    os_ = sum(row.count(2) for row in board)
    state = {"board": board, "to_move": max(0, min(1, xs - os_)), "winner": 0, "done": True, "last_action": 6}
    with pytest.raises(InvalidStateError, match=message):
        GAME.validate_state(state)


def test_describe_action_counts_columns_from_one():
    assert GAME.describe_action(GAME.initial_state(), 3) == "column 4"
