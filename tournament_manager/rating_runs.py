"""One rating run per environment at a time, however many triggers arrive, rating in batches.

``core`` sends ``tournament_manager.rate_environment`` after every stored result. At a hundred results a
second that is a hundred tasks a second, and each used to open a database connection, queue for the
environment's row lock behind the others and then find one or two duels, or nothing, left to rate. Here a
trigger that finds a run in progress only leaves a mark (three cache operations, no database), and a run
that sees marks after its round comes back ``SETTLE_S`` later for everything that arrived meanwhile: a
busy ladder gets about one round per ``SETTLE_S``, each rating many duels, while the first result after a
quiet spell is rated at once.

The protocol, over the shared cache (Redis in production), with two keys per environment:

- ``running`` elects the runner: ``cache.add`` of a fresh token with a TTL (``TTL_S``), renewed by every
  round. The election outlives one task: the runner passes its token to the continuation it schedules.
- ``pending`` (:func:`pending_key`) marks "results are waiting". A trigger that lost the election sets it,
  then tries the election once more (the runner may have left meanwhile) and returns.
- A round clears ``pending``, then rates (the database decides what is pending). If ``pending`` was set
  again meanwhile, or the round was full, the runner schedules its continuation (after ``SETTLE_S``, or at
  once for a full round) and keeps the election; otherwise it releases the election, looks at
  ``pending`` once more and sends a fresh trigger if a mark arrived in between.

A duel is committed before its trigger is sent, so the mark its trigger leaves is seen by a round that
starts after the commit: no duel waits for a trigger that will never come. ``core`` sets the mark itself
(``core.queue.trigger_rating_on_commit``: ``cache.add`` after its commit) and sends the trigger only when
the mark was not set yet: the run in progress, or the trigger already on its way, then takes its duel.

Exactly once does not depend on any of this: rounds run under the environment's row lock and mark their
duels rated in the same transaction (:func:`tournament_manager.actions.rate_pending_duels`). The worst a
lost message or an expired key can do is let two runs overlap (they take turns on the lock) or delay a
rating until the election's TTL ends and a trigger (the next result's, or the one the reaper re-sends for
duels left unrated) starts a new run. With a per-process cache (the embedded setup) a trigger always
wins its own election, and a continuation that finds no election held elects itself: every trigger runs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from django.core.cache import cache

from core.queue import rating_pending_key

#: Duels rated per round (one transaction under the environment's lock).
ROUND_SIZE = 1000
#: While results keep arriving, the runner's next round starts this long after the previous one.
SETTLE_S = 0.5
#: Lifetime of the election without a renewal and of a mark (a round ends well within it).
TTL_S = 30

#: ``schedule(token, countdown)``: send the rating task again (``token``: as the runner's continuation).
Schedule = Callable[[str | None, float], None]


def pending_key(environment_id: int) -> str:
    """The cache key marking "results of this environment are waiting for a rating round" (defined in
    ``core.queue``, whose ``trigger_rating_on_commit`` sets it when a result is stored)."""
    return rating_pending_key(environment_id)


def _running_key(environment_id: int) -> str:
    return f"tournament_manager:rating-run:{environment_id}:running"


def _elect(environment_id: int, token: str | None) -> str | None:
    """The token this task runs under, or None when another run holds the election."""
    running = _running_key(environment_id)
    if token is not None:  # a continuation: still ours, or free again (expired, or a per-process cache)
        holder = cache.get(running)
        if holder == token or (holder is None and cache.add(running, token, timeout=TTL_S)):
            return token
        return None
    token = uuid.uuid4().hex
    if cache.add(running, token, timeout=TTL_S):
        return token
    cache.set(pending_key(environment_id), 1, timeout=TTL_S)
    return token if cache.add(running, token, timeout=TTL_S) else None  # the runner may have just left


def _release(environment_id: int, token: str) -> None:
    running = _running_key(environment_id)
    if cache.get(running) == token:
        cache.delete(running)


def run(
    environment_id: int, rate_round: Callable[[int], int], schedule: Schedule, token: str | None = None
) -> int:
    """One round of the environment's rating run, if this task is (or becomes) the runner: rate with
    ``rate_round(limit)`` (returns how many it rated) and decide what comes next (see the module's
    docstring). ``token`` is given to a continuation. Returns how many duels were rated (0: another run
    takes them)."""
    token = _elect(environment_id, token)
    if token is None:
        return 0
    pending = pending_key(environment_id)
    try:
        cache.delete(pending)
        rated = rate_round(ROUND_SIZE)
        cache.touch(_running_key(environment_id), TTL_S)
    except BaseException:
        _release(environment_id, token)
        raise
    if rated >= ROUND_SIZE:
        schedule(token, 0.0)  # a backlog: the next round at once
    elif cache.get(pending) is not None:
        schedule(token, SETTLE_S)  # results keep coming: rate them together in a moment
    else:
        _release(environment_id, token)
        if cache.get(pending) is not None:  # a mark that arrived while the election was being released
            schedule(None, 0.0)
    return rated
