"""Connect Four rules (6 rows x 7 columns, row 0 at the top).

State: ``{"board": [6 lists of 7 ints], "to_move": 0|1, "winner": null|0|1, "done": bool,
"last_action": null|int}`` with cells 0 empty, 1 seat 0, 2 seat 1. An action is a column 0..6; the piece
drops to the lowest empty row of that column.
"""

from __future__ import annotations

import numpy as np

from environments._rules_util import check_common_fields, coerce_action, is_int, malformed, require
from environments.base import Game, IllegalActionError, State

ROWS = 6
COLS = 7
KEYS = ("board", "to_move", "winner", "done", "last_action")
#: (row step, column step) for horizontal, vertical and both diagonals.
DIRECTIONS = ((0, 1), (1, 0), (1, 1), (1, -1))
Ray = tuple[tuple[int, int], ...]


def _rays(row: int, col: int) -> tuple[tuple[Ray, Ray], ...]:
    """For each direction, the cells (up to 3) on both sides of (row, col), nearest first."""
    result = []
    for dr, dc in DIRECTIONS:
        sides = []
        for sign in (1, -1):
            ray = []
            for i in range(1, 4):
                r, c = row + sign * i * dr, col + sign * i * dc
                if not (0 <= r < ROWS and 0 <= c < COLS):
                    break
                ray.append((r, c))
            sides.append(tuple(ray))
        result.append((sides[0], sides[1]))
    return tuple(result)


#: RAYS[row][col]: per direction, the two rays of cells leaving (row, col); precomputed for speed.
RAYS = tuple(tuple(_rays(r, c) for c in range(COLS)) for r in range(ROWS))


def _wins_at(board: list[list[int]], row: int, col: int) -> bool:
    """Whether the piece at (row, col) is part of four in a line."""
    piece = board[row][col]
    for forward, backward in RAYS[row][col]:
        n = 1
        for r, c in forward:
            if board[r][c] != piece:
                break
            n += 1
        for r, c in backward:
            if board[r][c] != piece:
                break
            n += 1
        if n >= 4:
            return True
    return False


#: Every line of four cells on the board, as tuples of (row, col).
ALL_LINES = tuple(
    tuple((r + i * dr, c + i * dc) for i in range(4))
    for r in range(ROWS)
    for c in range(COLS)
    for dr, dc in DIRECTIONS
    if 0 <= r + 3 * dr < ROWS and 0 <= c + 3 * dc < COLS
)


def lines_of_four(board: list[list[int]]) -> list[tuple[tuple[int, int], ...]]:
    """Every line of four equal pieces on ``board``, as tuples of (row, col)."""
    lines = []
    for line in ALL_LINES:
        (r0, c0), (r1, c1), (r2, c2), (r3, c3) = line
        piece = board[r0][c0]
        if piece != 0 and board[r1][c1] == piece and board[r2][c2] == piece and board[r3][c3] == piece:
            lines.append(line)
    return lines


def winning_cells(board: list[list[int]]) -> list[tuple[int, int]]:
    """Every (row, col) that belongs to a line of four equal pieces (empty if there is none)."""
    return sorted({cell for line in lines_of_four(board) for cell in line})


def _top_row(board: list[list[int]], col: int) -> int:
    """Row index of the highest piece in ``col`` (``ROWS`` when the column is empty)."""
    r = 0
    while r < ROWS and board[r][col] == 0:
        r += 1
    return r


#: _VIEW[seat][cell value] = the value seen by ``seat``: 0 empty, 1 mine, -1 the opponent's.
_VIEW = (np.array([0, 1, -1], dtype=np.int8), np.array([0, -1, 1], dtype=np.int8))
_VIEW_VALUES = ((0, 1, -1), (0, -1, 1))
#: _ROW_VIEWS[seat][tuple(row)] = that row as ``seat`` sees it (a tuple); at most 3**7 rows per seat.
_ROW_VIEWS: tuple[dict[tuple[int, ...], tuple[int, ...]], dict[tuple[int, ...], tuple[int, ...]]] = ({}, {})


