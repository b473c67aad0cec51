"""The shape shared by every queued, leased job (build, smoke test, duel).

A job is QUEUED, then claimed by exactly one worker with a conditional UPDATE that moves it to RUNNING
and sets ``lease_expires_at``; the worker extends the lease while it works. A RUNNING job whose lease
expired belongs to nobody: the reaper re-queues it (or fails it after ``MAX_ATTEMPTS``).
"""

from __future__ import annotations

from django.db import models


class JobState(models.TextChoices):
    """States of a leased job (``Duel`` uses ``FINISHED`` instead of ``SUCCEEDED``)."""

    QUEUED = "QUEUED", "queued"
    RUNNING = "RUNNING", "running"
    SUCCEEDED = "SUCCEEDED", "succeeded"
    FAILED = "FAILED", "failed"


class LeasedJob(models.Model):
    """Abstract base: state, lease and attempt bookkeeping. Subclasses define ``state`` choices."""

    attempts = models.PositiveIntegerField(default=0, help_text="Claims so far (1 = first run).")
    worker = models.CharField(max_length=200, blank=True, help_text="host:pid of the last claimer.")
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    enqueued_at = models.DateTimeField(null=True, blank=True, help_text="Last time a hint was sent.")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    failure_reason = models.TextField(
        blank=True, help_text="Infrastructure errors (never the player's fault)."
    )

    class Meta:
        abstract = True

    #: Celery task name that runs this kind of job (set by subclasses).
    task_name: str = ""
