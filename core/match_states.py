"""Match states at rest: a match stores its actions, and its states only where the rules cannot replay them.

The referee records the state after each action (``len(states) == len(actions)``), and in a game with
chance its initial state first (the deal: ``len(actions) + 1`` states). Those states are most of a
result's bytes, yet the game's rules give them back from the actions. So a match is stored with
:func:`compact` states:

- a game without chance: ``[]``;
- a game with chance: ``[initial state]`` (the deal; the rules replay the rest);
- otherwise (a match of at most one action, states that do not have the referee's shape, or that the rules
  do not give back byte for byte from the actions) the states as recorded.

:func:`recorded` turns what is stored back into the states as the referee recorded them, for every reader
(the replay viewer and API through ``web/replays.py``, the training records ``core/records.py``). Rows
stored with every state, and rows whose states retention pruned the same way (``ops/retention.py``), read
the same.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

log = logging.getLogger(__name__)


def _replay(game: Any, state: Any, actions: list[Any]) -> list[Any]:
    """The states after each of ``actions`` from ``state``."""
    out = []
    for action in actions:
        state = game.apply(state, action)
        out.append(state)
    return out


def compact(game: Any, states: list[Any], actions: list[Any]) -> list[Any]:
    """What to store of a match's recorded ``states``: the least that :func:`recorded` gives back exactly.

    The rules replay the actions here once and the result must encode to the same JSON as the recorded
    states; anything else keeps the states as recorded."""
    n = len(actions)
    if n <= 1:  # nothing to gain; and one stored state could not be told from the deal alone
        return states
    if game.has_chance:
        if len(states) != n + 1:
            return states
        start, kept, expected = states[0], states[:1], states[1:]
    else:
        if len(states) != n:
            return states
        start, kept, expected = game.initial_state(), [], states
    try:
        same = orjson.dumps(_replay(game, start, actions)) == orjson.dumps(expected)
    except Exception:  # rules that refuse the actions, or states that are not JSON: keep what was recorded
        log.debug("the states of a %s match are kept: the rules cannot replay them", game, exc_info=True)
        return states
    return kept if same else states


def recorded(game: Any, states: list[Any], actions: list[Any]) -> list[Any]:
    """The states as the referee recorded them, from what is stored (full, :func:`compact`, or pruned
    by retention). Stored states that are not compact are returned as they are."""
    n = len(actions)
    if n <= 1:
        return states
    if game.has_chance:
        if len(states) != 1:
            return states
        return [states[0], *_replay_accepted(game, states[0], actions)]
    if states:
        return states
    return _replay_accepted(game, game.initial_state(), actions)


def _replay_accepted(game: Any, state: Any, actions: list[Any]) -> list[Any]:
    """Like :func:`_replay`, stopping at an action the rules refuse (as ``web/replays.py`` does)."""
    out = []
    for action in actions:
        try:
            state = game.apply(state, action)
        except Exception:
            log.debug("cannot replay action %r of %s", action, game, exc_info=True)
            break
        out.append(state)
    return out
