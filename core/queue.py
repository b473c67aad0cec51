"""Sending task hints to Celery, only once the transaction that made the work visible has committed.

Tasks are sent by NAME, so ``core`` never imports the packages that implement them.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from core.celery import app

log = logging.getLogger(__name__)


def send_task(task: Any, *args: Any, countdown: float | None = None) -> None:
    """Send ``task`` (a task object or its registered name) now, to run after ``countdown`` seconds if
    given. Broker errors are logged, not raised: the row stays QUEUED and the reaper re-sends the hint."""
    name = task if isinstance(task, str) else task.name
    try:
        app.send_task(name, args=list(args), countdown=countdown if countdown and countdown > 0 else None)
    except Exception:  # the broker is down: the database still holds the work, the reaper recovers it
        log.exception("could not send task %s%r; the reaper will re-send it", name, args)


def enqueue_on_commit(task: Any, *args: Any, countdown: float | None = None) -> None:
    """Send ``task(*args)`` after the current transaction commits (immediately outside one), to run after
    ``countdown`` seconds if given."""
    transaction.on_commit(lambda: send_task(task, *args, countdown=countdown))


def broker_queue_size(queue: str | None = None) -> int | None:
    """Messages waiting in the broker queue (``None`` if the broker cannot be asked)."""
    from django.conf import settings

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
