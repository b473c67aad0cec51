"""Database helpers for long-running workers."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)
T = TypeVar("T")


def retry_on_db_error(fn: Callable[[], T], *, attempts: int | None = None, first_delay: float = 0.5) -> T:
    """Call ``fn`` (one atomic, idempotent action); on a lost or refused connection, reconnect and retry.

    Used to store a result that took minutes to compute: a database blip must not throw it away. The
    delay doubles up to 10 s. The last error is re-raised after ``attempts`` (``DB_SAVE_RETRIES``).
    """
    attempts = attempts or settings.DB_SAVE_RETRIES
    delay = first_delay
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except (OperationalError, InterfaceError) as exc:
            if attempt == attempts:
                raise
            log.warning(
                "database error (attempt %d/%d), retrying in %.1fs: %s", attempt, attempts, delay, exc
            )
            connection.close()  # drop the broken connection; the next query opens a fresh one
            time.sleep(delay)
            delay = min(delay * 2, 10.0)
    raise AssertionError("unreachable")
