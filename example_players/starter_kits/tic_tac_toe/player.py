"""Tic-tac-toe starter agent for RL Arena: wins when it can, blocks when it must, then centre, corners.

Everything the arena calls is in the ``Player`` class at the bottom. Change ``choose`` to make it
smarter, test it locally (README.md), then upload the folder as a zip.

What the arena sends (RULES.md has the full rules):

* ``state``: a numpy array of shape (3, 3), dtype int8, seen from YOUR side: 1 = your mark,
  -1 = your opponent's, 0 = empty. Row 0 is the top row.
* ``valid_actions``: a 1-D numpy array (int64) of the empty cells, numbered ``row * 3 + column``::

      0 | 1 | 2
      3 | 4 | 5
      6 | 7 | 8

What you return: one of ``valid_actions``, as a Python ``int``. Anything else loses the match with
INVALID_ACTION. You have 1 s per move.
"""

import random

import numpy as np

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]
PREFERENCE = [4, 0, 2, 6, 8, 1, 3, 5, 7]  # centre, corners, edges


def completes_a_line(cells: list[int], cell: int, mark: int) -> bool:
    """Whether putting ``mark`` (1 or -1) on ``cell`` makes three in a row."""
    after = list(cells)
    after[cell] = mark
    return any(all(after[i] == mark for i in line) for line in LINES)


def choose(cells: list[int], legal: list[int], rng: random.Random) -> int:
    """Win now, else block the opponent's win, else the best free cell by PREFERENCE."""
    for cell in legal:
        if completes_a_line(cells, cell, 1):
            return cell
    for cell in legal:
        if completes_a_line(cells, cell, -1):
            return cell
    ranked = sorted(legal, key=PREFERENCE.index)
    best = [c for c in ranked if PREFERENCE.index(c) == PREFERENCE.index(ranked[0])]
    return rng.choice(best)


class Player:
    """The object the arena talks to. One instance plays every match of a duel."""

    def __init__(self, train_mode: bool = False) -> None:
        self.rng = random.Random()

    def start(self, state, valid_actions) -> int:
        """The first move of a match."""
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move; ``prev_reward`` is 0 while the match runs."""
        cells = [int(v) for v in np.asarray(state).reshape(9)]
        legal = [int(a) for a in valid_actions]  # numpy int64 -> plain int
        return int(choose(cells, legal, self.rng))

    def end(self, state, prev_reward) -> None:
        """The match is over: +1 you won, -1 you lost, 0 a draw. print() goes to your log."""
