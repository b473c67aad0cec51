"""Quarto starter agent for RL Arena: wins when the piece in hand allows it, never hands the opponent a
winning piece when it can avoid it, otherwise plays at random.

Everything the arena calls is in the ``Player`` class at the bottom. Change ``choose`` to make it
smarter, test it locally (README.md), then upload the folder as a zip.

What the arena sends (RULES.md has the full rules):

* ``state``: a numpy array of 17 ints: ``state[0:16]`` the board cells (``row * 4 + column``, row 0 at
  the top) holding a piece id 0..15 or -1 when empty, and ``state[16]`` the piece you must place now
  (-1 on the very first turn of a match, when you only choose a piece for your opponent).
* A piece id's bits are its attributes: 1 tall, 2 dark, 4 square, 8 hollow (clear: short, light, round,
  solid). Four pieces in a line that share an attribute value win for whoever placed the fourth.
* ``valid_actions``: a 1-D numpy array (int64) of ``17 * cell + piece``: place the piece in hand on
  ``cell`` and give ``piece`` to the opponent. ``cell == 16`` means "place nothing" (first turn only);
  ``piece == 16`` means "nothing left to give".

What you return: one of ``valid_actions``, as a Python ``int``. Anything else loses the match with
INVALID_ACTION. You have 1 s per move.
"""

import random

import numpy as np

NO_CELL = NO_PIECE = 16
ROWS = [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9, 10, 11), (12, 13, 14, 15)]
COLUMNS = [(0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15)]
DIAGONALS = [(0, 5, 10, 15), (3, 6, 9, 12)]
LINES = ROWS + COLUMNS + DIAGONALS


def wins(board: list[int]) -> bool:
    """Whether some full line of ``board`` shares an attribute value."""
    for line in LINES:
        pieces = [board[i] for i in line]
        if -1 in pieces:
            continue
        common_set = pieces[0] & pieces[1] & pieces[2] & pieces[3]
        common_clear = ~pieces[0] & ~pieces[1] & ~pieces[2] & ~pieces[3] & 15
        if common_set or common_clear:
            return True
    return False


def placed(board: list[int], cell: int, piece: int) -> list[int]:
    """A copy of ``board`` with ``piece`` on ``cell``."""
    after = list(board)
    after[cell] = piece
    return after


def opponent_can_win(board: list[int], piece: int) -> bool:
    """Whether the opponent, given ``piece``, could place it somewhere and win."""
    return any(wins(placed(board, cell, piece)) for cell in range(16) if board[cell] == -1)


def choose(board: list[int], in_hand: int, legal: list[int], rng: random.Random) -> int:
    """Win now if possible; else a move whose given piece cannot win at once; else any legal move."""
    moves = [divmod(a, 17) for a in legal]  # (cell, piece to give)
    for cell, give in moves:
        if cell != NO_CELL and wins(placed(board, cell, in_hand)):
            return 17 * cell + give
    safe = []
    for cell, give in moves:
        after = board if cell == NO_CELL else placed(board, cell, in_hand)
        if give == NO_PIECE or not opponent_can_win(after, give):
            safe.append(17 * cell + give)
    return rng.choice(safe or legal)


class Player:
    """The object the arena talks to. One instance plays every match of a duel."""

    def __init__(self, train_mode: bool = False) -> None:
        self.rng = random.Random()

    def start(self, state, valid_actions) -> int:
        """The first move of a match."""
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move; ``prev_reward`` is 0 while the match runs."""
        obs = [int(v) for v in np.asarray(state).reshape(17)]
        legal = [int(a) for a in valid_actions]  # numpy int64 -> plain int
        return int(choose(obs[:16], obs[16], legal, self.rng))

    def end(self, state, prev_reward) -> None:
        """The match is over: +1 you won, -1 you lost, 0 a draw. print() goes to your log."""
