"""The lifecycle every leased job shares: claim, heartbeat, release, outcome lock, automatic retry.

One implementation for builds, smoke tests, duels and live games (``core.models.jobs.FencedWork``):

- **Claim**: one conditional UPDATE moves a QUEUED job (or a RUNNING one whose lease expired) to the
  running state and bumps ``generation``. Exactly one caller wins; its :class:`Claim` carries that
  generation, the *fencing token* every later write must present.
- **Fencing**: heartbeats, outcomes, re-queues and failures are conditional on the claim's generation
  (:func:`lock_claimed`), so a worker that lost its job to another claim can never write to it again.
- **Database time**: lease ends, heartbeats and backoff compare with the database's ``Now()``, never a
  process clock: a worker or reaper whose clock is wrong cannot take a live job away.
- **Release**: an infrastructure failure re-queues the job with exponential backoff and jitter
  (``not_before``); it counts against the job's ``MAX_ATTEMPTS`` only when the worker that saw it was
  healthy, so a broken worker cannot burn the attempts of the jobs it touches.
"""

from __future__ import annotations

import os
import random
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import DurationField, ExpressionWrapper, F, Q
from django.db.models.functions import Now
from django.utils import timezone

from core.models.jobs import FencedWork, JobState, LeasedJob
from core.queue import enqueue_on_commit

J = TypeVar("J", bound=FencedWork)
L = TypeVar("L", bound=LeasedJob)

QUEUED = JobState.QUEUED
RUNNING = JobState.RUNNING
FAILED = JobState.FAILED


@dataclass(frozen=True)
class Claim:
    """One worker's claim on one job: what it must present with every write."""

    job_id: int
    generation: int
    attempt: int
    worker: str

    @classmethod
    def of(cls, job: FencedWork) -> Claim:
        return cls(job.pk, job.generation, getattr(job, "attempts", 0), job.worker)


def worker_name() -> str:
    """``host:pid:thread`` of the caller, stored on the rows it claims."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident() % 100000}"


def db_now() -> Any:
    """The database's clock, as an expression: the only "now" that leases, heartbeats and backoff use."""
    return Now()


def database_time() -> datetime:
    """The database's current time as a value, for timestamps stored in rows that database-time
    comparisons read later (``finished_at``); the comparisons themselves use :func:`db_now`."""
    if connection.vendor != "postgresql":  # SQLite has no clock of its own: it is this process's
        return timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT CURRENT_TIMESTAMP")
        return cursor.fetchone()[0]


def db_in(seconds: float) -> Any:
    """The database's ``now() + seconds`` as an expression (never a process clock)."""
    return ExpressionWrapper(db_now() + timedelta(seconds=seconds), output_field=models.DateTimeField())


def _state_q(model: type[FencedWork], *states: str) -> Q:
    return Q(**{f"{model.state_field}__in": list(states)})


def claim_job(
    model: type[J],
    job_id: int,
    worker: str | None = None,
    lease_s: float | None = None,
    *,
    related: tuple[str, ...] = (),
) -> J | None:
    """Atomically give job ``job_id`` to ``worker``; ``None`` if someone else holds it, it is over, it
    used up ``MAX_ATTEMPTS`` or it is backing off (see :func:`seconds_until_claimable`). The claimed row
    is returned with ``related`` rows loaded, so the work needs no query before its outcome."""
    lease = lease_s if lease_s is not None else settings.LEASE_SECONDS
    queued, running = model.queued_state, model.running_state
    jobs = model.objects.filter(pk=job_id).filter(
        _state_q(model, queued) | (_state_q(model, running) & Q(lease_expires_at__lt=db_now()))
    )
    changes: dict[str, Any] = {
        model.state_field: running,
        "worker": worker or worker_name(),
        "generation": F("generation") + 1,
        "lease_expires_at": db_in(lease),
        "heartbeat_at": db_now(),
    }
    if issubclass(model, LeasedJob):
        jobs = jobs.filter(attempts__lt=settings.MAX_ATTEMPTS).filter(
            Q(not_before__isnull=True) | Q(not_before__lte=db_now())
        )
        changes.update(attempts=F("attempts") + 1, started_at=db_now(), not_before=None)
    with transaction.atomic():
        if jobs.update(**changes) != 1:
            return None
        return model.objects.select_related(*related).get(pk=job_id)


