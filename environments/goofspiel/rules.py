"""Goofspiel (the Game of Pure Strategy) with 13 cards: simultaneous bids, a shuffled prize deck.

State: ``{"seed": int, "prizes": [int], "bids": [[int], [int]], "pending": null|int, "points": [int, int],
"to_move": 0|1, "winner": null|0|1, "done": bool, "last_action": null|int}``.

* ``prizes``: the prize cards turned up so far (values 1..13); the last one is on the table while the
  match runs. The order of the whole prize deck is drawn from ``seed`` (:func:`prize_order`).
* ``bids``: each seat's bids (card values 1..13) on the finished turns, in turn order.
* ``pending``: seat 0's bid on the current turn once it has chosen (seat 1 then chooses without seeing
  it); ``to_move`` is 1 exactly then. Both seats choose at once: ``acting_seats`` is ``(0, 1)`` at the
  start of a turn.
* ``points``: the sum of the prizes each seat won. ``last_action`` is the last bid played (an action id).

An action is ``card - 1`` (``0..12``): bid the card of that value from your hand.
"""

from __future__ import annotations

import functools
import json

import numpy as np

from environments._rules_util import (
    check_common_fields,
    check_seed,
    coerce_action,
    is_int,
    malformed,
    require,
    seeded_permutation,
)
from environments.base import Game, IllegalActionError, InvalidStateError, State

CARDS = 13
KEYS = ("seed", "prizes", "bids", "pending", "points", "to_move", "winner", "done", "last_action")
#: Length of the observation vector (see :meth:`Goofspiel.observation`).
OBS_SIZE = 4 + 3 * CARDS


@functools.lru_cache(maxsize=4096)
def prize_order(seed: int) -> tuple[int, ...]:
    """The prize deck (values 1..13) in the order ``seed`` turns it up."""
    return tuple(seeded_permutation(list(range(1, CARDS + 1)), "goofspiel", seed))


def _hand(state: State, seat: int) -> list[int]:
    """Card values ``seat`` still holds (its pending bid, if any, is no longer in its hand)."""
    used = set(state["bids"][seat])
    if seat == 0 and state["pending"] is not None:
        used.add(state["pending"])
    return [v for v in range(1, CARDS + 1) if v not in used]


