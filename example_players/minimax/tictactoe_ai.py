"""Perfect tic-tac-toe: full negamax over the whole game tree, memoised per position.

Observation: (3, 3) array, 1 = my marks, -1 = opponent marks, 0 = empty. Actions 0..8 = row*3 + col.
The tree has fewer than 6,000 distinct positions, so the first move solves it and later moves are
dictionary look-ups. No time budget is needed; ``last_stats.nodes`` reports positions expanded.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

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
WIN = 10  # a win after k more plies scores WIN - k, so quicker wins and slower losses are preferred


@dataclass
class SearchStats:
    """What the last ``choose`` call did."""

    nodes: int = 0  # positions expanded (not found in the memo)
    value: int = 0  # game value for me: > 0 win, 0 draw, < 0 loss


def _has_line(board: tuple[int, ...], mark: int) -> bool:
    return any(board[a] == mark and board[b] == mark and board[c] == mark for a, b, c in LINES)


class TicTacToeAI:
    """Plays perfectly; breaks ties between equally good moves at random."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()
        self._memo: dict[tuple[int, ...], int] = {}
        self.last_stats = SearchStats()

    def choose(self, observation, valid_actions: list[int]) -> int:
        """Return the best action for the player to move (marked 1 in ``observation``)."""
        board = tuple(int(v) for v in list(observation.reshape(9)))
        self.last_stats = SearchStats()
        scored = []
        for action in valid_actions:
            child = list(board)
            child[action] = 1
            scored.append((self._value_after(tuple(child)), action))
        best = max(value for value, _ in scored)
        self.last_stats.value = best
        return self._rng.choice([action for value, action in scored if value == best])

    def _value_after(self, board: tuple[int, ...]) -> int:
        """Value for the player who just moved (marked 1) of ``board``."""
        if _has_line(board, 1):
            return WIN
        if 0 not in board:
            return 0
        flipped = tuple(-v for v in board)  # the opponent becomes "1"
        return -self._negamax(flipped)

    def _negamax(self, board: tuple[int, ...]) -> int:
        """Value of ``board`` for the player to move (marked 1), who has no line yet."""
        cached = self._memo.get(board)
        if cached is not None:
            return cached
        self.last_stats.nodes += 1
        best = -WIN - 1
        for cell in range(9):
            if board[cell] == 0:
                child = list(board)
                child[cell] = 1
                value = self._value_after(tuple(child))
                # Shift mate scores one ply further away so faster wins rank higher.
                value = value - 1 if value > 0 else value + 1 if value < 0 else 0
                if value > best:
                    best = value
        self._memo[board] = best
        return best
