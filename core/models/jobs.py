"""The shape shared by every leased job (build, smoke test, duel) and by live games.

A job is QUEUED, then claimed by exactly one worker with a conditional UPDATE that moves it to RUNNING,
bumps its ``generation`` (the fencing token of that claim) and sets its lease; the worker's heartbeat
extends the lease while it works. Every later write of that worker (result, re-queue, failure, heartbeat)
is conditional on the generation it claimed, so a worker that lost its job can never write to it again.
Lease times are the database's clock (``Now()``), never a process's. A RUNNING job whose lease expired
belongs to nobody: the reaper re-queues it (or fails it after ``MAX_ATTEMPTS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Self

from django.db import models


class JobState(models.TextChoices):
    """States of a leased job (``Duel`` uses ``FINISHED`` instead of ``SUCCEEDED``)."""

    QUEUED = "QUEUED", "queued"
    RUNNING = "RUNNING", "running"
    SUCCEEDED = "SUCCEEDED", "succeeded"
    FAILED = "FAILED", "failed"


class FencedWork(models.Model):
    """Abstract base: the claim of one worker, fenced by ``generation`` and kept alive by heartbeats."""

    generation = models.PositiveBigIntegerField(
        default=0, help_text="Fencing token: bumped by every claim, never reset; writes must carry it."
    )
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid:thread of the last claimer.")
    lease_expires_at = models.DateTimeField(null=True, blank=True, help_text="Database time.")
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last heartbeat (database time).")

    class Meta:
        abstract = True

    if TYPE_CHECKING:  # every concrete kind has Django's default manager
        objects: ClassVar[models.Manager[Self]]

    #: Celery task name that runs this kind of work (set by subclasses).
    task_name: str = ""
    #: Field holding the state, and its values while waiting and while a worker holds it.
    state_field: str = "state"
    queued_state: str = JobState.QUEUED
    running_state: str = JobState.RUNNING


class LeasedJob(FencedWork):
    """Abstract base of builds, smoke tests and duels: attempts, backoff and retry bookkeeping."""

    attempts = models.PositiveIntegerField(
        default=0, help_text="Counted attempts (claims minus releases by an unhealthy worker)."
    )
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="Last time a hint was sent.")
    not_before = models.DateTimeField(
        null=True, blank=True, help_text="Backoff: not claimable before this (database time)."
    )
    retry_rounds = models.PositiveSmallIntegerField(
        default=0, help_text="Automatic re-queues after ending FAILED for an infrastructure fault."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(
        blank=True, help_text="Infrastructure errors (never the player's fault)."
    )

    class Meta:
        abstract = True

    if TYPE_CHECKING:  # each concrete kind declares its own ``state`` field (``state_field``)
        state: str
