"""Leduc Hold'em player that plays a precomputed equilibrium strategy (``policy.json``).

``compute_policy.py`` in this folder computes the table by counterfactual regret minimisation (CFR+) over
one hand of Leduc Hold'em; this player looks up its information set in every state and samples an
action from the table's probabilities. Needs only the Python standard library and the folder's files.
Other games (any observation that is not Leduc's 16 entries) get a uniformly random valid action.
"""

import json
import os
import random

_HERE = os.path.dirname(os.path.abspath(__file__))
CALL = 1


def info_key(state) -> str:
    """The table key of a Leduc observation: "<my rank>|<public rank or ->|<round-1 actions>|<round-2>"."""
    obs = [int(v) for v in state]
    public = "-" if obs[1] < 0 else str(obs[1])
    rounds = ["".join(str(a) for a in obs[start : start + 4] if a >= 0) for start in (5, 9)]
    return f"{obs[0]}|{public}|{rounds[0]}|{rounds[1]}"


class Player:
    """Samples from the CFR+ strategy of its information set."""

    def __init__(self, train_mode: bool = False) -> None:
        self.train_mode = train_mode
        self._rng = random.Random(int.from_bytes(os.urandom(16), "big"))
        with open(os.path.join(_HERE, "policy.json"), encoding="utf-8") as handle:
            self.table = json.load(handle)

    def start(self, state, valid_actions) -> int:
        """First move of a match."""
        return self._act(state, valid_actions)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move of a match."""
        return self._act(state, valid_actions)

    def end(self, state, prev_reward) -> None:
        """The match is over; the strategy does not change."""

    def _act(self, state, valid_actions) -> int:
        actions = [int(a) for a in valid_actions]
        if len(state) != 16:
            return self._rng.choice(actions)
        probs = self.table.get(info_key(state))
        weights = [probs[a] if probs else 0.0 for a in actions]
        if sum(weights) <= 0:
            return CALL if CALL in actions else actions[0]
        return self._rng.choices(actions, weights=weights)[0]
