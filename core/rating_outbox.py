"""The rating trigger, in one place: from a stored result to the rating run that takes it.

The outbox is the database: a FINISHED duel with ``rated = False`` (the partial index
``core_duel_to_rate``) waits for its rating, and the rater marks it rated in the transaction that
applies it (``tournament_manager.actions.rate_pending_duels``, under the environment's row lock), so a
duel is rated exactly once whatever the messages do. The messages below only make that fast:

1. **Trigger** (:func:`trigger_on_commit`, called by ``core.actions.record_duel_result``): after commit,
   the task ``RATING_TASK_NAME`` (``tournament_manager.rate_environment``) is sent with the environment's
   id, sent by name. With a shared cache (Redis) it is sent only by the result that sets the
   environment's ``pending`` mark (``cache.add``): the run in progress, or the trigger already on its
   way, takes the others.
2. **Election** (:func:`run`, the task's body): one rating run per environment at a time, rating in
   rounds of ``ROUND_SIZE``. ``running`` elects the runner (``cache.add`` of a fresh token with a TTL,
   ``TTL_S``, renewed by every round; the runner passes its token to the continuation it schedules). A
   trigger that loses the election sets ``pending``, tries the election once more (the runner may have
   left meanwhile) and returns. A round clears ``pending``, then rates (the database decides what is
   pending). If ``pending`` was set again meanwhile, or the round was full, the runner schedules its
   continuation (after ``SETTLE_S``, or at once for a full round) and keeps the election; otherwise it
   releases the election, looks at ``pending`` once more and sends a fresh trigger if a mark arrived in
   between. A busy ladder gets about one round per ``SETTLE_S``, each rating many duels; the first result
   after a quiet spell is rated at once.
3. **Re-send** (:func:`resend_rating_triggers`, each reaper round): a trigger can be lost (a broker
   wiped, a worker killed); every environment with FINISHED duels still unrated two reaper rounds after
   they finished gets its trigger again.

A duel is committed before its trigger is sent, so the mark its trigger leaves is seen by a round that
starts after the commit: no duel waits for a trigger that will never come. The worst a lost message or an
expired key can do is let two runs overlap (they take turns on the lock) or delay a rating until the
election's TTL ends or the reaper's re-send. With a per-process cache (the embedded setup) a trigger
always wins its own election, and a continuation that finds no election held elects itself.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.db import models, transaction
from django.db.models import ExpressionWrapper
from django.db.models.functions import Now

from core.models import Duel
from core.queue import send_task

log = logging.getLogger(__name__)

#: Duels rated per round (one transaction under the environment's lock).
ROUND_SIZE = 1000
#: While results keep arriving, the runner's next round starts this long after the previous one.
SETTLE_S = 0.5
#: Lifetime of the election without a renewal and of a mark (a round ends well within it).
TTL_S = 30

#: ``schedule(token, countdown)``: send the rating task again (``token``: as the runner's continuation).
Schedule = Callable[[str | None, float], None]


def pending_key(environment_id: int) -> str:
    """The shared-cache key marking "results of this environment are waiting for a rating round"."""
    return f"tournament_manager:rating-run:{environment_id}:pending"


def running_key(environment_id: int) -> str:
    """The shared-cache key holding the token of the environment's rating run."""
    return f"tournament_manager:rating-run:{environment_id}:running"


# --- 1. the trigger ----------------------------------------------------------------------------------


def trigger_on_commit(environment_id: int) -> None:
    """After commit, ask for a rating round of ``environment_id``, once per pending batch (see above)."""
    task = settings.RATING_TASK_NAME
    if not task:
        return

    def send() -> None:
        shared = "redis" in str(settings.CACHES["default"]["BACKEND"]).lower()
        try:
            if shared and not cache.add(pending_key(environment_id), 1, timeout=TTL_S):
                return
        except Exception:  # the cache is down: send anyway, a duplicate trigger is harmless
            log.warning("cannot mark environment %s pending; sending its rating trigger", environment_id)
        send_task(task, environment_id)

    transaction.on_commit(send)


# --- 2. the election ---------------------------------------------------------------------------------


def _elect(environment_id: int, token: str | None) -> str | None:
    """The token this task runs under, or None when another run holds the election."""
    running = running_key(environment_id)
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
    running = running_key(environment_id)
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
        cache.touch(running_key(environment_id), TTL_S)
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


# --- 3. the re-send ----------------------------------------------------------------------------------


def resend_rating_triggers(min_age_s: float | None = None) -> int:
    """Re-send the rating task for every environment that has FINISHED duels still unrated
    ``min_age_s`` after they finished (default: two reaper rounds; database time): the trigger sent after
    the result was stored may have been lost. Returns how many environments were triggered."""
    if not settings.RATING_TASK_NAME:
        return 0
    age = min_age_s if min_age_s is not None else 2 * settings.REAPER_INTERVAL_SECONDS
    cutoff = ExpressionWrapper(Now() - timedelta(seconds=age), output_field=models.DateTimeField())
    environments = list(
        Duel.objects.filter(state=Duel.State.FINISHED, rated=False, finished_at__lt=cutoff)
        .values_list("environment_id", flat=True)
        .distinct()
        .order_by()
    )
    for environment_id in environments:
        send_task(settings.RATING_TASK_NAME, environment_id)
    if environments:
        log.warning("re-sent the rating trigger of %d environment(s) with unrated duels", len(environments))
    return len(environments)