def seconds_until_claimable(model: type[FencedWork], job_id: int) -> float | None:
    """Why a claim failed, in seconds: how long until the job's backoff or its holder's lease ends
    (database time), ``0`` if it is claimable now, ``None`` if it never will be (over, or no such job)."""
    delay = ExpressionWrapper(F("not_before") - db_now(), output_field=DurationField())
    left = ExpressionWrapper(F("lease_expires_at") - db_now(), output_field=DurationField())
    fields = [model.state_field, "lease_left"]
    qs = model.objects.filter(pk=job_id).annotate(lease_left=left)
    if issubclass(model, LeasedJob):
        qs = qs.annotate(backoff_left=delay)
        fields += ["backoff_left", "attempts"]
    row = qs.values(*fields).first()
    if row is None:
        return None
    state = row[model.state_field]
    if state == model.queued_state:
        if row.get("attempts", 0) >= settings.MAX_ATTEMPTS:
            return None
        backoff = row.get("backoff_left")
        return max(0.0, backoff.total_seconds()) if backoff is not None else 0.0
    if state == model.running_state and row["lease_left"] is not None:
        return max(0.0, row["lease_left"].total_seconds())
    return None


def extend_lease(model: type[FencedWork], claim: Claim, lease_s: float | None = None) -> bool:
    """Heartbeat: push the lease of ``claim`` forward (database time). ``False`` once another claim took
    the job or it is over. A job the reaper re-queued while its worker was cut off from the database is
    taken back, as long as nobody claimed it since (the generation is unchanged)."""
    lease = lease_s if lease_s is not None else settings.LEASE_SECONDS
    changes: dict[str, Any] = {
        model.state_field: model.running_state,
        "worker": claim.worker,
        "lease_expires_at": db_in(lease),
        "heartbeat_at": db_now(),
    }
    if issubclass(model, LeasedJob):
        changes["not_before"] = None
    updated = (
        model.objects.filter(pk=claim.job_id, generation=claim.generation)
        .filter(_state_q(model, model.queued_state, model.running_state))
        .update(**changes)
    )
    return updated == 1


#: The attribute :func:`lock_claimed` sets with ``with_time``: the database's time when the row was locked.
LOCKED_AT = "locked_at"


def lock_claimed(
    model: type[J], claim: Claim, *, states: tuple[str, ...] | None = None, with_time: bool = False
) -> J | None:
    """Lock job ``claim.job_id`` (inside the caller's transaction) if ``claim`` still holds it: same
    generation, and in one of ``states`` (default: waiting or running). ``None`` means the write is
    refused: the job is over, or another worker claimed it since.

    ``with_time``: the row comes with ``locked_at`` (:data:`LOCKED_AT`), the database's time read by the
    same statement (PostgreSQL: the locking statement's start, ``Now()``; SQLite: :func:`database_time`),
    for the timestamps an outcome stores without a round trip of its own."""
    states = states or (model.queued_state, model.running_state)
    rows = (
        model.objects.select_for_update()
        .filter(pk=claim.job_id, generation=claim.generation)
        .filter(_state_q(model, *states))
    )
    postgres = connection.vendor == "postgresql"
    if with_time and postgres:
        rows = rows.annotate(**{LOCKED_AT: Now()})
    job = rows.first()
    if job is not None and with_time and not postgres:
        setattr(job, LOCKED_AT, database_time())  # SQLite: this process's clock, as database_time says
    return job


def lock_expired(model: type[J], job_id: int) -> J | None:
    """Lock job ``job_id`` if it is running with a lease that ended (database time); for the reaper.

    A row another transaction holds is skipped (``None``), never waited for: the reaper must not queue
    behind one worker's open transaction (a worker frozen inside one holds its lock until PostgreSQL ends
    its session, ``WORKER_DB_IDLE_TRANSACTION_TIMEOUT_S``); the next round takes the row."""
    return (
        model.objects.select_for_update(skip_locked=True)
        .filter(pk=job_id, lease_expires_at__lt=db_now())
        .filter(_state_q(model, model.running_state))
        .first()
    )


