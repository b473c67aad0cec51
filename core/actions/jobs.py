"""Claiming, lease extension and release of leased jobs (builds, smoke tests, duels).

A claim is one conditional UPDATE: it succeeds for exactly one caller when the row is QUEUED, or RUNNING
with an expired lease. ``attempts`` counts claims; together with ``worker`` it identifies one claim, so a
worker that lost its lease can no longer extend it.
"""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime, timedelta
from typing import TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.models.jobs import LeasedJob
from core.queue import enqueue_on_commit

J = TypeVar("J", bound=LeasedJob)

QUEUED = "QUEUED"
RUNNING = "RUNNING"
FAILED = "FAILED"


def worker_name() -> str:
    """``host:pid:thread`` of the caller, stored on the rows it claims."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 100000}"


def _lease_end(now: datetime, lease_s: float | None) -> datetime:
    return now + timedelta(seconds=lease_s if lease_s is not None else settings.LEASE_SECONDS)


def claim_job(
    model: type[J], job_id: int, worker: str | None = None, lease_s: float | None = None
) -> J | None:
    """Atomically move job ``job_id`` to RUNNING for ``worker``; ``None`` if someone else has it, it is
    finished, or it used up ``MAX_ATTEMPTS``."""
    now = timezone.now()
    with transaction.atomic():
        claimed = (
            model.objects.filter(pk=job_id, attempts__lt=settings.MAX_ATTEMPTS)
            .filter(Q(state=QUEUED) | Q(state=RUNNING, lease_expires_at__lt=now))
            .update(
                state=RUNNING,
                worker=worker or worker_name(),
                attempts=F("attempts") + 1,
                lease_expires_at=_lease_end(now, lease_s),
                started_at=now,
            )
        )
        if claimed != 1:
            return None
        return model.objects.get(pk=job_id)


def extend_lease(
    model: type[LeasedJob], job_id: int, worker: str, attempt: int, lease_s: float | None = None
) -> bool:
    """Push the lease of the caller's claim forward; ``False`` if the claim is no longer the caller's."""
    now = timezone.now()
    updated = model.objects.filter(pk=job_id, state=RUNNING, worker=worker, attempts=attempt).update(
        lease_expires_at=_lease_end(now, lease_s)
    )
    return updated == 1


def release_locked_job(job: LeasedJob, reason: str, *, retry: bool, now: datetime | None = None) -> bool:
    """For a row locked by the caller's transaction: re-queue it (``True``) if ``retry`` and attempts
    remain, else mark it FAILED (``False``). ``reason`` is appended to ``failure_reason``."""
    now = now or timezone.now()
    note = f"[{now:%Y-%m-%d %H:%M:%S}Z attempt {job.attempts}] {reason}".strip()
    job.failure_reason = f"{job.failure_reason}\n{note}".strip()[-20_000:]
    job.worker = ""
    job.lease_expires_at = None
    if retry and job.attempts < settings.MAX_ATTEMPTS:
        job.state = QUEUED
        job.enqueued_at = now
        job.save(update_fields=["state", "worker", "lease_expires_at", "failure_reason", "enqueued_at"])
        enqueue_on_commit(job.task_name, job.pk)
        return True
    job.state = FAILED
    job.finished_at = now
    job.save(update_fields=["state", "worker", "lease_expires_at", "failure_reason", "finished_at"])
    return False


def lease_is_expired(job: LeasedJob, before: datetime) -> bool:
    """Whether ``job`` is RUNNING with a lease that ended before ``before``."""
    return job.state == RUNNING and job.lease_expires_at is not None and job.lease_expires_at < before
