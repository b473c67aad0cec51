"""Quarto rules.

Board: 16 cells (``row * 4 + col``, row 0 at the top) holding a piece id or -1. Piece ``p`` in 0..15 has
four binary attributes: bit 0 tall, bit 1 dark, bit 2 square, bit 3 hollow (a clear bit means short,
light, round, solid). Four pieces in a row, column or diagonal sharing one attribute value win for the
player who placed the fourth.

Action ``a = 17 * cell + piece``: place the piece in hand on ``cell`` then give ``piece`` to the opponent.
``cell = 16`` means "no placement" (only on the opening turn, which only chooses a piece);
``piece = 16`` means "nothing to give" (only when no unused piece is left after placing).

State: ``{"board": [16 ints], "in_hand": -1|piece, "available": [sorted unused piece ids], "to_move",
"winner", "done", "last_action"}``.
"""

from __future__ import annotations

import numpy as np

from environments._rules_util import check_common_fields, coerce_action, is_int, malformed, require
from environments.base import Game, IllegalActionError, State

SIZE = 4
CELLS = 16
PIECES = 16
NO_CELL = 16
NO_PIECE = 16
NUM_ACTIONS = 17 * 17
KEYS = ("board", "in_hand", "available", "to_move", "winner", "done", "last_action")
ATTRIBUTES = (("short", "tall"), ("light", "dark"), ("round", "square"), ("solid", "hollow"))

LINES = (
    *(tuple(r * 4 + c for c in range(4)) for r in range(4)),
    *(tuple(r * 4 + c for r in range(4)) for c in range(4)),
    (0, 5, 10, 15),
    (3, 6, 9, 12),
)
#: The lines through each cell, so a win is checked only around the last placement.
LINES_THROUGH = tuple(tuple(line for line in LINES if cell in line) for cell in range(CELLS))


def encode(cell: int, piece: int) -> int:
    """The action id for "place on ``cell``, give ``piece``" (16 = none for either)."""
    return 17 * cell + piece


def decode(action: int) -> tuple[int, int]:
    """``(cell, piece)`` of an action id."""
    return divmod(action, 17)


def cell_name(cell: int) -> str:
    """Human name of a cell: column letter a-d (left to right) then row 1-4 (top to bottom), e.g. ``b3``."""
    row, col = divmod(cell, 4)
    return f"{'abcd'[col]}{row + 1}"


def piece_name(piece: int) -> str:
    """E.g. ``"piece 7 (tall, dark, square, solid)"``."""
    attrs = ", ".join(names[(piece >> bit) & 1] for bit, names in enumerate(ATTRIBUTES))
    return f"piece {piece} ({attrs})"


def _line_wins(board: list[int], line: tuple[int, ...]) -> bool:
    a, b, c, d = (board[i] for i in line)
    if a < 0 or b < 0 or c < 0 or d < 0:
        return False
    return bool((a & b & c & d) | (~a & ~b & ~c & ~d & 15))


def _wins_at(board: list[int], cell: int) -> bool:
    return any(_line_wins(board, line) for line in LINES_THROUGH[cell])


def winning_lines(board: list[int]) -> list[tuple[int, ...]]:
    """Every full line whose four pieces share an attribute value."""
    return [line for line in LINES if _line_wins(board, line)]


def shared_attributes(pieces: list[int]) -> list[str]:
    """Names of the attribute values all ``pieces`` share, e.g. ``["tall", "solid"]``."""
    shared = []
    for bit, names in enumerate(ATTRIBUTES):
        values = {(p >> bit) & 1 for p in pieces}
        if len(values) == 1:
            shared.append(names[values.pop()])
    return shared


