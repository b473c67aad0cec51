"""TrueSkill ratings per (environment, competitor) and their history. Written by ``tournament_manager``."""

from __future__ import annotations

from django.db import models

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3


class Rating(models.Model):
    """A competitor's current skill estimate. ``skill`` = mu - 3 sigma ranks the leaderboard."""

    environment = models.ForeignKey("core.Environment", on_delete=models.CASCADE, related_name="ratings")
    competitor = models.ForeignKey("core.Competitor", on_delete=models.CASCADE, related_name="ratings")
    mu = models.FloatField(default=DEFAULT_MU)
    sigma = models.FloatField(default=DEFAULT_SIGMA)
    skill = models.FloatField(default=DEFAULT_MU - 3 * DEFAULT_SIGMA, help_text="mu - 3 sigma")
    matches = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    losses = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    duels = models.PositiveIntegerField(default=0)
    last_played_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["environment", "competitor"], name="core_rating_unique_competitor"
            )
        ]
        indexes = [
            models.Index(fields=["environment", "-skill"], name="core_rating_leaderboard"),
            # The ratings version public pages are cached under (web/page_cache.py): MAX(updated_at) of a
            # game in one index lookup, whatever the number of competitors.
            models.Index(fields=["environment", "updated_at"], name="core_rating_version"),
        ]

    def __str__(self) -> str:
        return f"rating of competitor {self.competitor_id}: {self.mu:.2f}±{self.sigma:.2f}"

    def set_skill(self, mu: float, sigma: float) -> None:
        """Set ``mu``, ``sigma`` and the derived ``skill`` together (the caller saves)."""
        self.mu = mu
        self.sigma = sigma
        self.skill = mu - 3 * sigma


class RatingHistory(models.Model):
    """A rating after one duel was applied; at most one entry per (rating, duel)."""

    # No single-column FK indexes: core_ratinghistory_timeline starts with rating, and
    # core_ratinghistory_once_per_duel with duel (the SET NULL of a deleted duel uses it).
    rating = models.ForeignKey(Rating, on_delete=models.CASCADE, related_name="history", db_index=False)
    duel = models.ForeignKey(
        "core.Duel", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    mu = models.FloatField()
    sigma = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["duel", "rating"], name="core_ratinghistory_once_per_duel")
        ]
        indexes = [models.Index(fields=["rating", "created_at"], name="core_ratinghistory_timeline")]

    def __str__(self) -> str:
        return f"rating {self.rating_id} after duel {self.duel_id}"
