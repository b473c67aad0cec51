"""Leduc Hold'em starter agent for RL Arena: bets its strong hands, calls with fair ones, folds the rest.

Everything the arena calls is in the ``Player`` class at the bottom. Change ``choose`` to make it
smarter (the arena's strong example plays an equilibrium strategy computed by counterfactual regret
minimisation), test it locally (README.md), then upload the folder as a zip.

What the arena sends (RULES.md has the full rules). A match is 10 hands; more chips at the end wins.

* ``state``: a numpy array of shape (16,), dtype int64, from YOUR side. You never see your
  opponent's card.

      state[0]      rank of your card: 0 Jack, 1 Queen, 2 King
      state[1]      rank of the public card, -1 before it is turned up (second round)
      state[2]      betting round: 0 or 1
      state[3]      chips you have put in the pot this hand, state[4] your opponent's
      state[5:9]    this hand's first-round actions in order (-1 = none), state[9:13] the second's
      state[13]     hand number 0..9, state[14] your chips won so far, state[15] 1 if you act first

* ``valid_actions``: a 1-D numpy array (int64) among 0 fold (only when facing a bet), 1 call/check,
  2 bet/raise (at most two raises a round).

What you return: one of ``valid_actions``, as a Python ``int``. Anything else loses the match with
INVALID_ACTION. You have 1 s per move.
"""

import random

FOLD, CALL, RAISE = 0, 1, 2


def choose(obs: list[int], legal: list[int], rng: random.Random) -> int:
    """Raise a pair or a King, call a Queen (or any card better than the public one), else give up."""
    mine, public = obs[0], obs[1]
    facing_a_bet = obs[4] > obs[3]
    pair = public >= 0 and mine == public
    strong = pair or (mine == 2 and (public < 0 or rng.random() < 0.7))
    fair = mine == 1 if public < 0 else mine > public
    if strong:
        return RAISE if RAISE in legal else CALL
    if not facing_a_bet:
        # Now and then bet a weak hand anyway, so that a bet does not always mean a strong card.
        return RAISE if RAISE in legal and rng.random() < 0.1 else CALL
    return CALL if fair or FOLD not in legal else FOLD


class Player:
    """The object the arena talks to. One instance plays every match of a duel."""

    def __init__(self, train_mode: bool = False) -> None:
        self.rng = random.Random()

    def start(self, state, valid_actions) -> int:
        """The first move of a match."""
        return self.step(state, valid_actions, 0.0)

    def step(self, state, valid_actions, prev_reward) -> int:
        """Every later move; ``prev_reward`` is 0 while the match runs."""
        obs = [int(v) for v in state]
        legal = [int(a) for a in valid_actions]
        return choose(obs, legal, self.rng)

    def end(self, state, prev_reward) -> None:
        """The match is over: ``prev_reward`` is +1 (won), -1 (lost) or 0 (draw)."""
