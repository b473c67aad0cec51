"""Hidden skill rules: a synthetic one-move game whose outcome depends on each player's declared level.

State: ``{"seed": int, "moves": [null|int, null|int], "to_move": 0|1, "winner": null|0|1, "done": bool,
"last_action": null|int}``. An action is ``level * NONCES + nonce``. When both moves are in, the outcome
is drawn by :func:`match_outcome` from a ``random.Random`` seeded by ``(seed, move_0, move_1)``: the rules
stay a pure function of the state, and both players contribute randomness through their nonces.

The outcome model is the article's test game (see ``info.yml``); :mod:`tournament_manager.simulation`
uses the same :func:`match_outcome`, so the rating benchmark plays this very game.
"""

from __future__ import annotations

import random

import numpy as np

from environments._rules_util import check_common_fields, coerce_action, is_int, malformed, require
from environments.base import Game, IllegalActionError, State

LEVELS = 100
NONCES = 100
#: Probability that the weaker player gets lucky between equal levels (decreases with the level gap).
MAX_RAND_PROB = 0.3
#: Probability that a lucky weaker player only draws between equal levels (decreases with the gap).
MAX_TIE_PROB = 0.2
KEYS = ("seed", "moves", "to_move", "winner", "done", "last_action")

#: Results of :func:`match_outcome`, from the first level's point of view.
FIRST_WINS, DRAW, SECOND_WINS = 1.0, 0.5, 0.0


def match_outcome(
    level_a: float,
    level_b: float,
    rng: random.Random,
    *,
    level_range: float = LEVELS,
    max_rand_prob: float = MAX_RAND_PROB,
    max_tie_prob: float = MAX_TIE_PROB,
) -> float:
    """Outcome (1.0 a wins, 0.5 draw, 0.0 b wins) of a match between hidden levels ``level_a``/``level_b``.

    The better player wins unless the weaker gets lucky (probability ``max_rand_prob - d`` with ``d`` the
    level gap over ``level_range``); a lucky weaker player draws with probability ``max_tie_prob - d``.
    Exactly two draws are taken from ``rng`` (three for equal levels), so results are reproducible.
    """
    a_is_better = rng.random() < 0.5 if level_a == level_b else level_a > level_b
    gap = abs(level_a - level_b) / level_range
    lucky, tie = rng.random(), rng.random()
    if lucky < max_rand_prob - gap:
        if tie < max_tie_prob - gap:
            return DRAW
        return SECOND_WINS if a_is_better else FIRST_WINS
    return FIRST_WINS if a_is_better else SECOND_WINS


def encode_action(level: int, nonce: int) -> int:
    """The action declaring ``level`` with random ``nonce`` (both in ``0..99``)."""
    if not (0 <= level < LEVELS and 0 <= nonce < NONCES):
        raise ValueError(f"level and nonce must be in 0..99, got {level}, {nonce}")
    return level * NONCES + nonce


class HiddenSkill(Game):
    """One simultaneous-looking move each; the declared level decides who usually wins."""

    slug = "hidden-skill"
    num_actions = LEVELS * NONCES
    has_chance = True  # the seed salts the outcome draw

    def initial_state(self, seed: int = 0) -> State:
        """No move yet; ``seed`` salts the outcome draw (the nonces already make matches differ)."""
        if not is_int(seed):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        return {
            "seed": seed,
            "moves": [None, None],
            "to_move": 0,
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def to_move(self, state: State) -> int:
        """Seat 0 declares first, then seat 1."""
        return state["to_move"]

    def legal_actions(self, state: State) -> list[int]:
        """Every ``level * 100 + nonce`` while the mover has not declared; nothing once over."""
        try:
            return [] if state["done"] else list(range(self.num_actions))
        except (KeyError, TypeError) as exc:
            raise malformed(state, exc) from exc

    def apply(self, state: State, action: int) -> State:
        """Record the mover's declaration; after seat 1's, draw the outcome."""
        action = coerce_action(action, self.num_actions)
        try:
            if state["done"]:
                raise IllegalActionError("the game is over")
            me = state["to_move"]
            moves = list(state["moves"])
            seed = state["seed"]
            if me not in (0, 1) or len(moves) != 2:
                raise TypeError(f"to_move is {me!r}, moves is {moves!r}")
        except (KeyError, TypeError) as exc:
            raise malformed(state, exc) from exc
        moves[me] = action
        new = {
            "seed": seed,
            "moves": moves,
            "to_move": 1 - me,
            "winner": None,
            "done": False,
            "last_action": action,
        }
        if me == 1:
            rng = random.Random(f"hidden-skill:{seed}:{moves[0]}:{moves[1]}")
            outcome = match_outcome(moves[0] // NONCES, moves[1] // NONCES, rng)
            new["done"] = True
            new["winner"] = {FIRST_WINS: 0, SECOND_WINS: 1, DRAW: None}[outcome]
        return new

    def winner(self, state: State) -> int | None:
        """Seat that won the draw, if any."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Over once both players have declared."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """``[seat, moves made]`` as int64: the opponent's declaration stays hidden."""
        made = sum(m is not None for m in state["moves"])
        return np.array([seat, made], dtype=np.int64)

    def validate_state(self, state: State) -> None:
        """Check field types and that ``to_move``/``done``/``last_action`` match the moves made."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        require(is_int(state["seed"]), "seed must be an int")
        moves = state["moves"]
        require(isinstance(moves, list) and len(moves) == 2, "moves must be a list of 2 entries")
        for m in moves:
            require(
                m is None or (is_int(m) and 0 <= m < self.num_actions), "each move must be null or 0..9999"
            )
        made = [m is not None for m in moves]
        require(made in ([False, False], [True, False], [True, True]), "seat 0 declares before seat 1")
        n = sum(made)
        require(state["done"] == (n == 2), "done must be true exactly when both have declared")
        if n < 2:
            require(state["winner"] is None, "no winner before both have declared")
            require(state["to_move"] == n, f"to_move must be {n}")
        require(state["last_action"] == (moves[n - 1] if n else None), "last_action must be the last move")
        if n == 2:
            rng = random.Random(f"hidden-skill:{state['seed']}:{moves[0]}:{moves[1]}")
            outcome = match_outcome(moves[0] // NONCES, moves[1] // NONCES, rng)
            expected = {FIRST_WINS: 0, SECOND_WINS: 1, DRAW: None}[outcome]
            require(state["winner"] == expected, f"winner must be {expected} for these moves and seed")

    def describe_action(self, state: State, action: int) -> str:
        """E.g. ``"declares level 42 (nonce 7)"``."""
        action = coerce_action(action, self.num_actions)
        level, nonce = divmod(action, NONCES)
        return f"declares level {level} (nonce {nonce})"


GAME = HiddenSkill()
