"""Duels (N matches between two revisions) and their matches."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from core.match_moves import pack, unpack
from core.models.jobs import LeasedJob
from run_duel.api import DuelResult, MatchResult


class Duel(LeasedJob):
    """A scheduled series of matches between two revisions of one environment.

    ::

        QUEUED ─claim─► RUNNING ─record result─► FINISHED
          ▲                │
          └─lease expired / infrastructure error (attempts < MAX_ATTEMPTS)
                           └─ attempts exhausted ─► FAILED   (never charged to the players)
    """

    class State(models.TextChoices):
        QUEUED = "QUEUED", "queued"
        RUNNING = "RUNNING", "running"
        FINISHED = "FINISHED", "finished"
        FAILED = "FAILED", "failed"

    class Kind(models.TextChoices):
        LADDER = "LADDER", "ladder"
        TOURNAMENT = "TOURNAMENT", "tournament"
        CHALLENGE = "CHALLENGE", "challenge"
        FINALS = "FINALS", "season finals"

    # The functional API with (value, label) pairs, which the stubs do not declare.
    Result = models.TextChoices("Result", [(r.name, (r.value, r.label)) for r in DuelResult])  # type: ignore[call-overload]

    task_name = "duel_runner.run_duel"

    # No single-column index on environment, revision_1 or tournament: the composite indexes that start
    # with them (core_duel_env_recent, core_duel_pair, core_duel_tournament) serve every lookup by them,
    # the PROTECT/CASCADE checks of a deleted environment, revision or tournament included.
    environment = models.ForeignKey(
        "core.Environment", on_delete=models.PROTECT, related_name="duels", db_index=False
    )
    revision_1 = models.ForeignKey(
        "core.Revision", on_delete=models.PROTECT, related_name="duels_as_player_1", db_index=False
    )
    # Keeps its own index: no index but the partial core_duel_ladder_p2_day starts with revision_2.
    revision_2 = models.ForeignKey(
        "core.Revision", on_delete=models.PROTECT, related_name="duels_as_player_2"
    )
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.LADDER)
    tournament = models.ForeignKey(
        "core.Tournament",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="duels",
        db_index=False,
    )
    priority = models.SmallIntegerField(default=0, help_text="Higher runs first when re-queued.")
    num_matches = models.PositiveIntegerField(null=True, blank=True, help_text="None: the game's default.")
    # Result summary (the duel JSON's top-level fields).
    result = models.CharField(max_length=14, choices=Result.choices, blank=True)
    error_msg = models.TextField(blank=True)
    player_1_wins = models.PositiveIntegerField(default=0)
    player_2_wins = models.PositiveIntegerField(default=0)
    draws = models.PositiveIntegerField(default=0)
    player_1_errors = models.PositiveIntegerField(default=0)
    player_2_errors = models.PositiveIntegerField(default=0)
    other_errors = models.PositiveIntegerField(default=0)
    player_1_score = models.FloatField(null=True, blank=True)
    player_2_score = models.FloatField(null=True, blank=True)
    player_1_log = models.TextField(blank=True)
    player_2_log = models.TextField(blank=True)
    rated = models.BooleanField(default=False, help_text="Ratings have consumed this result.")
    rated_at = models.DateTimeField(null=True, blank=True)
    # Duels that stop when decided (run_duel.stopping; the duel JSON's fields of the same names).
    stop_rule = models.JSONField(
        null=True, blank=True, help_text="The sequential rule it could stop by; None: it plays every match."
    )
    planned_matches = models.PositiveIntegerField(
        null=True, blank=True, help_text="Matches it would have played without stopping (None: no stop rule)."
    )
    stopped_early = models.JSONField(
        null=True,
        blank=True,
        help_text="Where and why the rule ended it (after_matches, leader, evidence, reason); None: not.",
    )

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~Q(revision_1=models.F("revision_2")) | Q(kind="CHALLENGE"),
                name="core_duel_distinct_players",
            )
        ]
        indexes = [
            models.Index(
                fields=["-priority", "enqueued_at"], name="core_duel_queued", condition=Q(state="QUEUED")
            ),
            models.Index(fields=["lease_expires_at"], name="core_duel_running", condition=Q(state="RUNNING")),
            models.Index(
                fields=["environment", "finished_at"],
                name="core_duel_to_rate",
                condition=Q(state="FINISHED", rated=False),
            ),
            models.Index(fields=["environment", "-finished_at"], name="core_duel_env_recent"),
            models.Index(fields=["revision_1", "revision_2"], name="core_duel_pair"),
            # Tournament duels only: a ladder duel (tournament NULL) is never looked up by tournament.
            models.Index(
                fields=["tournament", "state"],
                name="core_duel_tournament",
                condition=Q(tournament__isnull=False),
            ),
            # A player's ladder duels of the last 24 hours (the daily budget), for the few competitors a
            # matchmaking round plans with: their duels of the day, never the ladder's whole day.
            models.Index(
                fields=["revision_1", "finished_at"],
                name="core_duel_ladder_p1_day",
                condition=Q(kind="LADDER", finished_at__isnull=False),
            ),
            models.Index(
                fields=["revision_2", "finished_at"],
                name="core_duel_ladder_p2_day",
                condition=Q(kind="LADDER", finished_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"duel {self.pk} ({self.state})"


class Match(models.Model):
    """One game of a duel, with its replay: the states the rules cannot give back (``states``,
    ``core/match_states.py``), and the actions and move times packed in ``packed_moves``
    (``core/match_moves.py``), read and written as the lists ``actions`` and ``move_times``.

    ``Match(actions=..., move_times=...)`` and ``Match.objects.create(...)`` take the lists; queries name
    ``packed_moves`` (``EMPTY``, ``b""``, when there are neither). The lists handed out are decoded once per
    value of ``packed_moves``: assign a new list to change them, never mutate one in place."""

    Result = models.TextChoices("Result", [(r.name, (r.value, r.label)) for r in MatchResult])  # type: ignore[call-overload]

    class FirstPlayer(models.TextChoices):
        PLAYER_1 = "PLAYER_1", "player 1"
        PLAYER_2 = "PLAYER_2", "player 2"

    # No index of its own: the unique (duel, index) index serves every lookup by duel.
    duel = models.ForeignKey(Duel, on_delete=models.CASCADE, related_name="matches", db_index=False)
    index = models.PositiveIntegerField()
    result = models.CharField(max_length=14, choices=Result.choices)
    error_kind = models.CharField(
        max_length=20,
        blank=True,
        help_text="run_duel.outcomes.ErrorKind: TIMEOUT, CRASH, ...",
    )
    error_msg = models.TextField(blank=True)
    first_player = models.CharField(max_length=8, choices=FirstPlayer.choices)
    player_1_score = models.FloatField(default=0.0)
    player_2_score = models.FloatField(default=0.0)
    states = models.JSONField(default=list)
    packed_moves = models.BinaryField(
        default=b"", help_text="The actions and move times, core.match_moves.pack (b'': neither)."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["duel", "index"], name="core_match_unique_index")]
        ordering = ["duel_id", "index"]

    def __str__(self) -> str:
        return f"match {self.index} of duel {self.duel_id}"

    def _unpacked(self) -> tuple[list, list]:
        data = self.packed_moves
        cached = self.__dict__.get("_moves_cache")
        if cached is None or cached[0] is not data:
            cached = self.__dict__["_moves_cache"] = (data, unpack(data))
        return cached[1]

    @property
    def actions(self) -> list:
        """The actions, in play order (``core.match_moves``)."""
        return self._unpacked()[0]

    @actions.setter
    def actions(self, value: list | None) -> None:
        self.packed_moves = pack(value, self.move_times)

    @property
    def move_times(self) -> list:
        """Seconds each action took (send to reply), one per action."""
        return self._unpacked()[1]

    @move_times.setter
    def move_times(self, value: list | None) -> None:
        self.packed_moves = pack(self.actions, value)
