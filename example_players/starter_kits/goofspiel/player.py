"""Goofspiel starter agent for RL Arena: bids about as high as the prize is worth.

Everything the arena calls is in the ``Player`` class at the bottom. Change ``choose`` to make it
smarter, test it locally (README.md), then upload the folder as a zip.

What the arena sends (RULES.md has the full rules). Each of 13 turns a prize card (1..13) is turned up
and both players bid one of their cards AT THE SAME TIME; the higher bid wins the prize's value, equal
bids win nothing. More points after 13 turns wins.

* ``state``: a numpy array of shape (43,), dtype int64, from YOUR side:

      state[0]            the prize on the table
      state[1], state[2]  your points, your opponent's
      state[3]            turn number 0..12
      state[4:17]         1 if you still hold card 1..13 (state[4] is card 1)
      state[17:30]        1 if your opponent still holds card 1..13
      state[30:43]        1 if prize 1..13 is still to come

* ``valid_actions``: a 1-D numpy array (int64) of ``card - 1`` for the cards you hold.

What you return: one of ``valid_actions``, as a Python ``int`` (``card - 1``). Anything else loses the
match with INVALID_ACTION. You have 1 s per bid.
"""

import random


def choose(obs: list[int], legal: list[int], rng: random.Random) -> int:
    """Bid the card closest to the prize's value (a little above it, to beat an opponent who matches)."""
    prize = obs[0]
    cards = [a + 1 for a in legal]
    target = min(13, prize + rng.choice((0, 1)))
    best = min(cards, key=lambda card: (abs(card - target), card))
    return best - 1


class Player:
    """The object the arena talks to. One instance plays every match of a duel."""

    def __init__(self, train_mode: bool = False) -> None:
        self.rng = random.Random()

    def start(self, state, valid_actions) -> int:
        """The first bid of a match."""
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later bid; ``prev_reward`` is 0 while the match runs."""
        obs = [int(v) for v in state]
        legal = [int(a) for a in valid_actions]
        return choose(obs, legal, self.rng)

    def end(self, state, prev_reward) -> None:
        """The match is over: ``prev_reward`` is +1 (won), -1 (lost) or 0 (draw)."""