class Goofspiel(Game):
    """Two players bid one card of 1..13 at once for each prize card; the higher bid takes it."""

    slug = "goofspiel"
    num_actions = CARDS
    has_chance = True
    observation_bounds = (0, 91)  # 91 = 1 + 2 + ... + 13 points
    hidden_information = True  # seat 0's bid is hidden until seat 1 has chosen
    simultaneous = True

    def initial_state(self, seed: int = 0) -> State:
        """Full hands, the first prize of the deck ``seed`` shuffles on the table."""
        check_seed(seed)
        return {
            "seed": seed,
            "prizes": list(prize_order(seed)[:1]),
            "bids": [[], []],
            "pending": None,
            "points": [0, 0],
            "to_move": 0,
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def to_move(self, state: State) -> int:
        """Seat 0 at the start of a turn, seat 1 once seat 0 has chosen."""
        return state["to_move"]

    def acting_seats(self, state: State) -> tuple[int, ...]:
        """Both seats at the start of a turn; seat 1 alone once seat 0 has chosen; none once over."""
        try:
            if state["done"]:
                return ()
            return (0, 1) if state["pending"] is None else (1,)
        except (KeyError, TypeError) as exc:
            raise malformed(state, exc) from exc

    def legal_actions(self, state: State) -> list[int]:
        """The cards the seat to move still holds (as actions ``card - 1``)."""
        try:
            if state["done"]:
                return []
            return [v - 1 for v in _hand(state, state["to_move"])]
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc

    def legal_actions_for(self, state: State, seat: int) -> list[int]:
        """The cards ``seat`` holds when it is one of the seats choosing now, else ``[]``."""
        if seat not in self.acting_seats(state):
            return []
        return [v - 1 for v in _hand(state, seat)]

    def apply(self, state: State, action: int) -> State:
        """Seat 0 lays its bid face down; seat 1's bid settles the turn and turns up the next prize."""
        card = coerce_action(action, CARDS) + 1
        try:
            if state["done"]:
                raise IllegalActionError("the game is over")
            me = state["to_move"]
            if me not in (0, 1):
                raise TypeError(f"to_move is {me!r}")
            if card not in _hand(state, me):
                raise IllegalActionError(f"card {card} (action {card - 1}) is no longer in your hand")
            new = {
                "seed": state["seed"],
                "prizes": list(state["prizes"]),
                "bids": [list(state["bids"][0]), list(state["bids"][1])],
                "pending": state["pending"],
                "points": list(state["points"]),
                "to_move": 1 - me,
                "winner": None,
                "done": False,
                "last_action": card - 1,
            }
            if me == 0:
                new["pending"] = card
                return new
            bid0, prize = new["pending"], new["prizes"][-1]
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc
        new["bids"][0].append(bid0)
        new["bids"][1].append(card)
        new["pending"] = None
        if bid0 != card:
            new["points"][0 if bid0 > card else 1] += prize
        if len(new["bids"][0]) == CARDS:
            new["done"] = True
            p0, p1 = new["points"]
            new["winner"] = None if p0 == p1 else (0 if p0 > p1 else 1)
        else:
            new["prizes"].append(prize_order(new["seed"])[len(new["prizes"])])
        return new

    def winner(self, state: State) -> int | None:
        """Seat with more points at the end (``None`` on equal points)."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Over after the 13th turn."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """int64 vector of 43 entries from ``seat``'s side (see ``info.yml``); a pending bid is hidden.

        ``[prize on the table (0 once over), my points, opponent's points, turn (0..13),
        13 x "I hold card v", 13 x "the opponent holds card v", 13 x "prize v is still to come"]``.
        """
        obs = np.zeros(OBS_SIZE, dtype=np.int64)
        done = state["done"]
        prizes = state["prizes"]
        obs[0] = 0 if done else prizes[-1]
        obs[1], obs[2] = state["points"][seat], state["points"][1 - seat]
        obs[3] = len(state["bids"][0])
        mine = _hand(state, seat)
        # The opponent's pending bid is still in its hand as far as ``seat`` knows.
        theirs = [v for v in range(1, CARDS + 1) if v not in state["bids"][1 - seat]]
        for v in mine:
            obs[3 + v] = 1
        for v in theirs:
            obs[3 + CARDS + v] = 1
        for v in set(range(1, CARDS + 1)) - set(prizes):
            obs[3 + 2 * CARDS + v] = 1
        return obs

    def redact(self, state: State, viewer: int | None) -> State:
        """Hide the seed (it fixes the prizes to come) and, from all but seat 0, that seat 0 has chosen.

        ``viewer`` 1 and spectators see the turn as it started (``pending`` null, ``to_move`` 0 and
        ``last_action`` the previous turn's) until both bids are in: both seats choose at once.
        """
        shown = super().redact(state, viewer)
        if not state["done"]:
            shown["seed"] = None
            if state["pending"] is not None and viewer != 0:  # as at the start of the turn
                previous = state["bids"][1][-1] - 1 if state["bids"][1] else None
                shown.update(pending=None, last_action=previous, to_move=0)
        return shown

    def validate_state(self, state: State) -> None:
        """Check the field types, then that replaying the bids from ``seed`` gives exactly ``state``."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        require(is_int(state["seed"]), "seed must be an int")
        bids = state["bids"]
        require(
            isinstance(bids, list)
            and len(bids) == 2
            and all(isinstance(b, list) and all(is_int(v) and 1 <= v <= CARDS for v in b) for b in bids),
            "bids must be two lists of card values 1..13",
        )
        require(len(bids[0]) == len(bids[1]), "both seats must have bid on every finished turn")
        pending = state["pending"]
        require(
            pending is None or (is_int(pending) and 1 <= pending <= CARDS), "pending must be null or 1..13"
        )
        replay = self.initial_state(state["seed"])
        try:
            for b0, b1 in zip(bids[0], bids[1], strict=True):
                replay = self.apply_joint(replay, {0: b0 - 1, 1: b1 - 1})
            if pending is not None:
                replay = self.apply(replay, pending - 1)
        except IllegalActionError as exc:
            raise InvalidStateError(f"the bids cannot have been played: {exc}") from exc
        for key in KEYS:
            # Compared as JSON: ``True == 1`` in Python, not in a state.
            require(json.dumps(state[key]) == json.dumps(replay[key]), f"{key} must be {replay[key]!r}")

    def describe_action(self, state: State, action: int) -> str:
        """E.g. ``"bids 7"``."""
        return f"bids {coerce_action(action, CARDS) + 1}"


GAME = Goofspiel()
