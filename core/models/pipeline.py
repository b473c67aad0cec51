"""Jobs that turn an uploaded revision into an eligible one: its build and its smoke test."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.models.jobs import JobState, LeasedJob


class Build(LeasedJob):
    """Building a revision into an agent (Docker image, or a folder for the local sandbox).

    A revision may have several builds (operator re-queues); at most one is QUEUED or RUNNING.
    """

    State = JobState
    task_name = "builder.build_revision"

    revision = models.ForeignKey("core.Revision", on_delete=models.CASCADE, related_name="builds")
    state = models.CharField(max_length=10, choices=JobState.choices, default=JobState.QUEUED)
    agent_ref = models.CharField(max_length=500, blank=True)
    log = models.TextField(blank=True, help_text="Build output, capped (the tail is kept).")
    error = models.TextField(blank=True, help_text="Why the build failed, for the owner.")
    duration_s = models.FloatField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["revision"],
                condition=Q(state__in=["QUEUED", "RUNNING"]),
                name="core_build_one_active_per_revision",
            )
        ]
        indexes = [
            models.Index(fields=["enqueued_at"], name="core_build_queued", condition=Q(state="QUEUED")),
            models.Index(
                fields=["lease_expires_at"], name="core_build_running", condition=Q(state="RUNNING")
            ),
        ]

    def __str__(self) -> str:
        return f"build {self.pk} of revision {self.revision_id} ({self.state})"


class SmokeTest(LeasedJob):
    """Self-play of a freshly built revision: it must finish its matches without a rule violation."""

    State = JobState
    task_name = "duel_runner.smoke_test_revision"

    revision = models.ForeignKey("core.Revision", on_delete=models.CASCADE, related_name="smoke_tests")
    state = models.CharField(max_length=10, choices=JobState.choices, default=JobState.QUEUED)
    passed = models.BooleanField(null=True, blank=True)
    reason = models.TextField(blank=True, help_text="Why it failed, for the owner.")
    duel_json = models.JSONField(null=True, blank=True)
    log = models.TextField(blank=True, help_text="The agent's stderr (capped).")

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["revision"],
                condition=Q(state__in=["QUEUED", "RUNNING"]),
                name="core_smoke_one_active_per_revision",
            )
        ]
        indexes = [
            models.Index(fields=["enqueued_at"], name="core_smoke_queued", condition=Q(state="QUEUED")),
            models.Index(
                fields=["lease_expires_at"], name="core_smoke_running", condition=Q(state="RUNNING")
            ),
        ]

    def __str__(self) -> str:
        return f"smoke test {self.pk} of revision {self.revision_id} ({self.state})"
