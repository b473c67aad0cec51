"""Tournament editions (round robin beside the continuous ladder) and their standings."""

from __future__ import annotations

from django.db import models


class Tournament(models.Model):
    """Edition N of an environment's tournament: every eligible revision plays every other."""

    class State(models.TextChoices):
        PENDING = "PENDING", "pending"
        RUNNING = "RUNNING", "running"
        FINISHED = "FINISHED", "finished"
        CANCELLED = "CANCELLED", "cancelled"

    environment = models.ForeignKey("core.Environment", on_delete=models.PROTECT, related_name="tournaments")
    edition = models.PositiveIntegerField()
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    duels_total = models.PositiveIntegerField(default=0)
    duels_finished = models.PositiveIntegerField(default=0)
    duels_failed = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["environment", "edition"], name="core_tournament_unique_edition")
        ]
        ordering = ["environment_id", "-edition"]

    def __str__(self) -> str:
        return f"tournament {self.environment_id} #{self.edition}"


class TournamentParticipant(models.Model):
    """A revision's standing in one edition: 2 points a win, 1 a draw."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="participants")
    revision = models.ForeignKey("core.Revision", on_delete=models.PROTECT, related_name="tournament_entries")
    points = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    score = models.FloatField(default=0.0, help_text="Sum of match scores (tie-break).")
    rank = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tournament", "revision"], name="core_participant_unique")
        ]
        indexes = [models.Index(fields=["tournament", "-points"], name="core_participant_standings")]

    def __str__(self) -> str:
        return f"revision {self.revision_id} in tournament {self.tournament_id}"
