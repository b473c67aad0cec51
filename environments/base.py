"""The contract every game implements.

A game is a set of pure functions over a JSON-able ``state`` (a ``dict`` of plain lists, ints and strings).
Nothing here touches the network, the database or Docker. Every method that returns a state returns a
*new* object: callers may keep and mutate what they get without affecting the game or other states.

Seats are numbered 0 and 1. Seat 0 is whoever moves first in a match; the referee maps seats to
``PLAYER_1``/``PLAYER_2`` and alternates who starts.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


class Game(ABC):
    """Pure rules of a two-player, turn-based, zero-sum game."""

    #: URL slug, e.g. ``"connect-four"``; the package uses underscores.
    slug: str
    #: Number of distinct action ids; actions are ints in ``range(num_actions)``.
    num_actions: int

    @abstractmethod
    def initial_state(self) -> State:
        """The state before the first move."""

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

        return Path(sys.modules[type(self).__module__].__file__).resolve().parent
