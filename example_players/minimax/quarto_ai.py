"""Quarto: negamax with alpha-beta over (placement, piece to give) moves, iterative deepening.

Observation: (17,) array, 16 cells (piece id or -1, cell = row*4 + col) then the piece in my hand
(-1 on the opening turn). Action = 17*cell + piece; cell 16 = "no placement" (opening turn only),
piece 16 = "nothing left to give". Piece bits: tall, dark, square, hollow.

Core facts the search uses:
- A piece is *deadly* on a board when some line holds three pieces and that piece completes a shared
  attribute there. Giving a deadly piece loses at once, so a move (cell, piece) is only "safe" when the
  piece is not deadly on the board after the placement. Depth 1 of the search is exactly this check.
- The player to move can win immediately iff the piece in hand is deadly; every node below the root
  was reached by giving a safe piece, so only the root checks for an immediate win.
Early in the game the branching factor (cells x pieces, up to 16 x 15) keeps the search at depth 1-2;
as the board fills it deepens on its own and solves the endgame exactly. Equal moves are tie-broken at
random so the player is not predictable.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

LINES = tuple(
    [tuple(range(r * 4, r * 4 + 4)) for r in range(4)]
    + [tuple(range(c, 16, 4)) for c in range(4)]
    + [(0, 5, 10, 15), (3, 6, 9, 12)]
)
CELL_LINES = tuple(tuple(line for line in LINES if cell in line) for cell in range(16))
NO_CELL = 16
NO_PIECE = 16
TIME_CHECK_INTERVAL = 16  # nodes between two clock reads (a node may weigh 200 move checks)
WIN = 1000  # a win k plies from the root scores WIN - k
ALL = 15


def action_of(cell: int, piece: int) -> int:
    """Encode a Quarto action."""
    return 17 * cell + piece


def wins_at(board: list[int], cell: int, piece: int) -> bool:
    """Whether placing ``piece`` on the empty ``cell`` completes a line sharing an attribute."""
    for line in CELL_LINES[cell]:
        same_set = piece
        same_clear = ALL & ~piece
        for other in line:
            if other != cell:
                p = board[other]
                if p < 0:
                    break
                same_set &= p
                same_clear &= ~p
        else:
            if same_set or same_clear:
                return True
    return False


def threats(board: list[int]) -> list[tuple[int, int]]:
    """For each line with three pieces and a hole, the attribute bits a fourth piece must share.

    Returns ``(must_have_set, must_have_clear)`` pairs: a piece ``q`` completes that line iff
    ``q & must_have_set`` or ``~q & must_have_clear`` is non-zero.
    """
    found = []
    for line in LINES:
        same_set, same_clear, holes = ALL, ALL, 0
        for cell in line:
            p = board[cell]
            if p < 0:
                holes += 1
                if holes > 1:
                    break
            else:
                same_set &= p
                same_clear &= ~p
        else:
            if holes == 1 and (same_set or same_clear):
                found.append((same_set, same_clear))
    return found


def is_deadly(piece: int, found: list[tuple[int, int]]) -> bool:
    """Whether ``piece`` completes one of the ``threats`` lines."""
    return any(piece & s or ~piece & c for s, c in found)


@dataclass
class SearchStats:
    """What the last ``choose`` call did."""

    nodes: int = 0
    depth: int = 0  # deepest fully completed iteration (0: answered without searching)
    value: int = 0  # > 0 forced win found, < 0 forced loss, 0 unknown or draw
    stopped_early: bool = False  # the time budget or node limit cut an iteration short
    elapsed: float = 0.0


class _OutOfBudget(Exception):
    """Raised inside the search when the time budget or node limit is exhausted."""


class QuartoAI:
    """Alpha-beta Quarto player with a per-move time budget (seconds) and optional node limit."""

    def __init__(
        self,
        time_budget: float = 0.2,
        node_limit: int | None = None,
        max_depth: int = 16,
        rng: random.Random | None = None,
    ) -> None:
        self.time_budget = time_budget
        self.node_limit = node_limit
        self.max_depth = max_depth
        self._rng = rng or random.Random()
        self.last_stats = SearchStats()
        self._deadline = 0.0
        self._nodes = 0

    def choose(self, observation, valid_actions: list[int]) -> int:
        """Return the action (17*cell + piece) for the player to move."""
        started = time.perf_counter()
        self._deadline = started + self.time_budget
        self._nodes = 0
        self.last_stats = stats = SearchStats()
        try:
            values = [int(v) for v in observation.tolist()]
            return self._choose(values[:16], values[16], valid_actions, stats)
        finally:
            stats.nodes = self._nodes
            stats.elapsed = time.perf_counter() - started

    def _choose(self, board: list[int], hand: int, valid_actions: list[int], stats: SearchStats) -> int:
        valid = set(valid_actions)
        used = {p for p in board if p >= 0} | {hand}
        available = [p for p in range(16) if p not in used]
        empties = [c for c in range(16) if board[c] < 0]
        if hand < 0:  # opening turn: only choose a piece; on an empty board all are equivalent
            return self._rng.choice(sorted(valid))
        for cell in empties:
            if wins_at(board, cell, hand):
                stats.value = WIN
                return self._encode(cell, available[0] if available else NO_PIECE, valid)

        moves = [(cell, piece) for cell in empties for piece in available or [NO_PIECE]]
        self._rng.shuffle(moves)
        best = moves[0]
        # Depth 1 reads no clock (it is only the "is the given piece deadly" check), so it always
        # completes: the answer never hands over a winning piece when a safe move exists.
        for depth in range(1, min(self.max_depth, len(empties)) + 1):
            try:
                scored = self._root(board, hand, available, empties, moves, depth)
            except _OutOfBudget:
                stats.stopped_early = True
                break
            scored.sort(key=lambda item: -item[0])  # stable: keeps the shuffled order among equals
            moves = [move for _, move in scored]
            best, stats.value, stats.depth = moves[0], scored[0][0], depth
            if abs(stats.value) >= WIN - 16:
                break  # proven result
        return self._encode(best[0], best[1], valid)

    def _root(
        self,
        board: list[int],
        hand: int,
        available: list[int],
        empties: list[int],
        moves: list[tuple[int, int]],
        depth: int,
    ) -> list[tuple[int, tuple[int, int]]]:
        """Score every root move (best-first order from the previous iteration)."""
        board = list(board)
        alpha = -WIN - 1
        scored = []
        for cell, piece in moves:
            board[cell] = hand
            value = self._move_value(board, cell, piece, available, empties, depth, alpha, WIN + 1, 0)
            board[cell] = -1
            scored.append((value, (cell, piece)))
            alpha = max(alpha, value)
        return scored

    def _move_value(
        self,
        board: list[int],
        cell: int,
        piece: int,
        available: list[int],
        empties: list[int],
        depth: int,
        alpha: int,
        beta: int,
        ply: int,
        found: list[tuple[int, int]] | None = None,
    ) -> int:
        """Value for the mover of placing at ``cell`` (already on ``board``) and giving ``piece``."""
        if piece == NO_PIECE:
            return 0  # the board is full and nobody won
        if found is None:
            found = threats(board)
        if is_deadly(piece, found):
            return -(WIN - ply - 1)
        if depth <= 1:
            return 0
        rest_empties = [c for c in empties if c != cell]
        rest_available = [p for p in available if p != piece]
        return -self._negamax(board, piece, rest_available, rest_empties, depth - 1, -beta, -alpha, ply + 1)

    def _tick(self) -> None:
        self._nodes += 1
        if self.node_limit is not None and self._nodes > self.node_limit:
            raise _OutOfBudget
        if not self._nodes % TIME_CHECK_INTERVAL and time.perf_counter() > self._deadline:
            raise _OutOfBudget

    def _negamax(
        self,
        board: list[int],
        hand: int,
        available: list[int],
        empties: list[int],
        depth: int,
        alpha: int,
        beta: int,
        ply: int,
    ) -> int:
        """Value for the player to move, who holds the safe (non-winning) piece ``hand``."""
        self._tick()
        if len(empties) == 1:
            return 0  # the last piece goes in the last cell without winning: draw
        best = -WIN - 1
        for cell in empties:
            board[cell] = hand
            found = threats(board)
            try:
                for piece in available:
                    value = self._move_value(
                        board, cell, piece, available, empties, depth, alpha, beta, ply, found
                    )
                    if value > best:
                        best = value
                        if value > alpha:
                            alpha = value
                            if alpha >= beta:
                                return best
            finally:
                board[cell] = -1
        return best

    @staticmethod
    def _encode(cell: int, piece: int, valid: set[int]) -> int:
        action = action_of(cell, piece)
        if action in valid:
            return action
        # A winning placement may be completed by any piece; take whichever the referee lists.
        for candidate in sorted(valid):
            if candidate // 17 == cell:
                return candidate
        return min(valid)
