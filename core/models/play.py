"""Live play: a person against one revision's agent, one match, unrated.

::

    QUEUED ─claim (worker launched the agent)─► PLAYING ─game over / agent error / walked away─► FINISHED

The worker (``duel_runner.play_session``) owns the agent process; the web stores the human's moves. Both
write the same row through ``core.actions.play``, one move at a time, under a row lock, each only on its
own turn. ``states[i]`` is the state after ``actions[i]`` (the duel JSON's convention; in games with chance
``states`` starts with the seeded deal, as a duel's does), so a finished session replays like any match.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from core.models.jobs import FencedWork


class PlaySession(FencedWork):
    """One human-vs-agent match. Never rated; the human is ``user``, the agent ``revision``."""

    class Status(models.TextChoices):
        QUEUED = "QUEUED", "waiting for the agent"
        PLAYING = "PLAYING", "playing"
        FINISHED = "FINISHED", "finished"

    class Result(models.TextChoices):
        HUMAN_WIN = "HUMAN_WIN", "the human won"
        AGENT_WIN = "AGENT_WIN", "the agent won"
        DRAW = "DRAW", "draw"
        AGENT_ERROR = "AGENT_ERROR", "the agent failed (the human wins)"
        ABANDONED = "ABANDONED", "abandoned (no move in time)"
        FAILED = "FAILED", "could not run (our side)"

    task_name = "duel_runner.play_session"
    state_field = "status"
    queued_state = "QUEUED"
    running_state = "PLAYING"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions")
    environment = models.ForeignKey(
        "core.Environment", on_delete=models.PROTECT, related_name="play_sessions"
    )
    revision = models.ForeignKey("core.Revision", on_delete=models.PROTECT, related_name="play_sessions")
    human_seat = models.PositiveSmallIntegerField(default=0, help_text="0: the human moves first.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    result = models.CharField(max_length=12, choices=Result.choices, blank=True)
    error_kind = models.CharField(max_length=20, blank=True, help_text="TIMEOUT, CRASH, INVALID_ACTION, ...")
    error_msg = models.TextField(blank=True)
    state = models.JSONField(help_text="The current game state.")
    states = models.JSONField(default=list)
    actions = models.JSONField(default=list)
    move_times = models.JSONField(default=list, help_text="Seconds per move (the agent's, send → reply).")
    moves = models.PositiveIntegerField(default=0, help_text="Moves so far; bumps with every change.")
    agent_log = models.TextField(blank=True, help_text="The agent's stderr tail (owner of the agent only).")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    last_activity_at = models.DateTimeField(help_text="Last move or start: the inactivity clock.")

    #: Not stored: set by ``core.actions.play`` when it hands back the running game instead of a new one.
    resumed: bool = False

    class Meta:
        indexes = [
            models.Index(fields=["user", "-created_at"], name="core_play_user_recent"),
            models.Index(fields=["last_activity_at"], name="core_play_live", condition=~Q(status="FINISHED")),
        ]

    def __str__(self) -> str:
        return f"play session {self.pk} ({self.status})"

    @property
    def agent_seat(self) -> int:
        """The agent's seat (the other one)."""
        return 1 - self.human_seat
