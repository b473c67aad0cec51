"""Match results between two competitors, kept up to date as duel results are recorded.

One row per unordered pair of competitors (``low`` is the smaller id) and per kind of duel: ``rated``
rows count ladder and tournament duels (the Bradley-Terry tie fit's input), the others challenges. The
record path (``core.actions.pair_records.count_duel_result``, called by ``record_duel_result``) adds each
finished duel's match counts in the same transaction, so readers (the tie fit, a competitor's head to
head) read one row per pair instead of aggregating every match. ``manage.py rebuild_pair_records``
recomputes them from the duels (the migration that created the table did it once).
"""

from __future__ import annotations

from django.db import models


class PairRecord(models.Model):
    """Finished duels and their match results between competitors ``low`` and ``high`` (low < high)."""

    environment = models.ForeignKey("core.Environment", on_delete=models.CASCADE, related_name="+")
    low = models.ForeignKey("core.Competitor", on_delete=models.CASCADE, related_name="+")
    high = models.ForeignKey("core.Competitor", on_delete=models.CASCADE, related_name="+")
    rated = models.BooleanField(help_text="ladder and tournament duels (True) or challenges (False)")
    duels = models.PositiveIntegerField(default=0)
    #: Matches won on the board by each side, drawn, and lost by each side's own error (OTHER_ERROR: none).
    low_wins = models.PositiveIntegerField(default=0)
    high_wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    low_errors = models.PositiveIntegerField(default=0)
    high_errors = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["low", "high", "rated"], name="core_pairrecord_unique_pair"),
            models.CheckConstraint(
                condition=models.Q(low__lt=models.F("high")), name="core_pairrecord_ordered"
            ),
        ]
        indexes = [models.Index(fields=["environment", "rated"], name="core_pairrecord_environment")]

    def __str__(self) -> str:
        return (
            f"pair {self.low_id}-{self.high_id} ({'rated' if self.rated else 'unrated'}): {self.duels} duels"
        )
