"""The queue as the database sees it: counts of queued and running jobs and the oldest wait."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from autoscaler.policy import QueueSnapshot


def snapshot_from_counts(
    queued: int,
    running: int,
    oldest_enqueued_at: datetime | None,
    now: datetime,
    busy_claimers: Iterable[str] = (),
) -> QueueSnapshot:
    """Build a ``QueueSnapshot`` from plain counts (what ``read_queue_snapshot`` reads, or a test's table)."""
    if queued < 0 or running < 0:
        raise ValueError(f"counts cannot be negative (queued={queued}, running={running})")
    wait = max(0.0, (now - oldest_enqueued_at).total_seconds()) if oldest_enqueued_at and queued else None
    return QueueSnapshot(
        queued=queued, running=running, oldest_wait_s=wait, busy_claimers=frozenset(busy_claimers)
    )


def read_queue_snapshot() -> QueueSnapshot:
    """Read builds, smoke tests and duels from the database (Django must be set up).

    RUNNING counts only live leases: a job whose lease expired belongs to nobody and the reaper re-queues it.
    """
    from django.db.models import Min
    from django.utils import timezone

    from core.models import Build, Duel, SmokeTest

    now = timezone.now()
    queued = running = 0
    oldest: datetime | None = None
    claimers: set[str] = set()
    for model in (Build, SmokeTest, Duel):
        waiting = model.objects.filter(state="QUEUED")
        queued += waiting.count()
        first = waiting.aggregate(t=Min("enqueued_at"))["t"]
        if first is not None and (oldest is None or first < oldest):
            oldest = first
        live = model.objects.filter(state="RUNNING", lease_expires_at__gte=now)
        running += live.count()
        claimers.update(w for w in live.values_list("worker", flat=True) if w)
    return snapshot_from_counts(queued, running, oldest, now, claimers)
