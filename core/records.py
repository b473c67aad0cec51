"""Game records for training: every stored match as JSON Lines, one line per step. Read-only.

A line is one move::

    {"match_id": 7, "duel_id": 3, "step": 0, "player": "PLAYER_1", "seat": 0,
     "state": {...state before the action...}, "observation": [[0, 0, ...], ...], "action_mask": [1, 1, ...],
     "action": 3, "reward": 0.0, "done": false,
     "result": "PLAYER_1_WIN", "environment": "connect-four", "played_at": "2026-11-22T04:00:00+00:00"}

- ``observation`` is exactly what the seat's agent received for this move (``game.observation(state,
  seat)``, as the referee sends it: in games with private information it hides what that seat could not
  see); ``action_mask`` has ``num_actions`` entries, 1 for each action the referee offered as legal.
  ``state`` is the full state, for analysis (finished matches only: their hidden cards are shown by the
  replays too).

- ``seat`` 0 moves first; ``player`` is who sat there (a match's ``first_player`` is in seat 0).
- ``reward`` is 0 until the match's last step; on the last step it is the final reward of the player who
  moved, and the line also carries ``rewards`` (``{"PLAYER_1": r, "PLAYER_2": r}``) and ``final_state``
  (the state after the last action). Rewards follow the match result: +1 win, -1 loss, 0 draw; a
  player's error (``PLAYER_x_ERROR``) counts as that player's loss, an infrastructure error
  (``OTHER_ERROR``) as 0 for both. A match that ended before its first move has no line.
- ``played_at`` is the duel's finish time; only FINISHED duels are exported.
- ``min_rating`` compares each player's **conservative skill (mu - 3 sigma) recorded right after that
  duel was rated** (``RatingHistory``), not the current rating. Duels without a rating entry (unrated
  challenges, duels not rated yet) are left out when ``min_rating`` is given.
- Visibility: staff see everything; anyone else sees a match only when both revisions that played are
  public or their own. Private agents' games never leak.

Matches are read in keyset batches by id (``id > last``), each through ``iterator(chunk_size=...)``,
so memory stays bounded by one batch whatever the export's size. ``environments`` is imported here
(lazily) for each game's first state and seat to move, which the stored replays do not repeat.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from django.db.models import Exists, F, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from core.match_moves import unpack_actions
from core.match_states import recorded
from core.models import Duel, Environment, Match, RatingHistory, User

PLAYERS = ("PLAYER_1", "PLAYER_2")
BATCH_SIZE = 200
_FIELDS = (
    "id",
    "duel_id",
    "result",
    "first_player",
    "states",
    "packed_moves",
    "duel__finished_at",
)
_FINAL_REWARDS: dict[str, tuple[float, float]] = {
    Match.Result.PLAYER_1_WIN: (1.0, -1.0),
    Match.Result.PLAYER_2_WIN: (-1.0, 1.0),
    Match.Result.PLAYER_1_ERROR: (-1.0, 1.0),
    Match.Result.PLAYER_2_ERROR: (1.0, -1.0),
}


@dataclass(frozen=True)
class RecordFilter:
    """Which matches to export: finished in [since, until), both players at least ``min_rating``, with
    ids after ``after_id``; at most ``limit`` matches (``None``: all)."""

    since: datetime | None = None
    until: datetime | None = None
    min_rating: float | None = None
    after_id: int = 0
    limit: int | None = None


def parse_when(value: str | None, *, end: bool = False) -> datetime | None:
    """An ISO date or date-time from a query string (``None`` for empty). A bare date means its start,
    or with ``end`` the start of the next day (so ``until=2026-11-22`` includes that whole day).
    Naive values are in the site's time zone. Raises ``ValueError`` with a readable message."""
    if not value:
        return None
    parsed = parse_datetime(value)
    if parsed is None:
        day = parse_date(value)
        if day is None:
            raise ValueError(f"{value!r} is not an ISO date (2026-11-22) or date-time (2026-11-22T10:00Z)")
        parsed = datetime.combine(day + timedelta(days=1 if end else 0), time.min)
    if timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed)
    return parsed


def visible_matches(environment: Environment, viewer: User | None) -> QuerySet[Match]:
    """Matches of ``environment``'s finished duels that ``viewer`` may export (``None``: anonymous)."""
    qs = Match.objects.filter(duel__environment=environment, duel__state=Duel.State.FINISHED)
    if viewer is not None and viewer.is_staff:
        return qs
    side_1 = Q(duel__revision_1__is_public=True)
    side_2 = Q(duel__revision_2__is_public=True)
    if viewer is not None and viewer.is_authenticated:
        side_1 |= Q(duel__revision_1__competitor__owner=viewer)
        side_2 |= Q(duel__revision_2__competitor__owner=viewer)
    return qs.filter(side_1).filter(side_2)


def _rated_at_least(revision_field: str, min_rating: float) -> Exists:
    history = RatingHistory.objects.annotate(conservative=F("mu") - 3 * F("sigma")).filter(
        duel_id=OuterRef("duel_id"),
        rating__competitor_id=OuterRef(f"duel__{revision_field}__competitor_id"),
        conservative__gte=min_rating,
    )
    return Exists(history)


