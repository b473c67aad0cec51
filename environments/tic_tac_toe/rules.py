"""Tic-tac-toe rules.

State: ``{"board": [9 ints], "to_move": 0|1, "winner": null|0|1, "done": bool, "last_action": null|int}``
with board cells 0 empty, 1 seat 0 (X), 2 seat 1 (O); cell index = row*3 + col, row 0 at the top.
"""

from __future__ import annotations

import numpy as np

from environments._rules_util import check_common_fields, coerce_action, is_int, malformed, require
from environments.base import Game, IllegalActionError, State

KEYS = ("board", "to_move", "winner", "done", "last_action")
LINES = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)
#: The lines through each cell, so a win is checked only around the last move.
LINES_THROUGH = tuple(tuple(line for line in LINES if cell in line) for cell in range(9))
MARKS = ("X", "O")


def _wins(board: list[int], cell: int) -> bool:
    mark = board[cell]
    return any(board[a] == mark and board[b] == mark and board[c] == mark for a, b, c in LINES_THROUGH[cell])


def winning_line(board: list[int]) -> tuple[int, int, int] | None:
    """The first complete line of three equal marks on ``board``, if any."""
    for a, b, c in LINES:
        if board[a] != 0 and board[a] == board[b] == board[c]:
            return (a, b, c)
    return None


#: _VIEW[seat][cell value] = the value seen by ``seat``: 0 empty, 1 mine, -1 the opponent's.
_VIEW = (np.array([0, 1, -1], dtype=np.int8), np.array([0, -1, 1], dtype=np.int8))
_VIEW_VALUES = ((0, 1, -1), (0, -1, 1))


class TicTacToe(Game):
    """Tic-tac-toe on a 3x3 board; seat 0 plays X and moves first."""

    slug = "tic-tac-toe"
    num_actions = 9

    def initial_state(self, seed: int = 0) -> State:
        """An empty board, X (seat 0) to move."""
        return {"board": [0] * 9, "to_move": 0, "winner": None, "done": False, "last_action": None}

    def to_move(self, state: State) -> int:
        """Seat whose turn it is."""
        return state["to_move"]

    def legal_actions(self, state: State) -> list[int]:
        """The empty cells, or nothing once the game is over."""
        try:
            if state["done"]:
                return []
            return [i for i, v in enumerate(state["board"]) if v == 0]
        except (KeyError, TypeError) as exc:
            raise malformed(state, exc) from exc

    def apply(self, state: State, action: int) -> State:
        """Put the mover's mark on cell ``action``."""
        cell = coerce_action(action, 9)
        try:
            if state["done"]:
                raise IllegalActionError("the game is over")
            board = state["board"]
            if board[cell] != 0:
                row, col = divmod(cell, 3)
                raise IllegalActionError(f"cell {cell} (row {row + 1}, column {col + 1}) is occupied")
            me = state["to_move"]
            if me != 0 and me != 1:
                raise TypeError(f"to_move is {me!r}")
            board = list(board)
            board[cell] = me + 1
            won = _wins(board, cell)
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc
        return {
            "board": board,
            "to_move": 1 - me,
            "winner": me if won else None,
            "done": won or 0 not in board,
            "last_action": cell,
        }

    def winner(self, state: State) -> int | None:
        """Seat that completed a line, if any."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Whether someone won or the board is full."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """(3, 3) int8: 1 = my marks, -1 = opponent marks, 0 = empty."""
        return _VIEW[seat][np.array(state["board"], dtype=np.intp).reshape(3, 3)]

    def observation_value(self, state: State, seat: int) -> list[list[int]]:
        """``observation(state, seat)`` as three lists of ints, without numpy."""
        values = _VIEW_VALUES[seat]
        cells = [values[v] for v in state["board"]]
        return [cells[0:3], cells[3:6], cells[6:9]]

    def validate_state(self, state: State) -> None:
        """Check shape, values, mark counts, whose turn, winner and ``done`` are consistent."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        board = state["board"]
        require(
            isinstance(board, list) and len(board) == 9 and all(is_int(v) and v in (0, 1, 2) for v in board),
            "board must be a list of 9 ints in {0, 1, 2}",
        )
        xs, os_ = board.count(1), board.count(2)
        require(xs - os_ in (0, 1), f"X has {xs} marks and O has {os_}: X moves first and they alternate")
        require(state["to_move"] == (xs - os_), f"to_move must be {xs - os_} after {xs + os_} moves")
        line = winning_line(board)
        x_lines = [ln for ln in LINES if all(board[i] == 1 for i in ln)]
        o_lines = [ln for ln in LINES if all(board[i] == 2 for i in ln)]
        require(not (x_lines and o_lines), "both players have a line")
        expected_winner = None if line is None else board[line[0]] - 1
        require(state["winner"] == expected_winner, f"winner must be {expected_winner}")
        if expected_winner is not None:
            # The winner made the last move.
            require(xs - os_ == (1 if expected_winner == 0 else 0), "the winner must have made the last move")
        require(state["done"] == (line is not None or 0 not in board), "done does not match the board")
        last = state["last_action"]
        if xs + os_ == 0:
            require(last is None, "last_action must be null before the first move")
        else:
            require(last is not None and 0 <= last < 9, "last_action must be a cell 0..8")
            require(board[last] == 2 - state["to_move"], "last_action must hold the last mover's mark")

    def describe_action(self, state: State, action: int) -> str:
        """E.g. ``"X on row 1, column 3"``."""
        cell = coerce_action(action, 9)
        row, col = divmod(cell, 3)
        mark = MARKS[state.get("to_move", 0)] if isinstance(state, dict) else "?"
        return f"{mark} on row {row + 1}, column {col + 1}"


GAME = TicTacToe()
