"""Seasons: a dated period of one game's ladder, closed by finals among its top competitors.

::

    OPEN ──ends_at passed──► FINALS (submissions frozen; rounds with cuts) ──last round done──► FINISHED
      └──────────── fewer than two playable competitors at the end ──────────────────────────► FINISHED

A finished season is an archive: its finalists (the revision that played, the ladder seed, the finals
rating, the round in which each was cut, the final rank) are kept forever.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import F, Q


def default_finalists() -> int:
    """The operator's finalists count (``SEASON_FINALISTS``) when the season is created."""
    return int(getattr(settings, "SEASON_FINALISTS", 8))


class Season(models.Model):
    """A dated period of an environment's ladder, ended by finals among its top ``finalists``."""

    class State(models.TextChoices):
        OPEN = "OPEN", "open"
        FINALS = "FINALS", "finals"
        FINISHED = "FINISHED", "finished"

    environment = models.ForeignKey("core.Environment", on_delete=models.PROTECT, related_name="seasons")
    name = models.CharField(max_length=100)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField(help_text="Submissions freeze here and the finals begin.")
    finalists = models.PositiveIntegerField(
        default=default_finalists, help_text="How many of the ladder's top competitors play the finals."
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    finals_round = models.PositiveIntegerField(
        default=0, help_text="The finals round being played (1, 2...)."
    )
    finals_started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="core_season_dates"),
        ]
        indexes = [models.Index(fields=["environment", "-starts_at"], name="core_season_env_start")]
        ordering = ["environment_id", "-starts_at"]

    def __str__(self) -> str:
        return f"season {self.name} ({self.environment_id})"

    def clean(self) -> None:
        """Seasons of one game never overlap (checked in forms and the admin)."""
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError("A season ends after it starts.")
        if self.environment_id and self.starts_at and self.ends_at:
            overlapping = Season.objects.filter(
                environment_id=self.environment_id, starts_at__lt=self.ends_at, ends_at__gt=self.starts_at
            ).exclude(pk=self.pk)
            if overlapping.exists():
                raise ValidationError("Another season of this game overlaps these dates.")
        if self.finalists is not None and self.finalists < 2:
            raise ValidationError("Finals need at least two finalists.")


class SeasonFinalist(models.Model):
    """One competitor in a season's finals, with the revision that was current when the season ended."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="finalist_rows")
    competitor = models.ForeignKey("core.Competitor", on_delete=models.PROTECT, related_name="season_results")
    revision = models.ForeignKey("core.Revision", on_delete=models.PROTECT, related_name="season_entries")
    seed = models.PositiveIntegerField(help_text="Place on the ladder when the season ended (1 = top).")
    ladder_mu = models.FloatField()
    ladder_sigma = models.FloatField()
    mu = models.FloatField(help_text="Finals rating: seeded from the ladder, moved by finals matches.")
    sigma = models.FloatField()
    matches = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    cut_after_round = models.PositiveIntegerField(
        null=True, blank=True, help_text="The round after which it was cut; None: it played the last round."
    )
    final_rank = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["season", "competitor"], name="core_finalist_unique"),
            models.UniqueConstraint(fields=["season", "seed"], name="core_finalist_unique_seed"),
        ]
        ordering = ["season_id", "final_rank", "seed"]

    def __str__(self) -> str:
        return f"finalist {self.competitor_id} of season {self.season_id}"

    @property
    def conservative(self) -> float:
        """``mu - 3 sigma``, the finals' ranking key (as the ladder's)."""
        return self.mu - 3.0 * self.sigma


class SeasonFinalsDuel(models.Model):
    """A finals duel and the round it belongs to."""

    season = models.ForeignKey(Season, on_delete=models.CASCADE, related_name="finals_duels")
    round = models.PositiveIntegerField()
    duel = models.OneToOneField("core.Duel", on_delete=models.CASCADE, related_name="season_finals")

    class Meta:
        indexes = [models.Index(fields=["season", "round"], name="core_finals_duel_round")]

    def __str__(self) -> str:
        return f"duel {self.duel_id} in round {self.round} of season {self.season_id}"
