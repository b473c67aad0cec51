"""Random example player: picks uniformly among the valid actions.

Works for every game on the platform. Needs only the Python standard library (and accepts the numpy
arrays the harness passes in). Seeded from ``os.urandom`` so two copies of it never play in lockstep.
"""

import os
import random


class Player:
    """Uniformly random over ``valid_actions``."""

    def __init__(self, train_mode: bool = False) -> None:
        self.train_mode = train_mode
        self._rng = random.Random(int.from_bytes(os.urandom(16), "big"))

    def start(self, state, valid_actions) -> int:
        """First move of a match."""
        return self._pick(valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move of a match."""
        return self._pick(valid_actions)

    def end(self, state, prev_reward) -> None:
        """The match is over; nothing to learn."""

    def _pick(self, valid_actions) -> int:
        actions = [int(a) for a in valid_actions]
        return self._rng.choice(actions)
