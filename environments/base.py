"""The contract every game implements.

A game is a set of pure functions over a JSON-able ``state`` (a ``dict`` of plain lists, ints and strings).
Nothing here touches the network, the database or Docker. Every method that returns a state returns a
*new* object: callers may keep and mutate what they get without affecting the game or other states.

Seats are numbered 0 and 1. Seat 0 is whoever moves first in a match; the referee maps seats to
``PLAYER_1``/``PLAYER_2`` and alternates who starts.

Three optional capabilities, all off by default (the board games use none of them):

* **Chance** (``has_chance``): ``initial_state(seed)`` draws everything random from ``seed`` (the referee
  draws one seed per match and records it), so the seed and the actions replay the same states.
* **Private information** (``hidden_information``): ``observation(state, seat)`` shows a seat only what it
  may know, while the state itself keeps everything (the duel JSON stores full states).
  ``redact(state, viewer)`` is the state as ``viewer`` (a seat, or ``None`` for a spectator) may see it
  while the match runs: live pages and running replays draw redacted states, finished replays full ones.
* **Simultaneous moves** (``acting_seats``): a turn on which several seats choose at once. The rules stay
  sequential (``apply`` takes one action of ``to_move``), like PettingZoo's AEC form of simultaneous
  games: a simultaneous turn is played by ``apply_joint``, which applies the seats' actions in seat order,
  and the game guarantees that a later seat's observation, legal actions and redacted view do not
  depend on what an earlier seat chose on the same turn. The referee asks every acting seat at once,
  each on its own deadline.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is loaded by the games' rules, not by importing the contract
    import numpy as np

State = dict[str, Any]


class IllegalActionError(ValueError):
    """Raised when an action is not legal in the given state. The message says why, for a human."""


class InvalidStateError(ValueError):
    """Raised when a state does not describe a reachable position of the game."""


@dataclass(frozen=True)
class GameInfo:
    """What ``info.yml`` says about a game: shown to users and used to configure duels."""

    slug: str
    name: str
    description: str
    matches_per_duel: int
    move_time_limit: float  # seconds per move, wall clock
    init_time_limit: float  # seconds to import player.py and build the Player
    memory_limit_mb: int
    cpu_limit: float  # CPUs (Docker --cpus)
    smoke_test_matches: int
    extra: dict[str, Any] = field(default_factory=dict)
    #: Size of each agent's persistent data folder in MB (optional ``data_mb``; ``None``: the platform's
    #: ``AGENT_DATA_MB``).
    data_mb: int | None = None
    #: Seconds of each agent's time bank per match (optional ``time_bank_s``, Kaggle's overage): a reply
    #: slower than ``move_time_limit`` draws the excess from it; 0: no bank.
    time_bank_s: float = 0.0


class Game(ABC):
    """Pure rules of a two-player, zero-sum game (turn-based unless ``acting_seats`` says otherwise)."""

    #: URL slug, e.g. ``"connect-four"``; the package uses underscores.
    slug: str
    #: Number of distinct action ids; actions are ints in ``range(num_actions)``.
    num_actions: int
    #: Whether ``initial_state(seed)`` depends on ``seed`` (cards dealt, prizes shuffled...).
    has_chance: bool = False
    #: Whether seats see less than the full state (``observation`` and ``redact`` hide something).
    hidden_information: bool = False
    #: Whether some turns have several acting seats (``acting_seats``).
    simultaneous: bool = False
    #: Whether the seats strictly take turns (``to_move`` flips after every action).
    alternating: bool = True
    #: ``(low, high)`` of every observation entry, for spaces such as PettingZoo's (``None``: unbounded).
    observation_bounds: tuple[int, int] | None = None

    @abstractmethod
    def initial_state(self, seed: int = 0) -> State:
        """The state before the first move; games with chance draw it from ``seed`` (others ignore it)."""

    @abstractmethod
    def to_move(self, state: State) -> int:
        """Seat (0 or 1) whose turn it is. Undefined once the game is over."""

    @abstractmethod
    def legal_actions(self, state: State) -> list[int]:
        """Sorted legal action ids; empty exactly when the game is over."""

    @abstractmethod
    def apply(self, state: State, action: int) -> State:
        """Return the state after the player to move plays ``action``.

        Raises ``IllegalActionError`` (with a readable reason) for an illegal or malformed action
        and never mutates ``state``.
        """

    @abstractmethod
    def winner(self, state: State) -> int | None:
        """Seat that has won, or ``None`` (game not over, or a draw)."""

    @abstractmethod
    def is_over(self, state: State) -> bool:
        """Whether the match has ended (win or draw)."""

    @abstractmethod
    def observation(self, state: State, seat: int) -> np.ndarray:
        """What the agent in ``seat`` sees: a fresh numpy array, documented per game."""

    def observation_value(self, state: State, seat: int) -> Any:
        """``observation(state, seat)`` as the protocol sends it: nested lists (or tuples) of Python
        numbers whose JSON is that of ``observation(state, seat).tolist()``. The referee calls it at every
        move; a game may build it without numpy (it may share immutable parts between calls)."""
        return self.observation(state, seat).tolist()

    def acting_seats(self, state: State) -> tuple[int, ...]:
        """Seats that choose an action now, at once: ``(to_move,)`` in turn-based games, ``()`` once over.

        A simultaneous game returns both seats at the start of a simultaneous turn (``to_move`` is then the
        first of them) and only the seats still to choose once an earlier one has played.
        """
        return () if self.is_over(state) else (self.to_move(state),)

    def legal_actions_for(self, state: State, seat: int) -> list[int]:
        """Sorted legal actions of ``seat``, which may be any of ``acting_seats(state)``; ``[]`` otherwise."""
        if seat not in self.acting_seats(state):
            return []
        return self.legal_actions(state) if seat == self.to_move(state) else []

    def apply_joint(self, state: State, actions: dict[int, Any]) -> State:
        """Play one turn: ``actions`` maps every acting seat to its action; they are applied in seat order.

        Raises ``IllegalActionError`` if the seats are not exactly ``acting_seats(state)`` or an action is
        illegal; an action of a later seat is judged against ``legal_actions_for`` before the turn started.
        """
        seats = self.acting_seats(state)
        if sorted(actions) != sorted(seats):
            raise IllegalActionError(f"this turn needs actions of seats {list(seats)}, got {sorted(actions)}")
        for seat in seats:
            if seat != self.to_move(state):
                raise IllegalActionError(f"seat {seat} is not to move")
            state = self.apply(state, actions[seat])
        return state

    def redact(self, state: State, viewer: int | None) -> State:
        """``state`` as ``viewer`` (a seat, or ``None`` for a spectator) may see it while the match runs.

        Hidden parts are replaced by ``None`` (a card face down); the result is a fresh object that
        renderers draw like any state. Perfect-information games return a plain copy.
        """
        return json.loads(json.dumps(state))

    def rewards(self, state: State) -> tuple[float, float]:
        """Final rewards of seats 0 and 1: +1 win, -1 loss, 0 draw (0, 0 while the game runs)."""
        if not self.is_over(state):
            return (0.0, 0.0)
        w = self.winner(state)
        if w is None:
            return (0.0, 0.0)
        return (1.0, -1.0) if w == 0 else (-1.0, 1.0)

    def validate_state(self, state: State) -> None:
        """Raise ``InvalidStateError`` if ``state`` is malformed. Default: must round-trip through JSON."""
        try:
            if json.loads(json.dumps(state)) != state:
                raise InvalidStateError("state does not round-trip through JSON")
        except (TypeError, ValueError) as exc:
            raise InvalidStateError(f"state is not JSON-able: {exc}") from exc

    def describe_action(self, state: State, action: int) -> str:
        """A short human description of ``action`` (for logs and replays)."""
        return str(action)

    @property
    def package_dir(self) -> Path:
        """Folder holding this game's ``info.yml`` and ``static/``."""
        import sys

        module_file = sys.modules[type(self).__module__].__file__
        assert module_file is not None, "a game is defined in a file"
        return Path(module_file).resolve().parent
