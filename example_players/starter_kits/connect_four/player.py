"""Connect Four starter agent for RL Arena: wins when it can, blocks when it must, prefers the centre.

Everything the arena calls is in the ``Player`` class at the bottom. Change ``choose`` to make it
smarter (search, a trained network...), test it locally (README.md), then upload the folder as a zip.

What the arena sends (RULES.md has the full rules):

* ``state``: a numpy array of shape (6, 7), dtype int8, seen from YOUR side: 1 = your piece,
  -1 = your opponent's, 0 = empty. Row 0 is the TOP row; pieces fall towards row 5.
* ``valid_actions``: a 1-D numpy array (int64) of the columns (0..6, left to right) that are not full.

What you return: one of ``valid_actions``, as a Python ``int``. Anything else (a column not in the list,
a float, None...) loses the match with INVALID_ACTION. You have 1 s per move (see the game page).
"""

import random

import numpy as np

ROWS, COLS = 6, 7
CENTRE_FIRST = [3, 2, 4, 1, 5, 0, 6]  # columns near the middle are part of more lines of four


def drop(board: np.ndarray, col: int, piece: int) -> np.ndarray:
    """A copy of ``board`` with ``piece`` dropped into ``col`` (which must not be full)."""
    after = board.copy()
    row = max(r for r in range(ROWS) if after[r, col] == 0)  # the lowest empty cell
    after[row, col] = piece
    return after


def has_four(board: np.ndarray, piece: int) -> bool:
    """Whether ``piece`` (1 or -1) has four in a row anywhere on ``board``."""
    mine = board == piece
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        for r in range(ROWS):
            for c in range(COLS):
                end_r, end_c = r + 3 * dr, c + 3 * dc
                inside = 0 <= end_r < ROWS and 0 <= end_c < COLS
                if inside and all(mine[r + i * dr, c + i * dc] for i in range(4)):
                    return True
    return False


def choose(board: np.ndarray, legal: list[int], rng: random.Random) -> int:
    """The move: win now, else stop the opponent's immediate win, else the most central column."""
    for col in legal:  # 1. a winning move?
        if has_four(drop(board, col, 1), 1):
            return col
    for col in legal:  # 2. does the opponent win there next turn? Block it.
        if has_four(drop(board, col, -1), -1):
            return col
    # 3. avoid giving the opponent a win right above our piece, then prefer the centre.
    safe = [c for c in legal if not _gives_a_win(board, c)] or legal
    best = min(CENTRE_FIRST.index(c) for c in safe)
    ties = [c for c in safe if CENTRE_FIRST.index(c) == best]
    return rng.choice(ties)


def _gives_a_win(board: np.ndarray, col: int) -> bool:
    after = drop(board, col, 1)
    return after[0, col] == 0 and has_four(drop(after, col, -1), -1)


class Player:
    """The object the arena talks to. One instance plays every match of a duel, so it may learn."""

    def __init__(self, train_mode: bool = False) -> None:
        # Called once per duel, before the first match (10 s allowed: load your model here).
        self.rng = random.Random()
        self.matches = 0

    def start(self, state, valid_actions) -> int:
        """The first move of a match (your first turn)."""
        self.matches += 1
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move; ``prev_reward`` is 0 while the match runs."""
        legal = [int(a) for a in valid_actions]  # numpy int64 -> plain int
        return int(choose(np.asarray(state), legal, self.rng))

    def end(self, state, prev_reward) -> None:
        """The match is over: ``prev_reward`` is +1 (you won), -1 (you lost) or 0 (a draw)."""
        # print() is fine: it goes to your agent's log (shown to you only), never to the referee.
        print(f"match {self.matches}: reward {prev_reward:+.0f}")