class Quarto(Game):
    """Quarto; seat 0 opens by choosing the first piece, seat 1 places it."""

    slug = "quarto"
    num_actions = NUM_ACTIONS

    def initial_state(self, seed: int = 0) -> State:
        """An empty board, all pieces available, seat 0 to choose the first piece."""
        return {
            "board": [-1] * CELLS,
            "in_hand": -1,
            "available": list(range(PIECES)),
            "to_move": 0,
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def to_move(self, state: State) -> int:
        """Seat whose turn it is."""
        return state["to_move"]

    def legal_actions(self, state: State) -> list[int]:
        """Sorted legal action ids, or nothing once the game is over."""
        try:
            if state["done"]:
                return []
            available = state["available"]
            if state["in_hand"] == -1:
                return [272 + p for p in available]
            board = state["board"]
            if available:
                return [17 * c + p for c in range(CELLS) if board[c] == -1 for p in available]
            return [17 * c + 16 for c in range(CELLS) if board[c] == -1]
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc

    def apply(self, state: State, action: int) -> State:
        """Place the piece in hand (unless opening), then hand a piece to the opponent."""
        cell, piece = divmod(coerce_action(action, NUM_ACTIONS), 17)
        try:
            if state["done"]:
                raise IllegalActionError("the game is over")
            me = state["to_move"]
            if me != 0 and me != 1:
                raise TypeError(f"to_move is {me!r}")
            in_hand = state["in_hand"]
            available = state["available"]
            board = list(state["board"])
            if in_hand == -1:
                return self._open(me, board, available, cell, piece)
            if cell == NO_CELL:
                raise IllegalActionError(
                    f"you must place {piece_name(in_hand)}: cell 16 (no placement) is only for the opening"
                )
            if board[cell] != -1:
                raise IllegalActionError(
                    f"cell {cell} ({cell_name(cell)}) is occupied by piece {board[cell]}"
                )
            if available:
                if piece == NO_PIECE:
                    raise IllegalActionError(
                        "piece 16 (nothing to give) is only allowed when no piece is left; "
                        f"choose one of {available}"
                    )
                if piece not in available:
                    raise IllegalActionError(
                        f"piece {piece} is not available (it is on the board or in hand); "
                        f"choose one of {available}"
                    )
            elif piece != NO_PIECE:
                raise IllegalActionError(f"no piece is left to give: use piece 16 (action {17 * cell + 16})")
            board[cell] = in_hand
            won = _wins_at(board, cell)
            remaining = [p for p in available if p != piece]
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc
        if won:
            return self._ended(board, list(available), me, me, 17 * cell + piece)
        if not available:
            return self._ended(board, [], me, None, 17 * cell + piece)
        return {
            "board": board,
            "in_hand": piece,
            "available": remaining,
            "to_move": 1 - me,
            "winner": None,
            "done": False,
            "last_action": 17 * cell + piece,
        }

    @staticmethod
    def _open(me: int, board: list[int], available: list[int], cell: int, piece: int) -> State:
        if cell != NO_CELL:
            raise IllegalActionError(
                "the opening turn only chooses the piece your opponent places: "
                "use cell 16 (actions 272..287 = 272 + piece)"
            )
        if piece not in available:
            raise IllegalActionError(f"piece {piece} is not available; choose one of {available}")
        return {
            "board": board,
            "in_hand": piece,
            "available": [p for p in available if p != piece],
            "to_move": 1 - me,
            "winner": None,
            "done": False,
            "last_action": 17 * cell + piece,
        }

    @staticmethod
    def _ended(board: list[int], available: list[int], me: int, winner: int | None, action: int) -> State:
        return {
            "board": board,
            "in_hand": -1,
            "available": available,
            "to_move": 1 - me,
            "winner": winner,
            "done": True,
            "last_action": action,
        }

    def winner(self, state: State) -> int | None:
        """Seat that completed a line of four sharing an attribute, if any."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Whether someone won or all 16 pieces were placed."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """(17,) int64: the 16 cells (piece id or -1) then the piece in hand (-1 on the opening turn)."""
        obs = np.empty(CELLS + 1, dtype=np.int64)
        obs[:CELLS] = state["board"]
        obs[CELLS] = state["in_hand"]
        return obs

    def observation_value(self, state: State, seat: int) -> list[int]:
        """``observation(state, seat)`` as a list of ints, without numpy."""
        return [*state["board"], state["in_hand"]]

    def validate_state(self, state: State) -> None:
        """Check values, piece bookkeeping, whose turn, winner, ``done`` and ``last_action`` agree."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        board, in_hand, available = state["board"], state["in_hand"], state["available"]
        require(
            isinstance(board, list)
            and len(board) == CELLS
            and all(is_int(v) and -1 <= v < PIECES for v in board),
            "board must be a list of 16 ints in -1..15",
        )
        placed = [p for p in board if p != -1]
        require(len(set(placed)) == len(placed), "a piece is on the board twice")
        require(is_int(in_hand) and -1 <= in_hand < PIECES, "in_hand must be -1 or a piece 0..15")
        require(in_hand not in placed, f"piece {in_hand} is both in hand and on the board")
        unused = sorted(set(range(PIECES)) - set(placed) - {in_hand})
        require(available == unused, f"available must be the sorted unused pieces {unused}")
        n = len(placed)
        done, winner, last = state["done"], state["winner"], state["last_action"]
        lines = winning_lines(board)
        if not done and in_hand == -1:
            require(n == 0, "in_hand may be -1 during play only on the opening turn (empty board)")
            require(state["to_move"] == 0 and last is None, "the opening turn is seat 0's, before any action")
            require(winner is None, "winner must be null while the game runs")
            return
        require(state["to_move"] == (n + 1) % 2, f"to_move must be {(n + 1) % 2} with {n} pieces placed")
        require(is_int(last) and 0 <= last < NUM_ACTIONS, "last_action must be an action id")
        last_cell, last_piece = divmod(last, 17)
        if n == 0:
            require(
                not done and last == 272 + in_hand, "after the opening, last_action gives the piece in hand"
            )
            return
        require(last_cell < CELLS and board[last_cell] != -1, "last_action must place on an occupied cell")
        if not done:
            require(not lines, "a winning line is on the board but the game is not over")
            require(last_piece == in_hand, "last_action must give the piece now in hand")
            return
        require(in_hand == -1, "in_hand must be -1 once the game is over")
        if lines:
            require(winner == n % 2, f"winner must be {n % 2}, who placed the last piece")
            require(
                all(last_cell in line for line in lines), "a winning line does not use the last placement"
            )
            require(
                last_piece in available if available else last_piece == NO_PIECE,
                "last_action gives a piece that was not available",
            )
        else:
            require(
                n == CELLS and winner is None, "the game ends without a winner only when the board is full"
            )
            require(last_piece == NO_PIECE, "the final placement gives no piece (16)")

    def describe_action(self, state: State, action: int) -> str:
        """E.g. ``"place on b3, give piece 7 (tall, dark, square, solid)"``."""
        cell, piece = divmod(coerce_action(action, NUM_ACTIONS), 17)
        parts = []
        if cell != NO_CELL:
            parts.append(f"place on {cell_name(cell)}")
        parts.append("nothing left to give" if piece == NO_PIECE else f"give {piece_name(piece)}")
        return ", ".join(parts)


GAME = Quarto()
