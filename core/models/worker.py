"""Workers as the database sees them: alive, healthy or not, and why."""

from __future__ import annotations

from django.db import models


class WorkerStatus(models.Model):
    """One Celery worker node. Written by the worker's health monitor (``core.worker``) every
    ``WORKER_HEALTH_INTERVAL_SECONDS``; read by ``queue_status``, the admin and the autoscaler.

    An unhealthy worker (its Docker engine or registry does not answer) has stopped consuming its queues
    and takes no job until its probe passes again; ``problem`` says why.
    """

    name = models.CharField(max_length=200, unique=True, help_text="Celery node name (name@host).")
    host = models.CharField(max_length=200, blank=True)
    sandbox = models.CharField(max_length=20, blank=True)
    queues = models.CharField(max_length=500, blank=True, help_text="Queues it consumes when healthy.")
    healthy = models.BooleanField(default=True)
    problem = models.TextField(blank=True, help_text="Why it is unhealthy (empty when healthy).")
    last_seen = models.DateTimeField(help_text="Last report (database time).")
    changed_at = models.DateTimeField(help_text="When ``healthy`` last changed (database time).")
    stopped = models.BooleanField(default=False, help_text="The worker shut down cleanly.")
    slots = models.PositiveIntegerField(default=0, help_text="Jobs it runs at once (its pool processes).")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "worker statuses"

    def __str__(self) -> str:
        return f"{self.name} ({'healthy' if self.healthy else 'unhealthy: ' + self.problem})"


class ReaperState(models.Model):
    """The reaper's memory across rounds (one row). A round that finds the previous successful round far
    in the past (the database or the beat was unreachable) waits one lease before re-queueing expired
    leases, so workers cut off from the database meanwhile can resume their jobs and record their results
    first."""

    last_round_at = models.DateTimeField(null=True, blank=True, help_text="Database time.")
    leases_paused_until = models.DateTimeField(null=True, blank=True, help_text="Database time.")

    def __str__(self) -> str:
        return f"reaper (last round {self.last_round_at})"
