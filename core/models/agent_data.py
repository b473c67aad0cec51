"""An agent's persistent data folder: one per competitor, kept between its duels (``ARENA_DATA_DIR``).

The referee (``run_duel.agent_data``) fills the folder from ``archive`` before a duel and reads it back at
the end; ``core.actions.agent_data`` stores what it read, compare-and-set on ``generation``. Only the
competitor's owner and staff ever see it.
"""

from __future__ import annotations

from django.db import models


class StoredAgentData(models.Model):
    """The content of one competitor's data folder (named so to tell it from ``run_duel``'s ``AgentData``,
    the folder of one duel).

    ``generation`` is bumped by every save and every reset: a duel saves only if the generation it read
    before playing is still the stored one, so a reset by the owner, a wipe for a new revision or another
    duel's save made meanwhile wins over a duel that started earlier.
    """

    competitor = models.OneToOneField(
        "core.Competitor", on_delete=models.CASCADE, primary_key=True, related_name="agent_data"
    )
    archive = models.BinaryField(
        default=b"", help_text="The folder as an uncompressed POSIX tar (empty: none)."
    )
    size_bytes = models.PositiveBigIntegerField(default=0, help_text="Bytes of the files in the folder.")
    files = models.PositiveIntegerField(default=0, help_text="Regular files in the folder.")
    generation = models.PositiveBigIntegerField(default=0, help_text="Bumped by every save and every reset.")
    updated_at = models.DateTimeField(null=True, blank=True, help_text="Last save or reset; None: never.")
    updated_by_duel = models.ForeignKey(
        "core.Duel",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The duel whose end saved the current content (None: reset, or never saved).",
    )
    last_problem = models.TextField(blank=True, help_text="Why the last duel that could not save did not.")
    last_problem_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "agent data"
        verbose_name_plural = "agent data"

    def __str__(self) -> str:
        return f"data of competitor {self.competitor_id} (generation {self.generation})"
