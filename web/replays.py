"""Replays as people read them: the position before the first move, and each move in the game's words."""

from __future__ import annotations

import logging
from typing import Any

from environments import UnknownGameError, get_game

log = logging.getLogger(__name__)

_SEAT_OF_RESULT = {"PLAYER_1_WIN": 0, "PLAYER_2_WIN": 1, "PLAYER_1_ERROR": 0, "PLAYER_2_ERROR": 1}


def replay_states(
    slug: str, states: list[Any], actions: list[Any], seats: list[str]
) -> tuple[list[Any], list[dict[str, Any]]]:
    """``(states, moves)`` for the replay viewer.

    The referee records the state after each action, so ``len(states) == len(actions)``: the game's
    initial position is put first. (A replay that already starts with it, ``len(actions) + 1`` states,
    is kept as it is; one recorded without states stays empty.) ``moves[i]`` is ``{"player": name,
    "seat": 0|1, "action": actions[i], "text": the game's description}`` for ``actions[i]``.
    """
    try:
        game = get_game(slug)
    except UnknownGameError:
        raw = [{"player": "", "seat": None, "action": a, "text": f"action {a}"} for a in actions]
        return list(states), raw
    full = list(states)
    if len(full) == len(actions):
        full = [game.initial_state(), *full]
    elif len(full) <= 1 and actions:  # states pruned by retention (ops/retention.py): replay the actions
        full = _replayed(game, full[0] if full else game.initial_state(), actions)
    moves = []
    for i, action in enumerate(actions):
        before = full[i] if i < len(full) else None
        seat = before.get("to_move") if isinstance(before, dict) else None
        text = f"action {action}"
        if before is not None:
            try:
                text = game.describe_action(before, action)
            except Exception:  # a replay stored by an older referee: keep the raw action
                log.debug("cannot describe action %r of %s", action, slug, exc_info=True)
        player = seats[seat] if seat in (0, 1) else ""
        moves.append({"player": player, "seat": seat, "action": action, "text": text})
    return full, moves


def _replayed(game: Any, initial: Any, actions: list[Any]) -> list[Any]:
    """The states of a match from its first state and its actions (as many as the rules accept)."""
    full = [initial]
    for action in actions:
        try:
            full.append(game.apply(full[-1], action))
        except Exception:  # an action the rules refuse (it was charged as INVALID_ACTION): stop there
            log.debug("cannot replay action %r of %s", action, game, exc_info=True)
            break
    return full


def match_result_text(match: Any, names: list[str]) -> str:
    """E.g. ``"minimax won"``, ``"random erred (TIMEOUT): minimax scores the match"``, ``"draw"``."""
    seat = _SEAT_OF_RESULT.get(match.result)
    if match.result in ("PLAYER_1_WIN", "PLAYER_2_WIN") and seat is not None:
        return f"{names[seat]} won"
    if match.result in ("PLAYER_1_ERROR", "PLAYER_2_ERROR") and seat is not None:
        kind = f" ({match.error_kind})" if match.error_kind else ""
        return f"{names[seat]} erred{kind}: {names[1 - seat]} scores the match"
    if match.result == "DRAW":
        return "draw"
    return "no result: an error on our side, nobody is charged"
