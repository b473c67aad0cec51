"""Small helpers shared by the rules modules (action coercion, state checks)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from environments.base import IllegalActionError, InvalidStateError, State

COMMON_KEYS = ("to_move", "winner", "done", "last_action")


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def coerce_action(action: Any, num_actions: int) -> int:
    """Return ``action`` as a plain int in ``range(num_actions)`` or raise ``IllegalActionError``.

    Python ints and numpy integers are accepted; bools, floats, strings and everything else are not.
    """
    if type(action) is not int:
        if isinstance(action, np.integer):
            action = int(action)
        else:
            raise IllegalActionError(
                f"action must be an integer, got {type(action).__name__} {_short_repr(action)}"
            )
    if not 0 <= action < num_actions:
        raise IllegalActionError(f"action {action} is out of range: actions are 0..{num_actions - 1}")
    return action


def require(condition: bool, message: str) -> None:
    """Raise ``InvalidStateError(message)`` unless ``condition`` holds."""
    if not condition:
        raise InvalidStateError(message)


def is_int(value: Any) -> bool:
    """Whether ``value`` is a plain int (bools excluded)."""
    return type(value) is int


def check_common_fields(state: Any, keys: tuple[str, ...]) -> None:
    """Check ``state`` is a dict with exactly ``keys`` and well-typed common fields."""
    require(isinstance(state, dict), f"state must be a dict, got {type(state).__name__}")
    require(set(state) == set(keys), f"state keys must be {sorted(keys)}, got {sorted(map(str, state))}")
    require(state["to_move"] in (0, 1) and is_int(state["to_move"]), "to_move must be 0 or 1")
    winner = state["winner"]
    require(winner is None or (is_int(winner) and winner in (0, 1)), "winner must be null, 0 or 1")
    require(type(state["done"]) is bool, "done must be a boolean")
    last = state["last_action"]
    require(last is None or is_int(last), "last_action must be null or an integer")


def malformed(state: State, exc: Exception) -> InvalidStateError:
    """The error to raise when reading ``state`` failed with ``exc`` (missing key, wrong type...)."""
    return InvalidStateError(
        f"malformed state ({type(exc).__name__}: {exc}); call validate_state() for details"
    )


def seeded_permutation(items: list[int], *salt: object) -> list[int]:
    """``items`` shuffled by ``salt`` (e.g. the game's slug, the match seed, a hand number).

    Built on SHA-256 rather than ``random``, so a recorded seed replays the same deal on every Python
    version and machine.
    """
    prefix = ":".join(str(part) for part in salt)

    def key(item: int) -> bytes:
        return hashlib.sha256(f"{prefix}:{item}".encode()).digest()

    return sorted(items, key=key)


def check_seed(seed: Any) -> int:
    """``seed`` if it is a plain int, else ``TypeError`` (a bool or float seed is a caller's bug)."""
    if not is_int(seed):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    return seed
