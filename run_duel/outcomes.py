"""The typed vocabulary of duel outcomes, shared by the referee and the platform.

Every result and error kind that crosses a package boundary is one of these values. They are ``StrEnum``
members, so they are written to the duel JSON and the database as the plain strings of the rl-arena
format (``"PLAYER_1_WIN"``, ``"TIMEOUT"``...) and compare equal to them.
"""

from __future__ import annotations

from enum import StrEnum


class DuelResult(StrEnum):
    """A duel's ``result``: who scored more over its matches, or ERROR when it could not be played."""

    PLAYER_1_WIN = "PLAYER_1_WIN"
    PLAYER_2_WIN = "PLAYER_2_WIN"
    DRAW = "DRAW"
    ERROR = "ERROR"

    @property
    def label(self) -> str:
        return _LABELS[self]


class MatchResult(StrEnum):
    """A match's ``result``. A player's error is that player's loss; OTHER_ERROR (ours) counts for nobody."""

    PLAYER_1_WIN = "PLAYER_1_WIN"
    PLAYER_2_WIN = "PLAYER_2_WIN"
    DRAW = "DRAW"
    PLAYER_1_ERROR = "PLAYER_1_ERROR"
    PLAYER_2_ERROR = "PLAYER_2_ERROR"
    OTHER_ERROR = "OTHER_ERROR"

    @property
    def label(self) -> str:
        return _LABELS[self]

    @classmethod
    def player_error(cls, seat: int) -> MatchResult:
        """The error result charged to ``seat`` (0: player 1)."""
        return (cls.PLAYER_1_ERROR, cls.PLAYER_2_ERROR)[seat]

    @classmethod
    def win(cls, seat: int) -> MatchResult:
        """The win of ``seat`` (0: player 1)."""
        return (cls.PLAYER_1_WIN, cls.PLAYER_2_WIN)[seat]


class ErrorKind(StrEnum):
    """Why a match ended in an error. Every kind but INFRA is charged to the player who caused it."""

    TIMEOUT = "TIMEOUT"
    CRASH = "CRASH"
    INVALID_ACTION = "INVALID_ACTION"
    MEMORY_LIMIT = "MEMORY_LIMIT"
    OUTPUT_LIMIT = "OUTPUT_LIMIT"
    BAD_OUTPUT = "BAD_OUTPUT"
    INFRA = "INFRA"

    @property
    def charged_to_player(self) -> bool:
        return self is not ErrorKind.INFRA


#: Error kinds charged to a player (``PLAYER_x_ERROR``), in the order the docs list them.
PLAYER_ERROR_KINDS = tuple(k for k in ErrorKind if k.charged_to_player)

_LABELS: dict[StrEnum, str] = {
    DuelResult.PLAYER_1_WIN: "player 1 won",
    DuelResult.PLAYER_2_WIN: "player 2 won",
    DuelResult.DRAW: "draw",
    DuelResult.ERROR: "error",
    MatchResult.PLAYER_1_ERROR: "player 1 error",
    MatchResult.PLAYER_2_ERROR: "player 2 error",
    MatchResult.OTHER_ERROR: "infrastructure error",
}
