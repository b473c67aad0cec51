"""What an error says to whom: a sentence the platform writes for everyone, the detail for its owner.

The referee's ``error_msg`` of a match (and the live game's) quotes the agent: its exception and traceback
(lines of its ``player.py``), the last lines of its stderr, or the bytes it sent instead of an action. That
is its owner's business. Public pages and the API show the error kind and a sentence written here from
structured fields only (the kind, which seat erred, how many moves were played); the referee's text is
the *detail*, shown to the owner of the agent that erred and to staff:

* a match charged to a player (``PLAYER_x_ERROR``): that player's owner and staff. The referee may append
  ``"\\n\\nAlso ..."`` about the *other* player (both failed, or the other one failed when told the match was
  over): that part is cut unless the viewer may also see the other side's detail;
* an error on our side (``OTHER_ERROR``, a duel that could not run, a live game that ``FAILED``): our
  own tracebacks and sandbox messages, staff only;
* a live game the agent lost by erring: the agent's owner and staff (the person playing sees the sentence).

No stored field changes meaning: ``error_msg`` keeps the referee's text (the private detail), and the
public sentence is derived on every read, so old rows are covered without a data migration.
"""

from __future__ import annotations

from typing import Any

from web.logtext import explain_error, scrub_paths
from web.queries import can_see_private

#: What each error kind means, as the end of "<name> (player N) ...".
_KIND_SENTENCES = {
    "TIMEOUT": "did not answer within its time limit",
    "CRASH": "crashed (its code raised an exception or its process ended)",
    "INVALID_ACTION": "played an illegal move",
    "MEMORY_LIMIT": "went over its memory limit",
    "OUTPUT_LIMIT": "sent more output than its limit allows",
    "BAD_OUTPUT": "sent a reply that is not a valid move message",
}
OUR_SIDE_MATCH = "The match could not be played because of an error on our side; it counts for nobody."
OUR_SIDE_DUEL = "The duel could not be played because of an error on our side; nobody is charged."
DETAIL_SEPARATOR = "\n\nAlso "
_SEAT = {"PLAYER_1_ERROR": 0, "PLAYER_2_ERROR": 1}


def _moves(n: int) -> str:
    return f"after {n} move{'s' if n != 1 else ''} of the match"


def agent_error_sentence(kind: str, who: str, moves: int) -> str:
    """E.g. ``"minimax (player 2) did not answer within its time limit, after 3 moves of the match."``"""
    what = _KIND_SENTENCES.get(kind or "", "broke the rules of the arena")
    return f"{who} {what}, {_moves(moves)}."


def match_sentence(result: str, kind: str, names: tuple[str, str] | list[str], moves: int) -> str:
    """The public sentence for a match that ended in an error; ``""`` for one decided on the board."""
    seat = _SEAT.get(result)
    if seat is not None:
        return agent_error_sentence(kind, f"{names[seat]} (player {seat + 1})", moves)
    if result == "OTHER_ERROR":
        return OUR_SIDE_MATCH
    return ""


def match_detail(
    result: str, message: str, viewer: Any, owners: tuple[int, int], names: tuple[str, str] | None = None
) -> str | None:
    """The referee's text about a match's error, made readable (paths scrubbed, players named), if
    ``viewer`` may read it; ``None`` otherwise (and when there is nothing to read)."""
    if not message:
        return None
    seat = _SEAT.get(result)
    if seat is None:  # our side, or no error at all: our own messages are for staff
        allowed = bool(getattr(viewer, "is_staff", False) and viewer.is_authenticated)
        return explain_error(message, names) if allowed else None
    if not can_see_private(viewer, owners[seat]):
        return None
    if not can_see_private(viewer, owners[1 - seat]):
        message = message.split(DETAIL_SEPARATOR, 1)[0]
    return explain_error(message, names)


def duel_sentence(result: str, message: str) -> str:
    """The public sentence for a duel-level error (a duel that could not be played); ``""`` if none."""
    return OUR_SIDE_DUEL if (message or result == "ERROR") else ""


def duel_detail(message: str, viewer: Any) -> str | None:
    """A duel-level error is ours (the sandbox, the referee): staff only."""
    if not message or not (getattr(viewer, "is_authenticated", False) and viewer.is_staff):
        return None
    return scrub_paths(message)


def play_sentence(result: str, kind: str, agent: str, moves: int, message: str) -> str:
    """The public sentence for how a live game ended without a decided board (``""`` otherwise)."""
    if result == "AGENT_ERROR":
        return agent_error_sentence(kind, agent, moves)
    if result == "ABANDONED" and kind == "ENDED":  # core.actions.play.ENDED_BY_PLAYER
        return "The player ended the game and the agent stopped."
    if result == "ABANDONED":
        return "Nobody moved in time: the game was closed and the agent stopped."
    if result == "FAILED":
        return "The game could not go on because of an error on our side."
    return ""


def play_detail(result: str, message: str, viewer: Any, agent_owner_id: int) -> str | None:
    """The worker's text about a live game's end: the agent's error (with its stderr) for the agent's
    owner and staff; our own failures for staff."""
    if not message:
        return None
    if result == "AGENT_ERROR":
        return scrub_paths(message) if can_see_private(viewer, agent_owner_id) else None
    if getattr(viewer, "is_authenticated", False) and viewer.is_staff:
        return scrub_paths(message)
    return None
