"""Goofspiel player: bids the card whose rank among its cards matches the prize's rank among the prizes.

With the king of prizes on the table it bids its highest card, with the lowest prize left its lowest
card, and in between in proportion; a small random step (one card up or down, sometimes) keeps it from
being perfectly predictable. Beats random bidding by a wide margin. Needs only the Python standard library.
Other games (any observation that is not Goofspiel's 43 entries) get a uniformly random valid action.
"""

import os
import random


class Player:
    """Rank-matching bids."""

    def __init__(self, train_mode: bool = False) -> None:
        self.train_mode = train_mode
        self._rng = random.Random(int.from_bytes(os.urandom(16), "big"))

    def start(self, state, valid_actions) -> int:
        """First bid of a match."""
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later bid."""
        return self._act(state, valid_actions)

    def end(self, state, prev_reward) -> None:
        """The match is over."""

    def _act(self, state, valid_actions) -> int:
        actions = sorted(int(a) for a in valid_actions)
        if len(state) != 43:
            return self._rng.choice(actions)
        obs = [int(v) for v in state]
        prize = obs[0]
        # Prizes not yet won or lost: the one on the table and those still to come.
        prizes = sorted([prize] + [v for v in range(1, 14) if obs[29 + v] == 1])
        rank = prizes.index(prize) / max(1, len(prizes) - 1)
        index = round(rank * (len(actions) - 1))
        if len(actions) > 2 and self._rng.random() < 0.15:
            index = min(len(actions) - 1, max(0, index + self._rng.choice((-1, 1))))
        return actions[index]