def backoff_seconds(failures: int) -> float:
    """Exponential backoff with full jitter between half and all of ``RETRY_BACKOFF_SECONDS x
    2^(failures-1)``, capped at ``RETRY_BACKOFF_MAX_SECONDS``."""
    base = settings.RETRY_BACKOFF_SECONDS * (2 ** max(0, failures - 1))
    capped = min(base, settings.RETRY_BACKOFF_MAX_SECONDS)
    return capped * random.uniform(0.5, 1.0)


def release_locked_job(
    job: LeasedJob, reason: str, *, retry: bool, counted: bool = True, delay_s: float | None = None
) -> bool:
    """For a job locked by the caller's transaction: re-queue it (``True``) if ``retry`` and attempts
    remain, else mark it FAILED (``False``). ``counted=False`` (the worker itself was unhealthy) gives the
    attempt back. The re-queued job waits ``delay_s`` (default: :func:`backoff_seconds`) before it can be
    claimed; its hint is sent with that countdown. ``reason`` is appended to ``failure_reason``."""
    now = timezone.now()  # only for the human-readable note
    if not counted:
        job.attempts = max(0, job.attempts - 1)
    tag = "" if counted else ", not counted: the worker was unhealthy"
    note = f"[{now:%Y-%m-%d %H:%M:%S}Z attempt {job.attempts}{tag}] {reason}".strip()
    job.failure_reason = f"{job.failure_reason}\n{note}".strip()[-20_000:]
    job.worker = ""
    job.lease_expires_at = None
    fields = ["state", "attempts", "worker", "lease_expires_at", "failure_reason"]
    if retry and (not counted or job.attempts < settings.MAX_ATTEMPTS):
        delay = backoff_seconds(max(1, job.attempts)) if delay_s is None else max(0.0, delay_s)
        job.state = QUEUED
        job.enqueued_at = db_now()
        job.not_before = db_in(delay) if delay > 0 else None
        job.save(update_fields=[*fields, "enqueued_at", "not_before"])
        enqueue_on_commit(job.task_name, job.pk, countdown=delay)
        return True
    job.state = FAILED
    job.finished_at = db_now()
    job.save(update_fields=[*fields, "finished_at"])
    return False


def fail_job(
    model: type[L],
    job_id: int,
    reason: str,
    *,
    claim: Claim | None,
    retry: bool,
    counted: bool = True,
    delay_s: float | None = None,
    on_released: Callable[[L], None] | None = None,
    on_failed: Callable[[L], None] | None = None,
) -> bool:
    """An infrastructure failure seen by the worker holding ``claim`` (never charged to a player), or,
    with ``claim=None``, by the reaper for a lease that expired (database time): re-queue with backoff
    while attempts remain, else FAILED and ``on_failed(job)``; ``on_released(job)`` either way (the kind's
    consequences, in the same transaction). Returns whether anything changed: a stale claim, or a lease
    renewed meanwhile, changes nothing."""
    with transaction.atomic():
        job = lock_claimed(model, claim) if claim is not None else lock_expired(model, job_id)
        if job is None:
            return False
        if claim is None:  # the reaper: leave a worker that was only cut off two heartbeats to take it back
            floor = 2 * settings.HEARTBEAT_SECONDS
            delay_s = max(floor, backoff_seconds(max(1, job.attempts)) if delay_s is None else delay_s)
        requeued = release_locked_job(job, reason, retry=retry, counted=counted, delay_s=delay_s)
        if on_released is not None:
            on_released(job)
        if not requeued and on_failed is not None:
            on_failed(job)
    return True


def requeue_failed_job(model: type[J], job_id: int, *, automatic: bool) -> J | None:
    """Give a FAILED job fresh attempts and queue it now (inside the caller's transaction); ``automatic``
    (the reaper's retry of an infrastructure failure) counts a retry round. ``None`` if it is not FAILED."""
    changes: dict[str, Any] = {
        "state": QUEUED,
        "attempts": 0,
        "enqueued_at": db_now(),
        "not_before": None,
        "finished_at": None,
    }
    if automatic:
        changes["retry_rounds"] = F("retry_rounds") + 1
    if model.objects.filter(pk=job_id, state=FAILED).update(**changes) != 1:
        return None
    enqueue_on_commit(model.task_name, job_id)
    return model.objects.get(pk=job_id)
