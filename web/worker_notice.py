"""Tell people when no worker is there: an upload then waits, and the site says so instead of a silent
"waiting for a builder". The answer is ``ops.readiness.check_workers``' (a healthy worker reported within
the last 30 s or three health intervals), cached for ``NOTICE_CACHE_S`` so a page pays at most one small
query every few seconds; the people see a plain sentence, never a worker's name or problem."""

from __future__ import annotations

from django.core.cache import cache

from ops.readiness import check_workers

NOTICE_CACHE_S = 10
_KEY = "web:no-worker-notice"
NOTICE = (
    "No worker has been seen for a while, so builds, smoke tests and duels are waiting: what you upload is "
    "stored and built as soon as a worker is back. The operators are alerted."
)


def no_worker_notice() -> str | None:
    """``NOTICE`` when no healthy worker reported recently, else ``None``."""
    missing = cache.get(_KEY)
    if missing is None:
        missing = check_workers() is not None
        cache.set(_KEY, missing, NOTICE_CACHE_S)
    return NOTICE if missing else None