def filtered_matches(environment: Environment, viewer: User | None, flt: RecordFilter) -> QuerySet[Match]:
    """``visible_matches`` narrowed by ``flt`` (date range, minimum rating, cursor), ordered by id."""
    qs = visible_matches(environment, viewer)
    if flt.since is not None:
        qs = qs.filter(duel__finished_at__gte=flt.since)
    if flt.until is not None:
        qs = qs.filter(duel__finished_at__lt=flt.until)
    if flt.min_rating is not None:
        qs = qs.filter(_rated_at_least("revision_1", flt.min_rating)).filter(
            _rated_at_least("revision_2", flt.min_rating)
        )
    if flt.after_id:
        qs = qs.filter(pk__gt=flt.after_id)
    return qs.order_by("pk")


def page_end(environment: Environment, viewer: User | None, flt: RecordFilter) -> tuple[int | None, bool]:
    """For a limited page: the id of its last match (``None`` if empty) and whether more may follow.
    Reads ids only (at most ``limit + 1``)."""
    if flt.limit is None:
        return None, False
    ids = list(filtered_matches(environment, viewer, flt).values_list("pk", flat=True)[: flt.limit + 1])
    more = len(ids) > flt.limit
    ids = ids[: flt.limit]
    return (ids[-1] if ids else None), more


def match_lines(row: dict[str, Any], slug: str, game: Any) -> Iterator[dict[str, Any]]:
    """The step records of one match row (``_FIELDS`` values), first move first."""
    actions: list[int] = unpack_actions(row["packed_moves"])
    if not actions:
        return
    states: list[dict[str, Any]] = recorded(game, row["states"] or [], actions)  # stored compact
    first = 0 if row["first_player"] == "PLAYER_1" else 1
    seat_player = (PLAYERS[first], PLAYERS[1 - first])
    finals = _FINAL_REWARDS.get(row["result"], (0.0, 0.0))
    played_at = row["duel__finished_at"].isoformat() if row["duel__finished_at"] else None
    # The referee stores the state after each action; older rows also start with the initial state.
    offset = 1 if len(states) == len(actions) + 1 else 0
    state = states[0] if offset else game.initial_state()
    last = len(actions) - 1
    for step, action in enumerate(actions):
        seat = game.to_move(state)
        player = seat_player[seat]
        legal = game.legal_actions(state)
        mask = [0] * game.num_actions
        for legal_action in legal:
            mask[legal_action] = 1
        line: dict[str, Any] = {
            "match_id": row["id"],
            "duel_id": row["duel_id"],
            "step": step,
            "player": player,
            "seat": seat,
            "state": state,
            "observation": game.observation(state, seat).tolist(),
            "action_mask": mask,
            "action": action,
            "reward": 0.0,
            "done": step == last,
            "result": row["result"],
            "environment": slug,
            "played_at": played_at,
        }
        after = states[step + offset] if step + offset < len(states) else game.apply(state, action)
        if step == last:
            rewards = {"PLAYER_1": finals[0], "PLAYER_2": finals[1]}
            line["reward"] = rewards[player]
            line["rewards"] = rewards
            line["final_state"] = after
        yield line
        state = after


def iter_record_batches(
    environment: Environment,
    viewer: User | None,
    flt: RecordFilter,
    *,
    last_id: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> Iterator[list[dict[str, Any]]]:
    """The step records (dicts) of the matches ``flt`` selects, up to match ``last_id`` when given, one list
    per keyset batch of ``batch_size`` matches; never holds more than one batch."""
    from environments import get_game

    game = get_game(environment.slug)
    base = filtered_matches(environment, viewer, RecordFilter(flt.since, flt.until, flt.min_rating))
    if last_id is not None:
        base = base.filter(pk__lte=last_id)
    cursor = flt.after_id or 0
    remaining = flt.limit
    while remaining is None or remaining > 0:
        size = batch_size if remaining is None else min(batch_size, remaining)
        rows = base.filter(pk__gt=cursor).values(*_FIELDS)[:size].iterator(chunk_size=size)
        seen = 0
        batch: list[dict[str, Any]] = []
        for row in rows:
            seen += 1
            cursor = row["id"]
            batch.extend(match_lines(row, environment.slug, game))
        if batch:
            yield batch
        if remaining is not None:
            remaining -= seen
        if seen < size:
            return


def iter_records(
    environment: Environment,
    viewer: User | None,
    flt: RecordFilter,
    *,
    last_id: int | None = None,
    batch_size: int = BATCH_SIZE,
) -> Iterator[bytes]:
    """JSON Lines (``bytes``, newline-terminated) of ``iter_record_batches``, one chunk per batch."""
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
    for batch in iter_record_batches(environment, viewer, flt, last_id=last_id, batch_size=batch_size):
        yield "".join(dumps(line) + "\n" for line in batch).encode()
