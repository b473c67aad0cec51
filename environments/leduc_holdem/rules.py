"""Leduc Hold'em: a match of ``HANDS`` hands of the two-round poker game of the research literature.

One hand (Southey et al., 2005; OpenSpiel's ``leduc_poker``): a deck of six cards, J, Q and K in two
suits. Both players ante 1 chip and get one private card. A betting round follows, then one public card
is turned up and a second betting round follows. Bets and raises are 2 chips in the first round and 4 in
the second, at most two raises (the bet counts as one) per round. The player who acts first in a hand
acts first in both rounds. Folding loses the chips put in; at the showdown a private card pairing the
public card wins, else the higher rank; equal ranks split the pot.

The match: ``HANDS`` hands; seat ``h % 2`` acts first in hand ``h``. Each hand's deal is drawn from
``(seed, h)`` by :func:`deal` (chance seeded per match). The seat with more chips won over the match
wins it; equal chips are a draw.

State: ``{"seed": int, "hand": int, "cards": [int, int], "public": null|int, "betting": [[int], [int]],
"pot": [int, int], "chips": [int, int], "history": [finished hands], "to_move": 0|1, "winner": null|0|1,
"done": bool, "last_action": null|int}``. Cards are ``0..5`` with rank ``card // 2`` (0 J, 1 Q, 2 K);
``betting`` holds the current hand's actions per round; ``pot`` what each seat has put in this hand;
``chips`` the net chips of finished hands. A finished hand is ``{"cards", "public", "betting", "net"}``
(``public`` null when it ended before the turn; ``net`` the chips each seat won). Once the match is
over, the last hand stays in ``cards``/``public``/``betting``/``pot`` too.

Actions (OpenSpiel's ids): ``0`` fold, ``1`` call (check when there is nothing to call), ``2`` raise
(bet when there is nothing to call). Folding is legal only when facing a bet.
"""

from __future__ import annotations

import functools
import json
from typing import Any

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

HANDS = 10
FOLD, CALL, RAISE = 0, 1, 2
ANTE = 1
RAISE_SIZE = (2, 4)
MAX_RAISES = 2
RANKS = "JQK"
SUITS = "♥♠"
KEYS = (
    "seed",
    "hand",
    "cards",
    "public",
    "betting",
    "pot",
    "chips",
    "history",
    "to_move",
    "winner",
    "done",
    "last_action",
)
#: Length of the observation vector (see :meth:`LeducHoldem.observation`).
OBS_SIZE = 16
#: At most check/bet, raise, raise, call: four actions per betting round.
MAX_ROUND_ACTIONS = 4


@functools.lru_cache(maxsize=4096)
def deal(seed: int, hand: int) -> tuple[int, int, int]:
    """``(seat 0's card, seat 1's card, public card)`` of hand ``hand`` of the match seeded ``seed``."""
    c0, c1, public = seeded_permutation(list(range(6)), "leduc-holdem", seed, hand)[:3]
    return c0, c1, public


