"""Sending task hints to Celery, only once the transaction that made the work visible has committed.

Tasks are sent by NAME, so ``core`` never imports the packages that implement them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

log = logging.getLogger(__name__)


def send_task(task: Any, *args: Any, countdown: float | None = None) -> None:
    """Send ``task`` (a task object or its registered name) now, to run after ``countdown`` seconds if
    given. Broker errors are logged, not raised: the row stays QUEUED and the reaper re-sends the hint."""
    from core.celery import app

    name = task if isinstance(task, str) else task.name
    try:
        app.send_task(name, args=list(args), countdown=countdown if countdown and countdown > 0 else None)
    except Exception:  # the broker is down: the database still holds the work, the reaper recovers it
        log.exception("could not send task %s%r; the reaper will re-send it", name, args)


def resend_after_database_error(task_name: str, args: Any, exc: BaseException) -> bool:
    """A task whose database was unreachable (``exc`` a lost or refused connection) keeps its hint: the
    same message is sent again, to run ``max(2 x WORKER_HEALTH_INTERVAL_SECONDS, REAPER_INTERVAL_SECONDS)``
    later (the broker is not the database: it usually still answers). A periodic task (beat's schedule)
    is not re-sent, beat sends the next round; either way the log says so. Returns whether it re-sent.
    Called for every failed task (``core.celery``)."""
    from django.conf import settings
    from django.db import InterfaceError, OperationalError

    from core.celery import app

    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    periodic = {entry["task"] for entry in (app.conf.beat_schedule or {}).values()}
    if task_name in periodic:
        log.warning(
            "%s skipped: the database is unreachable (%s); its next periodic round retries", task_name, reason
        )
        return False
    delay = max(2 * settings.WORKER_HEALTH_INTERVAL_SECONDS, settings.REAPER_INTERVAL_SECONDS)
    log.warning(
        "%s%r: the database is unreachable (%s); the hint is sent again in %.0f s",
        task_name,
        tuple(args),
        reason,
        delay,
    )
    send_task(task_name, *args, countdown=delay)
    return True


def enqueue_on_commit(task: Any, *args: Any, countdown: float | None = None) -> None:
    """Send ``task(*args)`` after the current transaction commits (immediately outside one), to run after
    ``countdown`` seconds if given."""
    transaction.on_commit(lambda: send_task(task, *args, countdown=countdown))


def rating_pending_key(environment_id: int) -> str:
    """The shared-cache key marking "results of this environment wait for a rating round" (the protocol
    of ``tournament_manager.rating_runs``)."""
    return f"tournament_manager:rating-run:{environment_id}:pending"


def trigger_rating_on_commit(environment_id: int) -> None:
    """After commit, ask for a rating round of ``environment_id`` (``RATING_TASK_NAME``), once per pending
    batch: with a shared cache (Redis) the trigger is sent only by the result that sets the pending mark;
    the run in progress, or the trigger already on its way, rates the others. A lost trigger is re-sent by
    the reaper for duels left unrated."""
    from django.conf import settings

    task = settings.RATING_TASK_NAME
    if not task:
        return

    def send() -> None:
        from django.core.cache import cache

        shared = "redis" in settings.CACHES["default"]["BACKEND"].lower()
        try:
            if shared and not cache.add(rating_pending_key(environment_id), 1, timeout=30):
                return
        except Exception:  # the cache is down: send anyway, a duplicate trigger is harmless
            log.warning("cannot mark environment %s pending; sending its rating trigger", environment_id)
        send_task(task, environment_id)

    transaction.on_commit(send)


def broker_queue_size(queue: str | None = None) -> int | None:
    """Messages waiting in the broker queue (``None`` if the broker cannot be asked)."""
    from django.conf import settings

    from core.celery import app

    name = queue or settings.CELERY_TASK_DEFAULT_QUEUE
    try:
        with app.connection_for_read() as conn:
            conn.ensure_connection(max_retries=1)
            # Not passive: Redis reports an empty queue as missing. Same flags as Celery's own declaration.
            declared = conn.default_channel.queue_declare(queue=name, durable=True, auto_delete=False)
            return int(declared.message_count)
    except Exception as exc:  # a missing queue or an unreachable broker: unknown
        log.info("cannot measure broker queue %s: %s", name, exc)
        return None
