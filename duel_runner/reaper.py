"""The reaper: the database, not the broker, decides what work still has to be done."""

from __future__ import annotations

import logging
from typing import Any

from core.actions import (
    begin_reaper_round,
    requeue_expired_leases,
    resend_stale_hints,
    retry_failed_jobs,
)
from core.actions.play import abandon_stale_play_sessions, requeue_orphaned_play_sessions
from core.rating_outbox import resend_rating_triggers

log = logging.getLogger(__name__)


def reap() -> dict[str, Any]:
    """One round, all from the database (database time): re-queue jobs whose worker stopped sending
    heartbeats (unless the previous round is long past: workers cut off with us get one lease to come
    back first), hand orphaned live games to another worker, re-send lost hints and lost rating triggers,
    retry jobs that failed for infrastructure faults, close games nobody plays any more. Orphan agent
    containers are each Docker worker's own (``duel_runner.containers``): a wedged container never holds
    up a round."""
    leases_due = begin_reaper_round()
    expired = requeue_expired_leases() if leases_due else {}
    games = requeue_orphaned_play_sessions() if leases_due else 0
    return {
        "expired": expired,
        "orphaned_play_sessions": games,
        "resent": resend_stale_hints(),
        "rating_triggers": resend_rating_triggers(),
        "retried": retry_failed_jobs(),
        "stale_play_sessions": abandon_stale_play_sessions(),
    }