def card_name(card: int) -> str:
    """E.g. ``"Q♠"``."""
    return RANKS[card // 2] + SUITS[card % 2]


def first_actor(hand: int) -> int:
    """The seat that acts first (in both rounds) in hand ``hand``."""
    return hand % 2


def actor(hand: int, round_actions: list[int]) -> int:
    """The seat to act in a betting round after ``round_actions``."""
    return (first_actor(hand) + len(round_actions)) % 2


def showdown(cards: list[int], public: int) -> int | None:
    """The seat holding the better hand against ``public``, or ``None`` for equal ranks."""
    pair = [c // 2 == public // 2 for c in cards]
    if pair[0] != pair[1]:
        return 0 if pair[0] else 1
    r0, r1 = cards[0] // 2, cards[1] // 2
    return None if r0 == r1 else (0 if r0 > r1 else 1)


def _new_hand(seed: int, hand: int) -> dict[str, Any]:
    c0, c1, _ = deal(seed, hand)
    return {"hand": hand, "cards": [c0, c1], "public": None, "betting": [[], []], "pot": [ANTE, ANTE]}


def _copy(state: State) -> State:
    """A deep copy of a (valid) state, much faster than ``copy.deepcopy``."""
    copied = dict(state)
    for key in ("cards", "pot", "chips"):
        copied[key] = list(state[key])
    copied["betting"] = [list(state["betting"][0]), list(state["betting"][1])]
    copied["history"] = [
        {
            "cards": list(h["cards"]),
            "public": h["public"],
            "betting": [list(h["betting"][0]), list(h["betting"][1])],
            "net": list(h["net"]),
        }
        for h in state["history"]
    ]
    return copied


class LeducHoldem(Game):
    """Ten hands of two-player limit Leduc Hold'em; the seat that wins more chips wins the match."""

    slug = "leduc-holdem"
    num_actions = 3
    has_chance = True
    observation_bounds = (-13 * HANDS, 13 * HANDS)  # chips won over a match
    hidden_information = True
    alternating = False  # the first actor changes from hand to hand

    def initial_state(self, seed: int = 0) -> State:
        """Hand 0 dealt from ``seed``, antes in, seat 0 to act."""
        check_seed(seed)
        return {
            "seed": seed,
            **_new_hand(seed, 0),
            "chips": [0, 0],
            "history": [],
            "to_move": 0,
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def to_move(self, state: State) -> int:
        """The seat whose turn it is in the current betting round."""
        return state["to_move"]

    def legal_actions(self, state: State) -> list[int]:
        """Call always; raise under the cap of two raises a round; fold only when facing a bet."""
        try:
            if state["done"]:
                return []
            pot = state["pot"]
            me = state["to_move"]
            round_actions = state["betting"][1 if state["public"] is not None else 0]
            legal = [CALL]
            if pot[me] < pot[1 - me]:
                legal.insert(0, FOLD)
            if round_actions.count(RAISE) < MAX_RAISES:
                legal.append(RAISE)
            return legal
        except (KeyError, TypeError, IndexError) as exc:
            raise malformed(state, exc) from exc

    def apply(self, state: State, action: int) -> State:
        """Play ``action`` for the seat to move; a finished hand deals the next one."""
        action = coerce_action(action, 3)
        if action not in self.legal_actions(state):
            if state["done"]:
                raise IllegalActionError("the game is over")
            if action == FOLD:
                raise IllegalActionError("fold (action 0) is only legal when facing a bet: check (1) instead")
            raise IllegalActionError("raise (action 2) is illegal: this round already had two raises")
        try:
            new = _copy(state)
            me = new["to_move"]
            rnd = 1 if new["public"] is not None else 0
            round_actions = new["betting"][rnd]
            pot = new["pot"]
        except (KeyError, TypeError, ValueError) as exc:
            raise malformed(state, exc) from exc
        round_actions.append(action)
        new["last_action"] = action
        if action == FOLD:
            return self._end_hand(new, winner=1 - me)
        if action == RAISE:
            pot[me] = pot[1 - me] + RAISE_SIZE[rnd]
        else:
            pot[me] = pot[1 - me]
            if len(round_actions) >= 2:  # check-check, or a call of a bet or raise: the round is over
                if rnd == 0:
                    new["public"] = deal(new["seed"], new["hand"])[2]
                    new["to_move"] = first_actor(new["hand"])
                    return new
                return self._end_hand(new, winner=showdown(new["cards"], new["public"]))
        new["to_move"] = 1 - me
        return new

    def _end_hand(self, new: State, winner: int | None) -> State:
        """Settle the pot of ``new``'s hand (``winner`` None: split), then deal the next or end the match."""
        won = 0 if winner is None else new["pot"][1 - winner]
        net = [0, 0] if winner is None else ([won, -won] if winner == 0 else [-won, won])
        new["chips"] = [new["chips"][0] + net[0], new["chips"][1] + net[1]]
        new["history"].append(
            {"cards": new["cards"], "public": new["public"], "betting": new["betting"], "net": net}
        )
        if new["hand"] + 1 < HANDS:
            new.update(_new_hand(new["seed"], new["hand"] + 1))
            new["to_move"] = first_actor(new["hand"])
            return new
        new["cards"] = list(new["cards"])
        new["betting"] = [list(new["betting"][0]), list(new["betting"][1])]
        new["done"] = True
        c0, c1 = new["chips"]
        new["winner"] = None if c0 == c1 else (0 if c0 > c1 else 1)
        new["to_move"] = first_actor(new["hand"])
        return new

    def winner(self, state: State) -> int | None:
        """The seat that won more chips over the match (``None`` on equal chips)."""
        return state["winner"]

    def is_over(self, state: State) -> bool:
        """Over once the last hand is settled."""
        return state["done"]

    def observation(self, state: State, seat: int) -> np.ndarray:
        """int64 vector of 16 entries, from ``seat``'s side; the opponent's card is never in it.

        ``[my card's rank, public card's rank or -1, betting round, my chips in the pot, the opponent's,
        4 x round-0 actions (-1 none), 4 x round-1 actions, hand number, my net chips over the finished
        hands, 1 if I act first in this hand]``.
        """
        obs = np.full(OBS_SIZE, -1, dtype=np.int64)
        obs[0] = state["cards"][seat] // 2
        public = state["public"]
        obs[1] = -1 if public is None else public // 2
        obs[2] = 0 if public is None else 1
        obs[3], obs[4] = state["pot"][seat], state["pot"][1 - seat]
        for rnd in (0, 1):
            actions = state["betting"][rnd]
            obs[5 + 4 * rnd : 5 + 4 * rnd + len(actions)] = actions
        obs[13] = state["hand"]
        obs[14] = state["chips"][seat]
        obs[15] = int(first_actor(state["hand"]) == seat)
        return obs

    def redact(self, state: State, viewer: int | None) -> State:
        """While the match runs: the seed, the current hand's hidden cards and folded hands' cards hidden.

        ``viewer`` keeps its own cards; a spectator (``None``) sees no private card of an unfinished
        hand. Cards shown at a showdown stay shown. A finished match hides nothing.
        """
        shown = super().redact(state, viewer)
        if state["done"]:
            return shown
        shown["seed"] = None
        shown["cards"] = [c if seat == viewer else None for seat, c in enumerate(shown["cards"])]
        for past in shown["history"]:
            folded = FOLD in past["betting"][0] or FOLD in past["betting"][1]
            if folded:
                past["cards"] = [c if seat == viewer else None for seat, c in enumerate(past["cards"])]
        return shown

    def _hand_start(self, seed: int, hand: int) -> State:
        """The state at the start of hand ``hand`` with no chips or history (validation replays hands)."""
        return {
            "seed": seed,
            **_new_hand(seed, hand),
            "chips": [0, 0],
            "history": [],
            "to_move": first_actor(hand),
            "winner": None,
            "done": False,
            "last_action": None,
        }

    def _replay_hand(self, seed: int, hand: int, betting: Any) -> State:
        """Replay one hand's ``betting`` from its deal; the result's ``history`` holds it once it ended."""
        require(
            isinstance(betting, list)
            and len(betting) == 2
            and all(
                isinstance(r, list) and len(r) <= MAX_ROUND_ACTIONS and all(is_int(a) for a in r)
                for r in betting
            ),
            "betting must be two lists of at most 4 action ids",
        )
        replay = self._hand_start(seed, hand)
        actions = betting[0] + betting[1]
        try:
            for n, action in enumerate(actions):
                require(not replay["history"], f"hand {hand} ended before its action {n + 1}")
                replay = self.apply(replay, action)
        except IllegalActionError as exc:
            raise InvalidStateError(f"hand {hand}'s betting cannot have been played: {exc}") from exc
        return replay

    def validate_state(self, state: State) -> None:
        """Check field types, then that replaying each hand's betting from ``seed`` gives ``state``."""
        super().validate_state(state)
        check_common_fields(state, KEYS)
        seed, hand, history = state["seed"], state["hand"], state["history"]
        require(is_int(seed), "seed must be an int")
        require(is_int(hand) and 0 <= hand < HANDS, f"hand must be 0..{HANDS - 1}")
        require(isinstance(history, list), "history must be a list")
        require(len(history) == hand + state["done"], "history must hold every finished hand")
        chips = [0, 0]
        last_action = None
        for h, past in enumerate(history):
            require(isinstance(past, dict) and set(past) == {"cards", "public", "betting", "net"}, "bad hand")
            replay = self._replay_hand(seed, h, past["betting"])
            require(len(replay["history"]) == 1, f"hand {h} must have ended")
            require(
                json.dumps(past) == json.dumps(replay["history"][0]),
                f"hand {h} must be {replay['history'][0]}",
            )
            chips = [chips[0] + past["net"][0], chips[1] + past["net"][1]]
            last_action = past["betting"][1][-1] if past["betting"][1] else past["betting"][0][-1]
        if state["done"]:
            last = history[-1]
            c0, c1 = chips
            expected = {
                "cards": last["cards"],
                "public": last["public"],
                "betting": last["betting"],
                "pot": replay["pot"],
                "to_move": first_actor(hand),
                "winner": None if c0 == c1 else (0 if c0 > c1 else 1),
            }
        else:
            replay = self._replay_hand(seed, hand, state["betting"])
            require(not replay["history"], f"hand {hand} must still be running")
            current = state["betting"][0] + state["betting"][1]
            if current:
                last_action = current[-1]
            expected = {
                key: replay[key] for key in ("cards", "public", "betting", "pot", "to_move", "winner")
            }
        expected.update(chips=chips, last_action=last_action)
        for key, value in expected.items():
            # Compared as JSON: ``True == 1`` in Python, not in a state.
            require(json.dumps(state[key]) == json.dumps(value), f"{key} must be {value!r}")

    def describe_action(self, state: State, action: int) -> str:
        """``"folds"``, ``"checks"``, ``"calls"``, ``"bets 2"``, ``"raises to 9"``..."""
        action = coerce_action(action, 3)
        try:
            me = state["to_move"]
            pot = state["pot"]
            rnd = 1 if state["public"] is not None else 0
            facing = pot[me] < pot[1 - me]
        except (KeyError, TypeError, IndexError):
            return ("folds", "calls", "raises")[action]
        if action == FOLD:
            return "folds"
        if action == CALL:
            return "calls" if facing else "checks"
        return f"raises to {pot[1 - me] + RAISE_SIZE[rnd]}" if facing else f"bets {RAISE_SIZE[rnd]}"


GAME = LeducHoldem()
