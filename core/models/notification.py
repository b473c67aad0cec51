"""Messages to a user about their agents, shown on the site and (optionally) sent by e-mail."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class Notification(models.Model):
    """One event told to one user, at most once per (user, kind, object key).

    ``object_key`` names what the event is about (``revision:12``, ``competitor:3:pause:2``,
    ``tournament:7``), so a task that runs twice cannot notify twice. ``email_sent_at`` is set by the
    e-mail task when the mail has gone out; ``email_error`` keeps the last sending failure.
    """

    class Kind(models.TextChoices):
        REVISION_FAILED = "REVISION_FAILED", "revision failed"
        COMPETITOR_PAUSED = "COMPETITOR_PAUSED", "competitor paused"
        TOURNAMENT_FINISHED = "TOURNAMENT_FINISHED", "tournament finished"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    object_key = models.CharField(max_length=100)
    subject = models.CharField(max_length=200)
    body = models.TextField(blank=True)
    link = models.CharField(max_length=300, blank=True, help_text="Site path the notification points to.")
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    email_sent_at = models.DateTimeField(null=True, blank=True)
    email_error = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind", "object_key"], name="core_notification_once")
        ]
        indexes = [
            models.Index(fields=["user", "-created_at"], name="core_notification_inbox"),
            models.Index(fields=["user"], name="core_notification_unread", condition=Q(read_at__isnull=True)),
        ]
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.kind} for user {self.user_id}: {self.subject}"