class ConnectFour(Game):
    """Connect Four; seat 0 moves first and owns the pieces marked 1."""

    slug = "connect-four"
    num_actions = COLS

    def initial_state(self, seed: int = 0) -> State:
        """An empty board, seat 0 to move."""
        return {
            "board": [[0] * COLS for _ in range(ROWS)],
            "to_move": 0,
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def to_move(self, state: State) -> int:
        """Seat whose turn it is."""
        return state["to_move"]

    def legal_actions(self, state: State) -> list[int]:
        """Columns that are not full, or nothing once the game is over."""
        try:
            if state["done"]:
                return []
            top = state["board"][0]
            return [c for c in range(COLS) if top[c] == 0]
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc

    def apply(self, state: State, action: int) -> State:
        """Drop the mover's piece into column ``action``."""
        col = coerce_action(action, COLS)
        try:
            if state["done"]:
                raise IllegalActionError("the game is over")
            board = state["board"]
            if board[0][col] != 0:
                raise IllegalActionError(f"column {col + 1} (action {col}) is full")
            me = state["to_move"]
            if me != 0 and me != 1:
                raise TypeError(f"to_move is {me!r}")
            board = [list(row) for row in board]
            row = ROWS - 1
            while board[row][col] != 0:
                row -= 1
            board[row][col] = me + 1
            won = _wins_at(board, row, col)
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc
        return {
            "board": board,
            "to_move": 1 - me,
            "winner": me if won else None,
            "done": won or 0 not in board[0],
            "last_action": col,
        }

    def winner(self, state: State) -> int | None:
        """Seat that connected four, if any."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Whether someone connected four or the board is full."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """(6, 7) int8: 1 = my pieces, -1 = opponent pieces, 0 = empty; row 0 is the top."""
        return _VIEW[seat][np.array(state["board"], dtype=np.intp)]

    def observation_value(self, state: State, seat: int) -> list[tuple[int, ...]]:
        """``observation(state, seat)`` as rows of ints, each row looked up once per seat and reused."""
        views = _ROW_VIEWS[seat]
        out = []
        for row in state["board"]:
            key = tuple(row)
            view = views.get(key)
            if view is None:
                values = _VIEW_VALUES[seat]
                view = views[key] = tuple([values[v] for v in key])
            out.append(view)
        return out

    def pettingzoo_observation(self, state: State, seat: int) -> dict[str, np.ndarray]:
        """The PettingZoo ``connect_four_v3`` observation of ``seat``.

        ``observation``: int8 (6, 7, 2), plane 0 = my pieces, plane 1 = opponent pieces (row 0 = top);
        ``action_mask``: int8 (7,), 1 for each legal column.
        """
        board = np.array(state["board"], dtype=np.int8)
        obs = np.stack([board == seat + 1, board == 2 - seat], axis=-1).astype(np.int8)
        mask = np.zeros(COLS, dtype=np.int8)
        mask[self.legal_actions(state)] = 1
        return {"observation": obs, "action_mask": mask}

    def validate_state(self, state: State) -> None:
        """Check shape, values, gravity, piece counts, whose turn, winner and ``done`` are consistent."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        board = state["board"]
        require(
            isinstance(board, list)
            and len(board) == ROWS
            and all(isinstance(row, list) and len(row) == COLS for row in board)
            and all(is_int(v) and v in (0, 1, 2) for row in board for v in row),
            f"board must be {ROWS} lists of {COLS} ints in {{0, 1, 2}}",
        )
        for c in range(COLS):
            top = _top_row(board, c)
            require(
                all(board[r][c] != 0 for r in range(top, ROWS)), f"column {c} has a piece above an empty cell"
            )
        ones = sum(row.count(1) for row in board)
        twos = sum(row.count(2) for row in board)
        require(ones - twos in (0, 1), f"seat 0 has {ones} pieces and seat 1 has {twos}: they alternate")
        require(state["to_move"] == ones - twos, f"to_move must be {ones - twos} after {ones + twos} moves")
        last = state["last_action"]
        if ones + twos == 0:
            require(last is None, "last_action must be null before the first move")
        else:
            require(last is not None and 0 <= last < COLS, f"last_action must be a column 0..{COLS - 1}")
            top = _top_row(board, last)
            require(
                top < ROWS and board[top][last] == 2 - state["to_move"],
                "the top piece of the last_action column must belong to the last mover",
            )
        lines = lines_of_four(board)
        if lines:
            owners = {board[r][c] for line in lines for r, c in line}
            require(len(owners) == 1, "both players have four in a line")
            require(
                state["winner"] == 1 - state["to_move"], "winner must be the last mover, who connected four"
            )
            last_cell = (_top_row(board, last), last)
            require(
                all(last_cell in line for line in lines),
                "a line of four does not use the last piece: the game should have ended earlier",
            )
        else:
            require(state["winner"] is None, "winner must be null: nobody has four in a line")
        require(state["done"] == (bool(lines) or 0 not in board[0]), "done does not match the board")

    def describe_action(self, state: State, action: int) -> str:
        """E.g. ``"column 4"`` (columns counted from 1 at the left)."""
        return f"column {coerce_action(action, COLS) + 1}"


GAME = ConnectFour()
